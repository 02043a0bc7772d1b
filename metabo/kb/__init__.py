"""The knowledge base: a DuckDB store of datasets, meta-features, configurations and runs."""

from metabo.kb.store import KnowledgeBase

__all__ = ["KnowledgeBase"]
