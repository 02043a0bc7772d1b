"""Integrations with other libraries, one module each, imported on demand.

- :mod:`metabo.integrations.sklearn`: :class:`~metabo.integrations.sklearn.MetaSearchCV`,
  a scikit-learn search estimator warm-started from a knowledge base.
- :mod:`metabo.integrations.optuna`: an Optuna sampler.

Nothing is imported here, so that importing one integration never imports another's
dependencies.
"""
