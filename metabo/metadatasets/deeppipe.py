"""The PMF and Tensor-OBOE meta-datasets, as shipped in the ``deeppipe-api`` wheel.

``deeppipe-api==0.1.1`` (BSD; Arango et al., *Deep Pipeline Embeddings for AutoML*, KDD
2023) ships in ``deeppipe_api/experiments/data/`` two OpenML meta-datasets as JSON
objects with the keys ``pipelines`` (one encoded vector per pipeline), ``error`` (a
datasets x pipelines matrix, ``NaN`` where a pipeline was not run; DeepPipe reads
``1 - error`` as the performance), ``list_for_selector`` (per pipeline, the index of
the algorithm chosen at each stage), ``algorithm_domain`` (the start of each
algorithm's block in the vector, stage by stage as ``list_for_concatenator`` groups
them) and ``tasks_index`` (DeepPipe's splits):

- **PMF** (Fusi, Sheth, Elibol, *Probabilistic matrix factorization for automated
  machine learning*, NeurIPS 2018; the meta-dataset the RLGP seed evaluates on):
  553 OpenML datasets (``original_dataset_id``) x 38,151 auto-sklearn pipelines, 79%
  observed. Fusi et al. record balanced accuracy; the file's ``error`` is one minus it,
  stored here as metric ``balanced_error_rate``. The pipelines are encoded vectors of
  two stages (2 preprocessor blocks, 8 estimator blocks; the names of the blocks are
  not in the file). Outside the two blocks a pipeline selects, every entry is the same
  constant for all pipelines of that selection (checked by :meth:`PMF.check`), so a
  pipeline is exactly ``(preprocessor block, its values, estimator block, its
  values)``: algorithm ``pmf:estimator-<b>``, params ``{"preprocessor": a,
  "x_preprocessor": [...], "x_estimator": [...]}``. Deviation: PMF's estimators are
  11 named scikit-learn classifiers, but the file groups them into 8 unnamed blocks,
  which is all that can be decoded.
- **Tensor-OBOE** (Yang, Fan, Wu, Udell, *AutoML pipeline selection: efficiently
  navigating the combinatorial space*, KDD 2020): 551 datasets x 23,424 scikit-learn
  pipelines, 91% observed, balanced error rate (OBOE's metric). The pipelines are the
  full enumeration of ``classification.json`` in DeepPipe's order: the Cartesian
  product over the steps imputer, encoder, standardizer, dimensionality reducer,
  estimator, each step's options being its algorithms in order (``null`` = no step),
  each expanded into the product of its hyperparameter values in order
  (:func:`enumerate_pipelines`). :meth:`TensorOBOE.check` verifies that decoding
  against the encoded vectors and selectors of the whole file. Each pipeline is stored
  as the point of the project's pipeline spaces that builds it
  (:func:`tensor_oboe_to_project`, :mod:`metabo.space.algorithms.pipelines`):
  ``pipeline_<algorithm>`` with the estimator's params and the four steps. The file
  gives no OpenML id for these datasets, so they are stored as ``tensor-oboe-<row>``
  and join no other source (a limit of the published file).
"""

from __future__ import annotations

import itertools
import json
import logging
import math
from collections.abc import Iterator, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from metabo.data.pypi_fetch import PyPIArtifact
from metabo.exceptions import InputDataError, InvalidConfigurationError, UnknownAlgorithmError
from metabo.metadatasets.base import AlgorithmInfo, MetaDataset, RunChunk, repeat_indices
from metabo.metadatasets.json_stream import JsonObjectFile

logger = logging.getLogger(__name__)

DEEPPIPE_ARTIFACT = PyPIArtifact(
    project="deeppipe-api",
    version="0.1.1",
    filename="deeppipe_api-0.1.1-py3-none-any.whl",
    sha256="89e5d9d7d538d8a891dcdd5b10350deb42b4584ff0db5965428010377ef64c52",
    members=r"deeppipe_api/experiments/data/(pmf_meta_dataset|tensor_oboe_meta_dataset|classification)\.json"
    r"|deeppipe_api-0\.1\.1\.dist-info/licenses/LICENSE",
)
DATA_DIR = Path("deeppipe_api") / "experiments" / "data"
#: Error-matrix rows (datasets) per chunk: ~600k cells of PMF, ~370k of Tensor-OBOE.
ROWS_PER_CHUNK = 16


