"""Integrations with the libraries people already use: scikit-learn (MetaSearchCV), Optuna (WarmStartSampler)."""
