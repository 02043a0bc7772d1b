"""OBOE's meta-dataset, as shipped in the ``oboe`` wheel.

``oboe==0.2.0`` (BSD; Yang, Akimoto, Kim, Udell, *OBOE: Collaborative filtering for
AutoML model selection*, KDD 2019) ships in ``oboe/defaults/Oboe/``:

- ``error_matrix.csv``: 418 OpenML datasets (the row index is the OpenML dataset id,
  zero-padded: ``00003``) x 219 scikit-learn models, dense. A column header is ``str()`` of OBOE's setting,
  e.g. ``{'algorithm': 'KNN', 'hyperparameters': {'n_neighbors': 1, 'p': 1}}``;
- ``runtime_matrix.csv``: the same rows and columns, seconds;
- ``dataset_sizes.csv``: per OpenML id, columns ``0`` (instances) and ``1`` (columns
  of OBOE's preprocessed file: the one-hot encoded features plus the label, e.g. 74
  for kr-vs-kp, OpenML 3, whose 36 raw features encode to 73);
- ``classification.json``: the grid. Its settings, enumerated as OBOE's
  ``util.generate_settings`` of 2018 does (product of each algorithm's values in
  listed order, integral numbers written as ints, stable sort by algorithm name), are
  the 219 headers in file order (:meth:`OBOE.check`).

These files are byte-identical to the ones of commit 35f8710 (2018-05-17) of
github.com/udellgroup/oboe, whose ``automl/generate_vector.py`` and ``model.py`` made
them. **Error** (``util.error``, ``metric='BER'``): stratified 5-fold cross-validation
(``StratifiedKFold(5, shuffle=True, random_state=0)``, ``--n_folds`` default 5), the
mean over the folds of ``mean over the classes c present in the fold of
1 - (TPR_c + TNR_c) / 2`` (one-vs-rest). On a binary task this is the balanced error
rate; with more classes it is not (a constant prediction scores 1/2, not 1 - 1/K), so
the runs are stored as metric ``ovr_balanced_error_rate``, not ``balanced_error_rate``.
**Runtime**: the wall-clock seconds of the whole cross-validation (five fits and
predictions), stored as the runs' ``fit_seconds``. Each estimator is
``<class>(random_state=0, **hyperparameters)`` when it takes a seed; every other
parameter is the default of the scikit-learn of 2018 (the version is not recorded;
the repository then asked for >= 0.18). A caveat of the source: when a model raised,
``generate_vector.py`` logged the exception and still wrote ``cv_errors`` (those of
the setting before it) into the cell; the files do not mark such cells, so they cannot
be told apart and are stored as they are.

Mapping to the knowledge base: dataset ``openml-<id>`` with ``n_instances`` from
``dataset_sizes.csv`` (``n_features`` is left empty: the file's width counts encoded
columns). Each of the 219 settings is stored as the point of the project's CASH space
that builds the same estimator (:func:`to_project`, the table :data:`PROJECT_ALGORITHMS`;
the spaces added for it are documented in :mod:`metabo.space.algorithms.oboe_grid`), so
that the runs are knowledge a live warm start can propose and a new dataset can
evaluate; the original configuration id is the header text (``source_ids``). Logit's
two solvers (liblinear, saga) fit one model, so their columns are one configuration and
the saga column is stored as ``repeat`` 1. Chunk ``k`` holds the cells of error-matrix
rows ``[k R, (k + 1) R)``; the two matrices are small (1.6 and 1.8 MB) and read whole.
"""

from __future__ import annotations

import ast
import itertools
import json
import math
from collections.abc import Iterator, Mapping
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from metabo.data.pypi_fetch import PyPIArtifact
from metabo.exceptions import InputDataError, InvalidConfigurationError
from metabo.metadatasets.base import (
    CONFIGURATION_COLUMNS,
    DATASET_COLUMNS,
    AlgorithmInfo,
    MetaDataset,
    RunChunk,
    repeat_indices,
)

__all__ = ["ESTIMATORS", "OBOE", "PROJECT_ALGORITHMS", "enumerate_settings", "to_project"]