class _DeepPipeMetaDataset(MetaDataset):
    artifact: ClassVar[PyPIArtifact] = DEEPPIPE_ARTIFACT
    metric: ClassVar[str] = "balanced_error_rate"
    filename: ClassVar[str]

    def __init__(self, root: str | Path, *, rows_per_chunk: int = ROWS_PER_CHUNK) -> None:
        super().__init__(root)
        if rows_per_chunk < 1:
            raise InputDataError("rows_per_chunk must be >= 1")
        self.rows_per_chunk = rows_per_chunk

    @property
    def path(self) -> Path:
        return self.root / DATA_DIR / self.filename

    @cached_property
    def file(self) -> JsonObjectFile:
        if not self.path.is_file():
            raise InputDataError(f"{self.path} is missing; fetch the {self.name} meta-dataset first")
        return JsonObjectFile(self.path)

    @cached_property
    def n_datasets(self) -> int:
        return self.file.count_rows("error")

    @cached_property
    def selectors(self) -> np.ndarray:
        sel = np.asarray(self.file.load("list_for_selector"), dtype=np.int64)
        if sel.ndim != 2:
            raise InputDataError(f"{self.path}: list_for_selector is not a matrix")
        return sel

    @cached_property
    def vectors(self) -> np.ndarray:
        """The pipelines x encoding matrix (small: 38,151 x 72 at most)."""
        rows = [row for _, row in self.file.iter_rows("pipelines")]
        if not rows or len({len(r) for r in rows}) != 1:
            raise InputDataError(f"{self.path}: pipelines are not vectors of one length")
        return np.vstack(rows)

    @cached_property
    def domain(self) -> list[int]:
        return [int(v) for v in self.file.load("algorithm_domain")]

    @property
    def chunking(self) -> str:
        return f"rows={self.rows_per_chunk}"

    def n_chunks(self) -> int:
        return math.ceil(self.n_datasets / self.rows_per_chunk)

    def _dataset_original_ids(self) -> list[str]:
        raise NotImplementedError

    def run_chunks(self, start: int = 0) -> Iterator[RunChunk]:
        """Chunk ``k`` holds the observed cells of error-matrix rows ``[k R, (k+1) R)``."""
        ids = self._dataset_original_ids()
        n_pipes = len(self.selectors)
        cols = np.arange(n_pipes).astype(str)
        rows: list[pd.DataFrame] = []
        chunk = start
        for i, row in self.file.iter_rows("error", start * self.rows_per_chunk):
            if len(row) != n_pipes:
                raise InputDataError(f"{self.path}: error row {i} has {len(row)} values, expected {n_pipes}")
            seen = np.isfinite(row)
            if (row[seen] < 0).any() or (row[seen] > 1).any():
                raise InputDataError(f"{self.path}: error row {i} has values outside [0, 1]")
            rows.append(pd.DataFrame({"dataset": ids[i], "configuration": cols[seen], "value": row[seen]}))
            if len(rows) == self.rows_per_chunk:
                yield RunChunk(chunk, pd.concat(rows, ignore_index=True))
                rows, chunk = [], chunk + 1
        if rows:
            yield RunChunk(chunk, pd.concat(rows, ignore_index=True))


