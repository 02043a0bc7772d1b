"""auto-sklearn's meta-learning files, as shipped in the sdist ``auto-sklearn==0.15.0``.

``auto-sklearn-0.15.0.tar.gz`` (BSD; Feurer et al., *Efficient and Robust Automated
Machine Learning*, NeurIPS 2015) holds in ``autosklearn/metalearning/files/`` one ASlib
scenario per folder ``<metric>_<binary|multiclass>.classification_<dense|sparse>``
(regression folders exist too; this project skips them). auto-sklearn's own reader is
``autosklearn/metalearning/input/aslib_simple.py``. Each folder has:

- ``algorithm_runs.arff``: per instance, the incumbent (best configuration found) and its
  *loss* under the folder's metric, with an ASlib run status. The values are losses,
  not scores: ``description.txt`` says ``maximize: false``, auto-sklearn picks the best
  configuration with ``nanargmin`` (``kNearestDatasets/kND.py``), and e.g. ``letter``
  has 0.0303 under accuracy (96.97 % accuracy) and ``hill-valley`` 0.0.
- ``configurations.csv``: the configurations by ``idx`` (the runs' ``algorithm``), in
  auto-sklearn's ConfigSpace names (``classifier:__choice__``, ...). ``idx`` is local
  to a folder (the same ``idx`` is another configuration in another folder).
- ``feature_values.arff``: auto-sklearn's meta-features per instance, stored as
  ``autosklearn:<name>``: they were computed on a training split (below), so a name
  such as ``NumberOfInstances`` is not the project's feature of that name. The few that
  convert exactly (the counts of columns and their kinds) are stored under the project's
  names too (:mod:`metabo.data.meta_features.published`).

Instances. The instance ids are lower-cased OpenML dataset *names* (``letter``,
``kr-vs-k``, ``bioresponse`` for OpenML's ``Bioresponse``), neither dataset nor task
ids, and the meta-features were computed on a 67 % training split (``letter``:
``NumberOfInstances`` 13400 = 0.67 x 20000, OpenML dataset 6; ``mnist_784``: 46900 =
0.67 x 70000). A name does not determine an OpenML id (names repeat across versions;
``steel-plates-fault`` is both dataset 1504 and 40982 and is listed twice in every runs
file), so ``openml_id`` is NA unless the caller passes a name -> id map
(``openml_ids``); without one these datasets (stored as ``autosklearn-<name>``) join no
other source. An instance listed twice at the same repetition in a runs file cannot be
told apart: its runs are dropped (logged), its dataset and meta-features are kept.
``n_features`` comes from ``NumberOfFeatures``; ``n_instances`` and ``n_classes`` stay
NA because the training split's counts are not the dataset's (they remain available
as the meta-features ``NumberOfInstances`` and ``NumberOfClasses``).

Folders read. In 0.15.0 every ``*_multiclass.*`` folder is a byte-identical copy of its
``*_binary.*`` twin (both hold binary and multiclass datasets), so only the
``_binary`` folders are extracted and read: one folder per (metric, dense|sparse).
Meta-features are identical in all folders of 0.15.0; should they differ, a dense
folder's value wins over a sparse one's, then the first folder by name.

Runs: one per (instance, incumbent, folder), metric mapped by :func:`metric_name`
(``accuracy`` -> ``error_rate`` etc., the files' losses already being lower-is-better;
others ``autosklearn_<metric>_loss``). Statuses ``ok``, ``crash``, ``timeout``,
``memout`` are kept, ``other`` becomes ``crash`` (with a message), and
``not_applicable`` rows (the metric is undefined for the dataset, e.g. ``roc_auc`` on
a multiclass one; no value) are dropped, as auto-sklearn drops every non-``ok`` row.
When the dense and the sparse folder share an incumbent, the two rows are one run in
the knowledge base (same dataset, configuration and metric; their values agree in
0.15.0). Configurations are named ``<folder>/<idx>``; identical configurations of
several folders are one stored configuration. Only configurations of kept runs are
returned. Chunk ``k`` is the ``k``-th folder in sorted order.
"""

from __future__ import annotations

import csv
import hashlib
import logging
import math
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