DATA_DIR = Path("oboe") / "defaults" / "Oboe"
#: Error-matrix rows (datasets) per chunk: 64 x 219 = 14,016 runs.
ROWS_PER_CHUNK = 64
#: OBOE's algorithm names -> scikit-learn classes (the imports of its ``util.py``).
ESTIMATORS: Mapping[str, str] = MappingProxyType({
    "KNN": "sklearn.neighbors.KNeighborsClassifier",
    "DT": "sklearn.tree.DecisionTreeClassifier",
    "RF": "sklearn.ensemble.RandomForestClassifier",
    "GBT": "sklearn.ensemble.GradientBoostingClassifier",
    "AB": "sklearn.ensemble.AdaBoostClassifier",
    "lSVM": "sklearn.svm.LinearSVC",
    "kSVM": "sklearn.svm.SVC",
    "Logit": "sklearn.linear_model.LogisticRegression",
    "Perceptron": "sklearn.linear_model.Perceptron",
    "GNB": "sklearn.naive_bayes.GaussianNB",
    "MLP": "sklearn.neural_network.MLPClassifier",
    "ExtraTrees": "sklearn.ensemble.ExtraTreesClassifier",
})
#: OBOE's algorithm -> the project's algorithm its settings map to (MLP: by solver).
PROJECT_ALGORITHMS: Mapping[str, str] = MappingProxyType({
    "KNN": "knn", "DT": "full_decision_tree", "RF": "full_random_forest", "ExtraTrees": "full_extra_trees",
    "GBT": "gradient_boosting", "AB": "adaboost", "lSVM": "linear_svm", "kSVM": "kernel_svm",
    "Logit": "ovr_logistic_regression", "Perceptron": "perceptron", "GNB": "gaussian_nb", "MLP": "mlp",
})