class PMF(_DeepPipeMetaDataset):
    """The PMF meta-dataset (Fusi et al. 2018): 553 OpenML datasets x 38,151 pipelines."""

    name: ClassVar[str] = "pmf"
    filename: ClassVar[str] = "pmf_meta_dataset.json"
    summary: ClassVar[str] = "PMF (Fusi et al. 2018): 553 OpenML datasets x 38,151 auto-sklearn pipelines"

    @cached_property
    def openml_ids(self) -> list[int]:
        """The OpenML id of each dataset, in the matrix's order; InputDataError if not integers,
        or repeated, or not one per dataset."""
        raw = self.file.load("original_dataset_id")
        try:
            ids = [int(v) for v in raw]
        except (TypeError, ValueError) as e:
            raise InputDataError(f"{self.path}: original_dataset_id holds a non-integer: {e}") from e
        if len(ids) != self.n_datasets or len(set(ids)) != len(ids):
            raise InputDataError(f"{self.path}: original_dataset_id does not give one distinct id per row")
        return ids

    def _dataset_original_ids(self) -> list[str]:
        return [str(i) for i in self.openml_ids]

    def datasets(self) -> pd.DataFrame:
        """One row per dataset (named ``openml-<id>``), columns
        :data:`~metabo.metadatasets.base.DATASET_COLUMNS`."""
        ids = self.openml_ids
        return pd.DataFrame({
            "original_id": [str(i) for i in ids], "name": [f"openml-{i}" for i in ids],
            "openml_id": pd.array(ids, dtype="Int64"), "n_instances": pd.NA, "n_features": pd.NA,
            "n_classes": pd.NA,
        })

    def _blocks(self) -> tuple[list[int], list[int]]:
        """Algorithm indices of the preprocessor stage and of the estimator stage."""
        stages = self.file.load("list_for_concatenator")
        if len(stages) != 2 or self.selectors.shape[1] != 2:
            raise InputDataError(f"{self.path}: expected two pipeline stages, found {len(stages)}")
        return [int(a) for a in stages[0]], [int(a) for a in stages[1]]

    def algorithms(self) -> list[AlgorithmInfo]:
        """One algorithm per estimator block of the pipeline encoding (the source does not name them)."""
        _, estimators = self._blocks()
        return [
            AlgorithmInfo(f"pmf:estimator-{b}", "pmf",
                          f"PMF pipelines whose estimator is encoded in block {b} (unnamed in the source)")
            for b in range(len(estimators))
        ]

    def decode(self, index: int) -> tuple[str, dict[str, Any]]:
        """``(algorithm, params)`` of pipeline ``index``."""
        pre, est = self._blocks()
        a, b = (int(v) for v in self.selectors[index])
        dom, vec = self.domain, self.vectors[index]
        pa, ea = pre[a], est[b]
        return f"pmf:estimator-{b}", {
            "preprocessor": a,
            "x_preprocessor": vec[dom[pa]:dom[pa + 1]].tolist(),
            "x_estimator": vec[dom[ea]:dom[ea + 1]].tolist(),
        }

    def configurations(self) -> pd.DataFrame:
        """One row per pipeline, decoded to its algorithm and parameters (JSON)."""
        self.check()
        decoded = [self.decode(i) for i in range(len(self.selectors))]
        return pd.DataFrame({
            "original_id": np.arange(len(decoded)).astype(str),
            "algorithm": [d[0] for d in decoded],
            "params": [json.dumps(d[1]) for d in decoded],
        })

    def check(self) -> None:
        """Verify that a pipeline is determined by its two selected blocks: for each
        selection, every entry outside its blocks is one constant, and no two
        pipelines share a selection and block values."""
        pre, est = self._blocks()
        dom, vec, sel = self.domain, self.vectors, self.selectors
        if len(vec) != len(sel):
            raise InputDataError(f"{self.path}: {len(vec)} pipelines but {len(sel)} selectors")
        for a, b in sorted(set(map(tuple, sel.tolist()))):
            rows = vec[(sel[:, 0] == a) & (sel[:, 1] == b)]
            inside = np.zeros(vec.shape[1], bool)
            for alg in (pre[a], est[b]):
                inside[dom[alg]:dom[alg + 1]] = True
            if (rows[:, ~inside] != rows[0, ~inside]).any():
                raise InputDataError(f"{self.path}: pipelines of selection ({a}, {b}) differ outside their blocks")
            if len(np.unique(rows[:, inside], axis=0)) != len(rows):
                raise InputDataError(f"{self.path}: two pipelines of selection ({a}, {b}) are identical")


#: The steps of a Tensor-OBOE pipeline, in enumeration order.
OBOE_STEPS = ("imputer", "encoder", "standardizer", "dim_reducer", "estimator")