import arff
import numpy as np
import pandas as pd

from metabo.data.meta_features.published import from_autosklearn
from metabo.data.pypi_fetch import PyPIArtifact
from metabo.exceptions import InputDataError
from metabo.metadatasets.base import (
    CONFIGURATION_COLUMNS,
    DATASET_COLUMNS,
    META_FEATURE_COLUMNS,
    AlgorithmInfo,
    MetaDataset,
    RunChunk,
)

logger = logging.getLogger(__name__)

#: Prefix of auto-sklearn's own meta-feature names in the knowledge base.
AUTOSKLEARN_PREFIX = "autosklearn:"

AUTOSKLEARN_VERSION = "0.15.0"
#: Where the folders are, relative to the extraction root (as in the sdist).
FILES_DIR = Path(f"auto-sklearn-{AUTOSKLEARN_VERSION}") / "autosklearn" / "metalearning" / "files"
AUTOSKLEARN_ARTIFACT = PyPIArtifact(
    project="auto-sklearn",
    version=AUTOSKLEARN_VERSION,
    filename=f"auto-sklearn-{AUTOSKLEARN_VERSION}.tar.gz",
    sha256="082941a56acfc93a83e221e08ef5d5b2083b1ff58d18be7c27d003a11e4a41d0",
    members=r"auto-sklearn-0\.15\.0/autosklearn/metalearning/files/[a-z0-9_]+_binary\.classification_"
    r"(dense|sparse)/(algorithm_runs\.arff|configurations\.csv|feature_values\.arff|description\.txt)"
    r"|auto-sklearn-0\.15\.0/LICENSE\.txt",
)
FOLDER_PATTERN = re.compile(r"(?P<metric>[a-z0-9_]+)_binary\.classification_(?P<representation>dense|sparse)")

#: auto-sklearn metric -> this project's (lower-is-better) metric of the same loss.
METRIC_NAMES: Mapping[str, str] = MappingProxyType({
    "accuracy": "error_rate",  # 1 - accuracy
    "balanced_accuracy": "balanced_error_rate",  # 1 - balanced accuracy
    "log_loss": "log_loss",
    "roc_auc": "one_minus_auc",
})
#: ASlib run status -> run status; statuses missing here drop the row.
STATUSES: Mapping[str, str] = MappingProxyType(
    {"ok": "ok", "crash": "crash", "timeout": "timeout", "memout": "memout", "other": "crash"}
)
RUN_ATTRIBUTES = ("instance_id", "repetition", "algorithm")
CHOICE = "classifier:__choice__"
#: Losses below this are not losses (float noise such as -2.2e-16 is allowed).
_MIN_LOSS = -1e-6


def metric_name(autosklearn_metric: str) -> str:
    """This project's name of an auto-sklearn metric's loss (``autosklearn_<m>_loss`` if none)."""
    return METRIC_NAMES.get(autosklearn_metric, f"autosklearn_{autosklearn_metric}_loss")


@dataclass(frozen=True)
class MetricFolder:
    """One scenario folder: an auto-sklearn metric on dense or sparse data."""

    path: Path
    metric: str
    representation: str

    @property
    def name(self) -> str:
        """The folder's name (the scenario's name)."""
        return self.path.name


def _load_arff(path: Path) -> dict[str, Any]:
    try:
        with path.open(encoding="utf-8") as f:
            return arff.load(f)
    except (arff.ArffException, UnicodeDecodeError, OSError, ValueError, IndexError) as e:
        raise InputDataError(f"cannot read ARFF file {path}: {e}; fetch the auto-sklearn files again") from e


def read_description(folder: MetricFolder) -> dict[str, str]:
    """``key: value`` lines of ``description.txt``, checked to describe losses of the folder's metric."""
    path = folder.path / "description.txt"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise InputDataError(f"cannot read {path}: {e}") from e
    desc = {k.strip(): v.strip() for k, sep, v in (line.partition(":") for line in lines) if sep}
    if desc.get("performance_measures") != folder.metric or desc.get("maximize") != "false":
        raise InputDataError(
            f"{path}: expected performance_measures {folder.metric!r} and maximize false, found "
            f"{desc.get('performance_measures')!r} and {desc.get('maximize')!r}"
        )
    return desc


