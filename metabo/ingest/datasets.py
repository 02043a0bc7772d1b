"""Put datasets into the knowledge base with their meta-features."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from metabo.data.dataset import Dataset
from metabo.exceptions import MetaboError
from metabo.kb.store import KnowledgeBase

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DatasetIngestReport:
    """What :func:`ingest_datasets` did: stored ids, skipped (already there) and failed specs."""

    stored: tuple[str, ...]
    skipped: tuple[str, ...]
    failed: tuple[tuple[str, str], ...]


def has_own_meta_features(kb: KnowledgeBase, dataset: Dataset) -> bool:
    """Whether the same content (fingerprint) is stored with meta-features metabo computed."""
    return bool(kb.connection.execute(
        "SELECT count(*) FROM meta_features m JOIN datasets d USING (dataset_id) "
        "WHERE d.fingerprint = ? AND m.source = 'metabo'", [dataset.fingerprint],
    ).fetchone()[0])


def ingest_dataset(kb: KnowledgeBase, dataset: Dataset, *, seed: int = 0, landmarkers: bool = True) -> str:
    """Compute the meta-features of ``dataset`` and store both; return the dataset id.

    A flagged dataset (e.g. KEEL columns that lost their decimal points) is stored with
    its flags, and its meta-features leave the flagged columns out of every
    value-dependent quantity (``compute_meta_features(..., flagged="exclude")``).
    """
    from metabo.data.meta_features import compute_meta_features

    values = compute_meta_features(dataset, seed=seed, landmarkers=landmarkers, flagged="exclude")
    return kb.add_dataset(dataset, values)


def ingest_datasets(
    kb: KnowledgeBase,
    specs: Iterable[str],
    *,
    seed: int = 0,
    landmarkers: bool = True,
    load: Callable[[str], Dataset] | None = None,
    progress: Callable[[str], None] | None = None,
) -> DatasetIngestReport:
    """Load each spec (see :func:`metabo.data.loaders.load_dataset`) and store it.

    Resumable: a spec whose dataset already has meta-features computed by metabo is
    skipped. A spec that fails to load is reported, not fatal; each dataset is stored
    in its own transaction.
    """
    if load is None:
        from metabo.data.loaders import load_dataset as load
    stored, skipped, failed = [], [], []
    for spec in specs:
        try:
            dataset = load(spec)
            if has_own_meta_features(kb, dataset):
                skipped.append(spec)
            else:
                stored.append(ingest_dataset(kb, dataset, seed=seed, landmarkers=landmarkers))
        except MetaboError as e:
            logger.warning("could not ingest %s: %s", spec, e)
            failed.append((spec, str(e)))
        if progress is not None:
            progress(spec)
    return DatasetIngestReport(tuple(stored), tuple(skipped), tuple(failed))