def enumerate_pipelines(space: Mapping[str, Any]) -> list[dict[str, Any]]:
    """All pipelines of a ``classification.json`` space, in DeepPipe's order.

    Each step's options are its algorithms in the listed order (``None`` = the step is
    skipped), each expanded to the Cartesian product of its hyperparameter values
    (keys and values in listed order); the pipelines are the product of the steps'
    options in :data:`OBOE_STEPS` order (the last step varies fastest). A pipeline is a
    flat dict: ``{step: algorithm or None, "step:hyperparameter": value, ...}``.
    """
    if set(space) != set(OBOE_STEPS):
        raise InputDataError(f"the pipeline space must have the steps {OBOE_STEPS}, has {sorted(space)}")
    per_step: list[list[dict[str, Any]]] = []
    for step in OBOE_STEPS:
        options: list[dict[str, Any]] = []
        for algo in space[step]["algorithms"]:
            if algo is None:
                options.append({step: None})
                continue
            hps: Mapping[str, Sequence[Any]] = space[step]["hyperparameters"].get(algo, {})
            for values in itertools.product(*hps.values()):
                options.append({step: algo, **{f"{step}:{k}": v for k, v in zip(hps, values)}})
        per_step.append(options)
    return [dict(itertools.chain.from_iterable(o.items() for o in combo))
            for combo in itertools.product(*per_step)]


#: Tensor-OBOE's reducer options -> the ``dim_reducer`` choices of :mod:`metabo.space.algorithms.pipelines`.
_REDUCERS = {"PCA": "pca", "SelectKBest": "kbest"}