def read_algorithm_runs(folder: MetricFolder) -> pd.DataFrame:
    """The rows of ``algorithm_runs.arff``: instance, repetition, algorithm, value, status."""
    path = folder.path / "algorithm_runs.arff"
    doc = _load_arff(path)
    names = tuple(a for a, _ in doc["attributes"])
    if names != (*RUN_ATTRIBUTES, folder.metric, "runstatus"):
        raise InputDataError(f"{path}: unexpected attributes {list(names)}")
    frame = pd.DataFrame(doc["data"], columns=["instance", "repetition", "algorithm", "value", "status"])
    if frame[["instance", "algorithm", "status"]].isna().any(axis=None):
        raise InputDataError(f"{path}: rows without an instance, algorithm or run status")
    frame["instance"] = frame["instance"].astype(str)
    frame["algorithm"] = frame["algorithm"].astype(str)
    frame["repetition"] = pd.to_numeric(frame["repetition"]).astype(np.float64)
    frame["value"] = pd.to_numeric(frame["value"]).astype(np.float64)
    rep = frame["repetition"]
    if rep.isna().any() or (rep % 1 != 0).any() or (rep < 1).any():
        raise InputDataError(f"{path}: repetitions must be integers >= 1")
    ok = frame["status"] == "ok"
    bad = ok & ~np.isfinite(frame["value"])
    if bad.any():
        raise InputDataError(f"{path}: {int(bad.sum())} 'ok' run(s) without a finite value")
    if (frame.loc[ok, "value"] < _MIN_LOSS).any():
        raise InputDataError(f"{path}: negative values; expected losses (lower is better)")
    return frame