def to_project(setting: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The point of the project's CASH space that builds OBOE's ``setting``
    (``{"algorithm": ..., "hyperparameters": {...}}``): ``(algorithm, params)``, validated
    by the algorithm's space; :class:`InputDataError` for a setting outside it.

    The hyperparameters OBOE set are passed as it named them, except: the trees'
    ``min_samples_split`` is a float (rows when 2 or more); KNN adds
    ``weights="uniform"`` (scikit-learn's default); GBT's ``max_features=None`` is
    ``"all"``; kSVM adds OBOE's ``gamma="auto"`` and ``degree=3``; Logit drops
    ``solver`` (the module docstring); MLP maps to ``mlp`` (adam) or ``sgd_mlp`` with
    ``n_units=100`` (``hidden_layer_sizes=(100,)``, the default) and drops
    ``learning_rate`` (always "adaptive"; adam ignores it, ``sgd_mlp`` uses it); the forests add
    ``n_estimators=10``, GBT ``n_estimators=100``, Perceptron ``max_iter=1000``, GNB
    ``var_smoothing=1e-9``.
    """
    from metabo.space.algorithms import get_algorithm

    name = setting.get("algorithm") if isinstance(setting, Mapping) else None
    hps = dict(setting.get("hyperparameters") or {}) if isinstance(setting, Mapping) else {}
    if name not in PROJECT_ALGORITHMS:
        raise InputDataError(f"not an OBOE setting of a known algorithm: {setting!r}")
    assert name is not None  # the keys are names
    algorithm = PROJECT_ALGORITHMS[name]
    if "min_samples_split" in hps:  # the trees: rows as floats (oboe_grid)
        split = hps["min_samples_split"]
        hps["min_samples_split"] = float(split) if isinstance(split, (int, float)) else split
    if name == "KNN":
        hps.setdefault("weights", "uniform")
    elif name in ("RF", "ExtraTrees"):
        hps = {"n_estimators": 10, **hps}
    elif name == "GBT":
        hps = {"n_estimators": 100, **hps, "max_features": hps.get("max_features") or "all"}
    elif name == "kSVM":
        hps.update(gamma="auto", degree=3)
    elif name == "Logit":
        hps.pop("solver", None)
    elif name == "MLP":
        algorithm = "sgd_mlp" if hps.pop("solver", "adam") == "sgd" else "mlp"
        hps.pop("learning_rate", None)
        hps = {"n_units": 100, **hps}
    elif name == "Perceptron":
        hps = {"max_iter": 1000, **hps}
    elif name == "GNB":
        hps = {"var_smoothing": 1e-9, **hps}
    try:
        return algorithm, get_algorithm(algorithm).space.normalize(hps)
    except InvalidConfigurationError as e:
        raise InputDataError(f"OBOE setting {setting!r} is not a point of {algorithm!r}: {e}") from e



def _int_if_integral(value: Any) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isclose(value, round(value)):
        return int(round(value))
    return value


def enumerate_settings(grid: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The settings of a ``classification.json`` grid in OBOE's error-matrix order.

    As ``generate_settings`` of OBOE's ``automl/util.py`` (2018): per algorithm, the
    product of its hyperparameter values in listed order, integral numbers as ints;
    then a stable sort by algorithm name. ``str()`` of a setting is its column header.
    """
    try:
        algorithms, hps = grid["algorithms"], grid["hyperparameters"]
        settings = []
        for algo in algorithms:
            space = hps[algo]
            for values in itertools.product(*space.values()):
                params = {k: _int_if_integral(v) for k, v in zip(space, values)}
                settings.append({"algorithm": algo, "hyperparameters": params})
    except (KeyError, TypeError, AttributeError) as e:
        raise InputDataError(f"not an OBOE grid (algorithms, hyperparameters per algorithm): {e!r}") from e
    return sorted(settings, key=lambda s: s["algorithm"])


class OBOE(MetaDataset):
    """OBOE's error matrix (Yang et al. 2019): 418 OpenML datasets x 219 models."""

    name: ClassVar[str] = "oboe"
    artifact: ClassVar[PyPIArtifact] = PyPIArtifact(
        project="oboe",
        version="0.2.0",
        filename="oboe-0.2.0-py3-none-any.whl",
        sha256="0cb81ba4636b5b4918d7364b6325e2e0316ebd95efb5187f2dfd8cffdc9976a3",
        members=r"oboe/defaults/Oboe/(error_matrix\.csv|runtime_matrix\.csv|dataset_sizes\.csv|classification\.json)"
        r"|oboe-0\.2\.0\.dist-info/LICENSE\.txt",
    )
    metric: ClassVar[str] = "ovr_balanced_error_rate"
    summary: ClassVar[str] = (
        "OBOE (Yang et al. 2019): 418 OpenML datasets x 219 scikit-learn models, "
        "5-fold CV one-vs-rest balanced error and seconds"
    )

    def __init__(self, root: str | Path, *, rows_per_chunk: int = ROWS_PER_CHUNK) -> None:
        super().__init__(root)
        if rows_per_chunk < 1:
            raise InputDataError("rows_per_chunk must be >= 1")
        self.rows_per_chunk = rows_per_chunk

    def _path(self, filename: str) -> Path:
        path = self.root / DATA_DIR / filename
        if not path.is_file():
            raise InputDataError(f"{path} is missing; fetch the oboe meta-dataset first (metabo data fetch oboe)")
        return path

    # ------------------------------------------------------------------ files
    def _read_matrix(self, filename: str) -> pd.DataFrame:
        """A matrix file, its cells parsed by Python's ``float`` (exactly as written)."""
        path = self._path(filename)
        try:
            text = pd.read_csv(path, index_col=0, dtype=str, keep_default_na=False)
        except (OSError, ValueError, pd.errors.ParserError) as e:
            raise InputDataError(f"cannot read {path}: {e}") from e
        cells = text.to_numpy(dtype=object)
        try:
            values = cells.astype(np.float64)
            ids = [int(i) for i in text.index]
        except ValueError:
            for (i, j), cell in np.ndenumerate(cells):
                try:
                    float(cell)
                except ValueError:
                    raise InputDataError(f"{path}: row {text.index[i]}, column {text.columns[j]!r} holds "
                                         f"{cell!r}, not a number") from None
            raise InputDataError(f"{path}: the row index must be OpenML dataset ids") from None
        if len(set(ids)) != len(ids):
            raise InputDataError(f"{path}: an OpenML dataset id repeats in the row index")
        return pd.DataFrame(values, index=pd.Index(ids, dtype=np.int64), columns=text.columns)

    @cached_property
    def errors(self) -> pd.DataFrame:
        """The error matrix: OpenML id x column header."""
        return self._read_matrix("error_matrix.csv")

    @cached_property
    def runtimes(self) -> pd.DataFrame:
        """The runtime matrix (seconds), same rows and columns as :attr:`errors`."""
        frame = self._read_matrix("runtime_matrix.csv")
        if not frame.index.equals(self.errors.index) or not frame.columns.equals(self.errors.columns):
            raise InputDataError(f"{self._path('runtime_matrix.csv')}: rows or columns differ from the error matrix")
        return frame

    @cached_property
    def sizes(self) -> pd.DataFrame:
        """``dataset_sizes.csv`` indexed by OpenML id (columns ``0``, ``1``)."""
        path = self._path("dataset_sizes.csv")
        try:
            frame = pd.read_csv(path, index_col=0)
        except (OSError, ValueError, pd.errors.ParserError) as e:
            raise InputDataError(f"cannot read {path}: {e}") from e
        if list(frame.columns) != ["0", "1"] or not frame.index.is_unique:
            raise InputDataError(f"{path}: expected one row per OpenML id and columns 0, 1")
        missing = sorted(set(self.errors.index) - set(frame.index))
        if missing:
            raise InputDataError(f"{path} has no size for datasets {missing[:5]}")
        return frame

    @cached_property
    def settings(self) -> list[dict[str, Any]]:
        """The parsed column headers: ``{"algorithm": ..., "hyperparameters": {...}}``."""
        path = self._path("error_matrix.csv")
        parsed = []
        for header in self.errors.columns:
            try:
                setting = ast.literal_eval(header)
            except (ValueError, SyntaxError) as e:
                raise InputDataError(f"{path}: column {header!r} is not an OBOE setting") from e
            if (not isinstance(setting, dict) or set(setting) != {"algorithm", "hyperparameters"}
                    or setting["algorithm"] not in ESTIMATORS or not isinstance(setting["hyperparameters"], dict)):
                raise InputDataError(f"{path}: column {header!r} is not an OBOE setting of a known algorithm")
            parsed.append(setting)
        return parsed

    def check(self) -> None:
        """Verify the headers against the grid: every column is ``str()`` of a setting of
        :func:`enumerate_settings` and they come in its order (all 219 in the real file)."""
        path = self._path("classification.json")
        try:
            grid = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise InputDataError(f"cannot read the OBOE grid {path}: {e}") from e
        expected = iter(str(s) for s in enumerate_settings(grid))
        # every header parses to a setting of a known algorithm (self.settings) and, in
        # order, equals the next matching setting ("in" consumes the iterator)
        for header, _ in zip(self.errors.columns, self.settings, strict=True):
            if header not in expected:
                raise InputDataError(f"{self._path('error_matrix.csv')}: column {header!r} is not in the grid "
                                     f"{path}, or out of its order")

    # ------------------------------------------------------------------ header
    def datasets(self) -> pd.DataFrame:
        """One row per OpenML id, in error-matrix order, with its number of instances."""
        ids = [int(i) for i in self.errors.index]
        n = pd.to_numeric(self.sizes["0"].reindex(ids), errors="coerce").round().astype("Int64")
        return pd.DataFrame({
            "original_id": [str(i) for i in ids], "name": [f"openml-{i}" for i in ids],
            "openml_id": pd.array(ids, dtype="Int64"), "n_instances": n.array,
            "n_features": pd.NA, "n_classes": pd.NA,
        }, columns=list(DATASET_COLUMNS))

    def algorithms(self) -> list[AlgorithmInfo]:
        """The project's algorithms the columns map to (:func:`to_project`), in column order."""
        names = dict.fromkeys(to_project(s)[0] for s in self.settings)
        return [AlgorithmInfo(a, "", f"metabo's {a} (metabo.space.algorithms)") for a in names]

    @cached_property
    def _mapped(self) -> tuple[list[str], list[dict[str, Any]], np.ndarray]:
        """Per column: the project's algorithm, params, and the repeat index (how many
        earlier columns map to the same point)."""
        self.check()
        points = [to_project(setting) for setting in self.settings]
        return [a for a, _ in points], [p for _, p in points], repeat_indices(points)

    def configurations(self) -> pd.DataFrame:
        """One configuration per column, the project's point (:func:`to_project`);
        original id = the header text."""
        algorithms, params, _ = self._mapped
        return pd.DataFrame({
            "original_id": list(self.errors.columns), "algorithm": algorithms,
            "params": [json.dumps(p) for p in params],
        }, columns=list(CONFIGURATION_COLUMNS))

    # ------------------------------------------------------------------ runs
    @property
    def chunking(self) -> str:
        """How runs are cut into chunks: ``rows=<rows_per_chunk>`` of the error matrix."""
        return f"rows={self.rows_per_chunk}"

    def n_chunks(self) -> int:
        """How many chunks :meth:`run_chunks` yields: the error matrix's rows in chunks of
        ``rows_per_chunk``."""
        return math.ceil(len(self.errors) / self.rows_per_chunk)

    def run_chunks(self, start: int = 0) -> Iterator[RunChunk]:
        """Chunk ``k``: every cell of error-matrix rows ``[k R, (k + 1) R)`` with its seconds.

        A chunk is checked before it is yielded (errors in [0, 1], seconds finite and
        non-negative), so a bad row stops the ingestion with the chunks before it stored.
        """
        errors, runtimes = self.errors, self.runtimes
        columns = np.asarray(errors.columns, dtype=object)
        r = self.rows_per_chunk
        for k in range(max(start, 0), self.n_chunks()):
            block = slice(k * r, (k + 1) * r)
            err, sec = errors.iloc[block].to_numpy(), runtimes.iloc[block].to_numpy()
            ids = errors.index[block]
            for what, bad in (("error outside [0, 1]", ~((err >= 0) & (err <= 1))),
                              ("negative or non-finite seconds", ~(np.isfinite(sec) & (sec >= 0)))):
                if bad.any():
                    i, j = np.argwhere(bad)[0]
                    raise InputDataError(f"{self.root / DATA_DIR}: dataset {ids[i]} (chunk {k}), column "
                                         f"{columns[j]!r}: {what}")
            yield RunChunk(k, pd.DataFrame({
                "dataset": np.repeat(ids.astype(str).to_numpy(), len(columns)),
                "configuration": np.tile(columns, len(ids)),
                "value": err.ravel(),
                "fit_seconds": sec.ravel(),
                "repeat": np.tile(self._mapped[2], len(ids)),
            }))