def tensor_oboe_to_project(pipeline: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The point of the project's pipeline spaces that builds Tensor-OBOE's ``pipeline``
    (a flat dict of :func:`enumerate_pipelines`): ``("pipeline_<a>", params)`` with ``a``
    and its params those of the estimator's OBOE setting (:func:`metabo.metadatasets.oboe.to_project`)
    and the four steps as :mod:`metabo.space.algorithms.pipelines` names them
    (``"25%"`` of PCA's ``n_components`` or SelectKBest's ``k`` -> ``pca_25`` / ``kbest_25``);
    validated; :class:`InputDataError` for a pipeline outside them."""
    from metabo.metadatasets.oboe import to_project
    from metabo.space.algorithms import get_algorithm
    from metabo.space.algorithms.pipelines import PREFIX

    try:
        estimator = {"algorithm": pipeline["estimator"],
                     "hyperparameters": {k.partition(":")[2]: v for k, v in pipeline.items()
                                         if k.startswith("estimator:")}}
        reducer = pipeline["dim_reducer"]
        if reducer is None:
            dim = "none"
        elif reducer == "VarianceThreshold":
            dim = "variance_threshold"
        else:
            share = pipeline["dim_reducer:n_components" if reducer == "PCA" else "dim_reducer:k"]
            dim = f"{_REDUCERS[reducer]}_{int(str(share).rstrip('%'))}"
        steps = {"imputer": pipeline["imputer:strategy"],
                 "encoder": "ordinal" if pipeline["encoder"] is None else "onehot",
                 "standardizer": "none" if pipeline["standardizer"] is None else "standard",
                 "dim_reducer": dim}
    except (KeyError, TypeError, ValueError) as e:
        raise InputDataError(f"not a Tensor-OBOE pipeline: {pipeline!r} ({e!r})") from e
    algorithm, params = to_project(estimator)
    name = PREFIX + algorithm
    try:
        return name, get_algorithm(name).space.normalize({**params, **steps})
    except (InvalidConfigurationError, UnknownAlgorithmError) as e:
        raise InputDataError(f"Tensor-OBOE pipeline {pipeline!r} is not a point of {name!r}: {e}") from e


class TensorOBOE(_DeepPipeMetaDataset):
    """The Tensor-OBOE meta-dataset (Yang et al. 2020): 551 datasets x 23,424 pipelines."""

    name: ClassVar[str] = "tensor-oboe"
    filename: ClassVar[str] = "tensor_oboe_meta_dataset.json"
    summary: ClassVar[str] = "Tensor-OBOE (Yang et al. 2020): 551 datasets x 23,424 scikit-learn pipelines"

    @cached_property
    def pipelines(self) -> list[dict[str, Any]]:
        """Every pipeline of Tensor-OBOE's classification space, in its enumeration order."""
        path = self.root / DATA_DIR / "classification.json"
        try:
            space = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise InputDataError(f"cannot read the Tensor-OBOE pipeline space {path}: {e}") from e
        return enumerate_pipelines(space)

    def _dataset_original_ids(self) -> list[str]:
        return [str(i) for i in range(self.n_datasets)]

    def datasets(self) -> pd.DataFrame:
        """One row per dataset of the error tensor, columns
        :data:`~metabo.metadatasets.base.DATASET_COLUMNS`."""
        ids = self._dataset_original_ids()
        return pd.DataFrame({
            "original_id": ids, "name": ids, "openml_id": pd.array([pd.NA] * len(ids), dtype="Int64"),
            "n_instances": pd.NA, "n_features": pd.NA, "n_classes": pd.NA,
        })

    @cached_property
    def _mapped(self) -> list[tuple[str, dict[str, Any]]]:
        """Each pipeline's point of the project's pipeline spaces (:func:`tensor_oboe_to_project`)."""
        return [tensor_oboe_to_project(p) for p in self.pipelines]

    @cached_property
    def _repeats(self) -> np.ndarray:
        """Per pipeline, how many earlier pipelines map to the same point (Logit's two
        solvers minimize one objective: the saga pipeline is ``repeat`` 1, as in
        :class:`~metabo.metadatasets.oboe.OBOE`)."""
        return repeat_indices(self._mapped)

    def run_chunks(self, start: int = 0) -> Iterator[RunChunk]:
        """As the other DeepPipe file's, with each run's ``repeat`` (:attr:`_repeats`)."""
        repeats = self._repeats
        for chunk in super().run_chunks(start):
            runs = chunk.runs.assign(repeat=repeats[chunk.runs["configuration"].astype(np.int64).to_numpy()])
            yield RunChunk(chunk.index, runs)

    def algorithms(self) -> list[AlgorithmInfo]:
        """The project's pipeline algorithms the pipelines map to, in pipeline order."""
        names = dict.fromkeys(a for a, _ in self._mapped)
        return [AlgorithmInfo(a, "", f"metabo's {a}: Tensor-OBOE's imputer, encoder, scaler and reducer before "
                                     f"{a.removeprefix('pipeline_')} (metabo.space.algorithms.pipelines)")
                for a in names]

    def configurations(self) -> pd.DataFrame:
        """One configuration per pipeline, the project's point; original id = its index."""
        self.check()
        return pd.DataFrame({
            "original_id": np.arange(len(self._mapped)).astype(str),
            "algorithm": [a for a, _ in self._mapped],
            "params": [json.dumps(p) for _, p in self._mapped],
        })

    def check(self) -> None:
        """Verify the enumeration against the file: the count, each estimator's selector
        value (one per estimator; only the two without hyperparameters share one), the
        reducer selector, and the one-hot imputer, encoder and scaler entries."""
        pipes, sel, vec = self.pipelines, self.selectors, self.vectors
        if len(pipes) != len(sel) or len(vec) != len(sel):
            raise InputDataError(
                f"{self.path}: {len(sel)} pipelines in the file, {len(pipes)} in the enumeration"
            )
        frame = pd.DataFrame(pipes)
        by_estimator = pd.Series(sel[:, -1]).groupby(frame["estimator"].to_numpy()).nunique()
        shared = pd.Series(sel[:, -1]).groupby(frame["estimator"].to_numpy()).first()
        if (by_estimator != 1).any():
            raise InputDataError(f"{self.path}: the estimator enumeration does not match the selectors")
        has_hps = {p["estimator"] for p in pipes if any(k.startswith("estimator:") for k in p)}
        if shared[sorted(has_hps)].duplicated().any():
            raise InputDataError(f"{self.path}: two tuned estimators share a selector value")
        reducer = frame["dim_reducer"].fillna("none").to_numpy()
        if pd.Series(sel[:, 3]).groupby(reducer).nunique().max() != 1:
            raise InputDataError(f"{self.path}: the dimensionality-reducer enumeration does not match")
        strategies = sorted(frame["imputer:strategy"].unique())  # one-hot in sorted order
        onehot = vec[:, :len(strategies)].argmax(axis=1)
        expected = pd.Categorical(frame["imputer:strategy"], categories=strategies).codes
        flags = vec[:, len(strategies):len(strategies) + 2]
        steps = np.column_stack([frame["encoder"].notna(), frame["standardizer"].notna()])
        if (onehot != expected).any() or (flags != steps).any():
            raise InputDataError(f"{self.path}: the imputer/encoder/scaler enumeration does not match")