def _parse_value(text: str) -> Any:
    """A configuration value as auto-sklearn's reader parses it: int, else float, else text."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def read_configurations(folder: MetricFolder) -> dict[str, tuple[str, dict[str, Any]]]:
    """``idx -> (classifier choice, params)`` of ``configurations.csv`` (empty/NaN entries dropped)."""
    path = folder.path / "configurations.csv"
    try:
        with path.open(encoding="utf-8", newline="") as f:
            rows = list(csv.reader(f, strict=True))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise InputDataError(f"cannot read {path}: {e}") from e
    if not rows or rows[0][:1] != ["idx"] or CHOICE not in rows[0]:
        raise InputDataError(f"{path}: the header must start with 'idx' and name {CHOICE!r}")
    header = rows[0]
    configs: dict[str, tuple[str, dict[str, Any]]] = {}
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise InputDataError(
                f"{path}, line {line}: {len(row)} fields, expected {len(header)} (truncated?)"
            )
        params = {}
        for key, text in zip(header[1:], row[1:], strict=True):
            value = _parse_value(text) if text else None
            if value is not None and not (isinstance(value, float) and math.isnan(value)):
                params[key] = value
        idx, choice = row[0], params.get(CHOICE)
        if not idx or idx in configs or not isinstance(choice, str):
            raise InputDataError(f"{path}, line {line}: a missing or repeated idx, or no {CHOICE}")
        configs[idx] = (choice, params)
    return configs


def read_feature_values(folder: MetricFolder) -> pd.DataFrame:
    """``feature_values.arff`` as a frame indexed by instance, one column per meta-feature."""
    path = folder.path / "feature_values.arff"
    doc = _load_arff(path)
    names = [a for a, _ in doc["attributes"]]
    if names[:2] != ["instance_id", "repetition"] or len(set(names)) != len(names):
        raise InputDataError(f"{path}: unexpected attributes {names[:3]}...")
    if any(str(kind).upper() not in {"NUMERIC", "REAL", "INTEGER"} for _, kind in doc["attributes"][1:]):
        raise InputDataError(f"{path}: meta-features must be numeric")
    frame = pd.DataFrame(doc["data"], columns=names)
    frame["instance_id"] = frame["instance_id"].astype(str)
    if frame["instance_id"].duplicated().any():
        dup = sorted(set(frame.loc[frame["instance_id"].duplicated(), "instance_id"]))[:5]
        raise InputDataError(f"{path}: instances listed twice: {dup}")
    return frame.drop(columns="repetition").set_index("instance_id").astype(np.float64)


class AutoSklearnMetadata(MetaDataset):
    """auto-sklearn 0.15.0's meta-learning data: per dataset and metric, the incumbent's loss."""

    name: ClassVar[str] = "autosklearn"
    artifact: ClassVar[PyPIArtifact] = AUTOSKLEARN_ARTIFACT
    metric: ClassVar[str] = "error_rate"
    summary: ClassVar[str] = (
        "auto-sklearn 0.15.0 meta-learning files: 208 OpenML datasets by name, their meta-features "
        "and incumbents' losses under 17 classification metrics"
    )

    def __init__(self, root: str | os.PathLike[str], *, openml_ids: Mapping[str, int] | None = None) -> None:
        super().__init__(root)
        self.openml_ids: Mapping[str, int] = MappingProxyType(dict(openml_ids or {}))

    @property
    def files_dir(self) -> Path:
        """The folder holding the downloaded meta-data files."""
        return self.root / FILES_DIR

    @cached_property
    def folders(self) -> tuple[MetricFolder, ...]:
        """The ``_binary`` classification folders, sorted by name (dense before sparse)."""
        if not self.files_dir.is_dir():
            raise InputDataError(f"{self.files_dir} is missing; fetch the {self.name} meta-dataset first")
        found = []
        for path in sorted(self.files_dir.iterdir()):
            match = FOLDER_PATTERN.fullmatch(path.name)
            if match and path.is_dir():
                folder = MetricFolder(path, match["metric"], match["representation"])
                read_description(folder)
                found.append(folder)
        if not found:
            raise InputDataError(
                f"{self.files_dir} holds no <metric>_binary.classification_<dense|sparse> folder"
            )
        return tuple(found)

    @cached_property
    def _raw_runs(self) -> dict[str, pd.DataFrame]:
        return {f.name: read_algorithm_runs(f) for f in self.folders}

    @cached_property
    def ambiguous_instances(self) -> frozenset[str]:
        """Instances some runs file lists twice at one repetition (their runs are dropped)."""
        names: set[str] = set()
        for runs in self._raw_runs.values():
            names.update(runs.loc[runs.duplicated(["instance", "repetition"]), "instance"])
        if names:
            logger.warning("auto-sklearn: dropping the runs of %s: several datasets share the name",
                           sorted(names))
        return frozenset(names)

    def _kept_runs(self, folder: MetricFolder) -> pd.DataFrame:
        runs = self._raw_runs[folder.name]
        keep = runs["status"].isin(list(STATUSES)) & ~runs["instance"].isin(self.ambiguous_instances)
        return runs[keep]

    @cached_property
    def _features(self) -> pd.DataFrame:
        """Meta-features per instance: dense folders first, then sparse, first value wins.

        A file byte-identical to one read already (most are, in 0.15.0) is not parsed again.
        """
        frames, seen = [], set()
        for folder in sorted(self.folders, key=lambda f: (f.representation != "dense", f.name)):
            path = folder.path / "feature_values.arff"
            try:
                digest = hashlib.sha256(path.read_bytes()).digest()
            except OSError as e:
                raise InputDataError(f"cannot read {path}: {e}") from e
            if digest not in seen:
                seen.add(digest)
                frames.append(read_feature_values(folder))
        # groupby.first keeps, per instance and meta-feature, the first non-missing value.
        return pd.concat(frames).groupby(level=0, sort=True).first()

    def datasets(self) -> pd.DataFrame:
        """One row per dataset seen in the meta-features or the runs, columns
        :data:`~metabo.metadatasets.base.DATASET_COLUMNS`."""
        features = self._features
        names = set(features.index)
        for runs in self._raw_runs.values():
            names.update(runs["instance"])
        ordered = sorted(names)
        n_features = features.get("NumberOfFeatures", pd.Series(dtype=np.float64))
        frame = pd.DataFrame({
            "original_id": ordered, "name": ordered,
            "openml_id": pd.array([self.openml_ids.get(n) for n in ordered], dtype="Int64"),
            "n_instances": pd.NA,
            "n_features": pd.array(n_features.reindex(ordered).round(), dtype="Int64"),
            "n_classes": pd.NA,
        })
        return frame[list(DATASET_COLUMNS)]

    def meta_features(self) -> pd.DataFrame:
        """auto-sklearn's meta-features under ``autosklearn:<name>`` (computed on a training
        split, so most differ from the project's features of the same name), and the
        project's features they convert to exactly
        (:func:`metabo.data.meta_features.published.from_autosklearn`)."""
        features = self._features
        converted = pd.DataFrame.from_dict(
            {i: from_autosklearn(row) for i, row in features.to_dict(orient="index").items()}, orient="index")
        own = features.add_prefix(AUTOSKLEARN_PREFIX)
        wide = pd.concat([own, converted.reindex(own.index)], axis=1)
        long = wide.rename_axis("original_id").reset_index().melt(
            id_vars="original_id", var_name="name", value_name="value")
        long = long[np.isfinite(long["value"].to_numpy(np.float64))]
        return long.sort_values(["original_id", "name"], ignore_index=True)[list(META_FEATURE_COLUMNS)]

    def configurations(self) -> pd.DataFrame:
        """One row per configuration, columns
        :data:`~metabo.metadatasets.base.CONFIGURATION_COLUMNS` (a copy)."""
        return self._configurations.copy()

    @cached_property
    def _configurations(self) -> pd.DataFrame:
        ids, algos, params = [], [], []
        for folder in self.folders:
            configs = read_configurations(folder)
            used = set(self._raw_runs[folder.name]["algorithm"])
            if used - configs.keys():
                raise InputDataError(
                    f"{folder.path / 'configurations.csv'} lacks configurations "
                    f"{sorted(used - configs.keys())[:5]} that algorithm_runs.arff uses (truncated?)"
                )
            if configs.keys() - used:
                raise InputDataError(
                    f"{folder.path / 'algorithm_runs.arff'} has no run of configurations "
                    f"{sorted(configs.keys() - used)[:5]} of configurations.csv (truncated?)"
                )
            for idx in pd.unique(self._kept_runs(folder)["algorithm"]):
                choice, values = configs[idx]
                ids.append(f"{folder.name}/{idx}")
                algos.append(f"autosklearn:{choice}")
                params.append(values)
        return pd.DataFrame({"original_id": ids, "algorithm": algos, "params": params},
                            columns=list(CONFIGURATION_COLUMNS))

    def algorithms(self) -> list[AlgorithmInfo]:
        """One algorithm per distinct ``algorithm`` of the configurations (one per classifier of
        the pipelines)."""
        names = sorted(set(self.configurations()["algorithm"]))
        return [
            AlgorithmInfo(n, "autosklearn",
                          f"auto-sklearn {AUTOSKLEARN_VERSION} pipelines whose classifier is "
                          f"{n.partition(':')[2]} (with data and feature preprocessing)")
            for n in names
        ]

    def n_chunks(self) -> int:
        """How many chunks :meth:`run_chunks` yields: one per scenario folder."""
        return len(self.folders)

    def run_chunks(self, start: int = 0) -> Iterator[RunChunk]:
        """Chunk ``k``: the kept runs of folder ``k`` (sorted by name)."""
        for index, folder in enumerate(self.folders):
            if index < start:
                continue
            runs = self._kept_runs(folder)
            status = runs["status"].astype(str)
            yield RunChunk(index, pd.DataFrame({
                "dataset": runs["instance"].to_numpy(),
                "configuration": (folder.name + "/" + runs["algorithm"]).to_numpy(),
                "value": runs["value"].to_numpy(),
                "metric": metric_name(folder.metric),
                "status": status.map(STATUSES).to_numpy(),
                "repeat": (runs["repetition"] - 1).astype(np.int64).to_numpy(),
                # (numpy's stubs reject None as a branch of np.where; it gives an object array)
                "message": np.where(status == "other", "auto-sklearn run status 'other'", None),  # type: ignore[call-overload]
            }))
