"""The knowledge base: a DuckDB store of datasets, meta-features, configurations and runs.

:class:`KnowledgeBase` loads :mod:`metabo.kb.store` (and DuckDB) on first use (PEP 562), so
that the light modules of this package (``canonical``, ``predictions``) import without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from metabo.kb.store import KnowledgeBase

__all__ = ["KnowledgeBase"]


def __getattr__(name: str) -> Any:
    if name == "KnowledgeBase":
        from metabo.kb.store import KnowledgeBase

        globals()[name] = KnowledgeBase
        return KnowledgeBase
    raise AttributeError(f"module 'metabo.kb' has no attribute {name!r}")
