"""Put datasets into the knowledge base with their meta-features."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from metabo.data.dataset import Dataset
from metabo.exceptions import MetaboError
from metabo.kb.datasets import content_has_meta_features
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
    return content_has_meta_features(kb, dataset.fingerprint, source="metabo")


def ingest_dataset(kb: KnowledgeBase, dataset: Dataset, *, seed: int = 0, landmarkers: bool = True,
                   time_limit: float | None = None) -> str:
    """Compute the meta-features of ``dataset`` and store both; return the dataset id.

    A flagged dataset (e.g. KEEL columns that lost their decimal points) is stored with
    its flags, and its meta-features leave the flagged columns out of every
    value-dependent quantity (``compute_meta_features(..., flagged="exclude")``).

    ``time_limit``: seconds the meta-features may take, computed in a forked worker
    (:func:`~metabo.evaluation.runner.run_with_limits`, so that an interrupt stops them
    at once); past it, or when it is not positive, the dataset is stored without them
    (logged).
    """
    from metabo.data.meta_features import compute_meta_features

    compute = functools.partial(compute_meta_features, seed=seed, landmarkers=landmarkers, flagged="exclude")
    if time_limit is None:
        return kb.add_dataset(dataset, compute(dataset))
    from metabo.evaluation.runner import Ok, run_with_limits

    outcome = run_with_limits(compute, dataset, time_limit=time_limit) if time_limit > 0 else None
    if isinstance(outcome, Ok):
        return kb.add_dataset(dataset, outcome.value)
    if outcome is not None and outcome.status not in ("timeout", "memout"):
        raise MetaboError(f"the meta-features of {dataset.name!r} failed: {outcome.message}")
    logger.warning("the meta-features of %s (%d x %d) were not computed within %.1f s: stored without them "
                   "(no warm start from its neighbours)", dataset.name, dataset.n_instances, dataset.n_features,
                   max(time_limit, 0.0))
    return kb.add_dataset(dataset)


#: seconds the meta-features of a table of n x d cells may take when no time budget
#: bounds them: META_SECONDS + META_SECONDS_PER_CELL n d
META_SECONDS = 60.0
META_SECONDS_PER_CELL = 1e-4


def meta_features_limit(dataset: Dataset, left: float | None = None, share: float = 0.25) -> float:
    """Seconds :func:`ingest_dataset` gives the meta-features of ``dataset``: ``share`` of
    the ``left`` seconds of a time budget, else the size-based default above."""
    if left is not None:
        return share * left
    return META_SECONDS + META_SECONDS_PER_CELL * dataset.n_instances * max(dataset.n_features, 1)


def ingest_datasets(
    kb: KnowledgeBase,
    specs: Iterable[str],
    *,
    seed: int = 0,
    landmarkers: bool = True,
    load: Callable[[str], Dataset] | None = None,
    progress: Callable[[str], object] | None = None,
) -> DatasetIngestReport:
    """Load each spec (see :func:`metabo.data.loaders.load_dataset`) and store it.

    Resumable: a spec whose dataset already has meta-features computed by metabo is
    skipped. A spec that fails to load is reported, not fatal; each dataset is stored
    in its own transaction.
    """
    if load is None:
        from metabo.data.loaders import load_dataset

        load = load_dataset
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
