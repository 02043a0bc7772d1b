"""metabo: a meta-learning knowledge base and warm-start service for HPO.

The public entry points, imported lazily so that ``import metabo`` stays cheap:

- :class:`KnowledgeBase` (``metabo.kb``): the DuckDB store.
- :class:`Dataset` and :func:`load_dataset` (``metabo.data``): datasets from
  scikit-learn, KEEL, files and OpenML.
- :func:`compute_meta_features` (``metabo.data.meta_features``).
- :func:`ingest_dataset`, :func:`ingest_openml` (``metabo.ingest``).
- :func:`tune`, :func:`tune_ensemble` (``metabo.tuning``).
"""

from __future__ import annotations

from metabo._lazy import lazy_getattr

__version__ = "0.1.0"

_EXPORTS = {
    "KnowledgeBase": "metabo.kb.store",
    "Dataset": "metabo.data.dataset",
    "load_dataset": "metabo.data.loaders",
    "compute_meta_features": "metabo.data.meta_features",
    "ingest_dataset": "metabo.ingest.datasets",
    "ingest_openml": "metabo.ingest.openml",
    "tune": "metabo.tuning.tune",
    "tune_ensemble": "metabo.tuning.ensemble",
}

__all__ = ["__version__", *_EXPORTS]


__getattr__ = lazy_getattr(__name__, _EXPORTS)
