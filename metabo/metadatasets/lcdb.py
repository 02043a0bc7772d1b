"""LCDB, the Learning Curve Database (Mohr et al., 2022), read from the sdist ``lcdb==0.1.0``.

Source: https://pypi.org/project/lcdb/0.1.0/ (MIT), file ``lcdb-0.1.0.tar.gz``; the
package's own reader is ``lcdb/lcdb.py`` and its experiment script ``lcdb/computelc.py``.
Learning curves of 20 scikit-learn learners with *default* hyperparameters on 248 OpenML
classification datasets; every point is one fit on ``size_train`` instances.

Files (under ``lcdb-0.1.0/lcdb/``):

- ``database-<score>.csv``, one per score (accuracy, logloss, auc, f1), columns
  ``openmlid, learner, size_train, size_test, outer_seed, inner_seed, traintime,
  score_train, score_valid, score_test``. ``outer_seed`` draws the outer split
  learn/test (test: 10 %, at most 5000 rows), ``inner_seed`` the inner split of the
  learn part train/validation (the same rule); the learner is trained on the first
  ``size_train`` training rows (anchors 16 * 2^(k/2) and the largest), in ``traintime``
  seconds, and scored on (at most 1000 of) those rows, the validation and the test part
  (``size_test`` rows). Scores are rounded to 4 decimals; the accuracy and logloss files
  hold the same rows in the same order (248 datasets), the auc and f1 files the rows of
  166 datasets, mostly binary (scores empty where undefined: all of 201, 299, 1592). Each
  file is grouped by ``openmlid`` (one contiguous block per id, ids in no order).
- ``datasets.csv``: ``openmlid``, ``Name``, 63 OpenML data qualities (spelt as OpenML
  does) and LCDB's ``NumberOfFeaturesAfterBinarization``, for 219 datasets.

Mapping to the knowledge base:

- a run per score and split: validation score -> metric ``error_rate`` (1 - accuracy),
  ``log_loss``, ``one_minus_auc`` (1 - AUC); test score -> ``test_<metric>``, training
  score -> ``train_<metric>``; the f1 file (F1 of the minority class, binary datasets)
  is not read. Complements are rounded to 4 decimals again (the source's precision).
- ``fidelity`` = ``size_train``, ``fold`` = ``outer_seed`` (0-4), ``repeat`` =
  ``inner_seed`` (0-24), ``fit_seconds`` = ``traintime``.
- empty scores (AUC where LCDB could not compute it) are skipped: they are undefined
  metrics, not failed fits (LCDB keeps no record of failed fits).
- one configuration per learner: algorithm ``lcdb:<learner>`` as the files name it,
  params ``{"estimator": <class path>}`` plus the keyword arguments ``computelc.py``
  passes (``kernel`` for the ``SVC_*`` learners); all else is scikit-learn's default of
  the (unrecorded) version LCDB used. These are not the tuned algorithms of
  :mod:`metabo.space.algorithms`.

Chunks. Each dataset's block in each curve file is cut into parts of ``P = chunk_bytes /
3`` bytes (part ``p``: the lines whose first byte lies in ``[start + p P, start + (p + 1)
P)`` of the block); the (dataset, part) pieces, datasets by increasing OpenML id, are
packed greedily into chunks of at most ``chunk_bytes`` bytes summed over the files (the
default 4 MiB gives 119 chunks of at most about 200,000 runs). The blocks are located by
bisection on byte offsets (no full scan), so :meth:`LCDB.n_chunks` is cheap and chunk
``k`` is read by seeking; a piece is parsed from its bytes alone and checked (field
count, types, ranges, learner, dataset id), so a corrupt line raises
:class:`InputDataError` naming the file and line before anything of its chunk is stored.
"""

from __future__ import annotations

import io
import logging
import math
import os
from collections.abc import Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import IO, Any, ClassVar

import numpy as np
import pandas as pd

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

__all__ = ["CURVE_FILES", "LCDB", "LEARNERS", "CurveFile"]

logger = logging.getLogger(__name__)

#: Folder of the data files inside the sdist (and so inside the cache root).
PACKAGE_DIR = "lcdb-0.1.0/lcdb"
#: Default CSV bytes of a chunk, summed over the curve files.
CHUNK_BYTES = 4 << 20
#: Bisection reads intervals at most this long line by line.
_SCAN_BYTES = 1 << 16

_CURVE_COLUMNS = ("openmlid", "learner", "size_train", "size_test", "outer_seed", "inner_seed",
                  "traintime", "score_train", "score_valid", "score_test")
_CURVE_HEADER = ",".join(_CURVE_COLUMNS).encode()
_DTYPES: Mapping[str, Any] = MappingProxyType({
    "openmlid": np.int64, "learner": object, "size_train": np.int64, "size_test": np.int64,
    "outer_seed": np.int64, "inner_seed": np.int64, "traintime": np.float64,
    "score_train": np.float64, "score_valid": np.float64, "score_test": np.float64,
})
#: (score column, metric prefix): validation is the plain metric.
_SPLITS = (("score_valid", ""), ("score_test", "test_"), ("score_train", "train_"))


@dataclass(frozen=True)
class CurveFile:
    """One ``database-<score>.csv`` and the metric its scores become (lower is better)."""

    filename: str
    metric: str
    complement: bool  # value = 1 - score
    upper: float  # largest valid score


#: The curve files read, in the order their runs appear in a chunk.
CURVE_FILES: tuple[CurveFile, ...] = (
    CurveFile("database-accuracy.csv", "error_rate", True, 1.0),
    CurveFile("database-logloss.csv", "log_loss", False, math.inf),
    CurveFile("database-auc.csv", "one_minus_auc", True, 1.0),
)

#: Learner name in the files -> (scikit-learn class, keyword arguments), as ``computelc.py``
#: of lcdb 0.1.0 builds them (note ``SVC_linear`` is ``LinearSVC``).
LEARNERS: Mapping[str, tuple[str, Mapping[str, str]]] = MappingProxyType({
    "SVC_linear": ("sklearn.svm.LinearSVC", {}),
    "SVC_poly": ("sklearn.svm.SVC", {"kernel": "poly"}),
    "SVC_rbf": ("sklearn.svm.SVC", {"kernel": "rbf"}),
    "SVC_sigmoid": ("sklearn.svm.SVC", {"kernel": "sigmoid"}),
    **{name: (name, {}) for name in (
        "sklearn.tree.DecisionTreeClassifier", "sklearn.tree.ExtraTreeClassifier",
        "sklearn.linear_model.LogisticRegression", "sklearn.linear_model.PassiveAggressiveClassifier",
        "sklearn.linear_model.Perceptron", "sklearn.linear_model.RidgeClassifier",
        "sklearn.linear_model.SGDClassifier", "sklearn.neural_network.MLPClassifier",
        "sklearn.discriminant_analysis.LinearDiscriminantAnalysis",
        "sklearn.discriminant_analysis.QuadraticDiscriminantAnalysis",
        "sklearn.naive_bayes.BernoulliNB", "sklearn.naive_bayes.MultinomialNB",
        "sklearn.neighbors.KNeighborsClassifier", "sklearn.ensemble.ExtraTreesClassifier",
        "sklearn.ensemble.RandomForestClassifier", "sklearn.ensemble.GradientBoostingClassifier",
    )},
})
ALGORITHM_PREFIX = "lcdb:"
_LEARNER_DTYPE = pd.CategoricalDtype(list(LEARNERS))
_METRICS = [prefix + spec.metric for spec in CURVE_FILES for _, prefix in _SPLITS]
_METRIC_DTYPE = pd.CategoricalDtype(_METRICS)


@dataclass(frozen=True)
class _Block:
    """Byte range ``[start, end)`` of one dataset's lines in a curve file."""

    start: int
    end: int


class LCDB(MetaDataset):
    """LCDB 0.1.0: learning curves of scikit-learn default learners, training-set size as fidelity.

    ``chunk_bytes`` bounds the CSV bytes of a chunk (see the module docstring); chunk
    numbers depend on it, so it is the source's :attr:`chunking` (a cursor saved with
    another value is not resumed from).
    """

    name: ClassVar[str] = "lcdb"
    artifact: ClassVar[PyPIArtifact] = PyPIArtifact(
        "lcdb", "0.1.0", "lcdb-0.1.0.tar.gz",
        "450ea69b249866298653f718d66a825e3d19a4024dd4ff140b89f2e04d4777ae",
        r"lcdb-0\.1\.0/(LICENSE\.txt|lcdb/(datasets|database-(accuracy|logloss|auc))\.csv)",
    )
    metric: ClassVar[str] = "error_rate"
    summary: ClassVar[str] = (
        "LCDB 0.1.0: learning curves (training-set size as fidelity) of 20 scikit-learn "
        "learners with default hyperparameters on 248 OpenML datasets"
    )

    def __init__(self, root: str | os.PathLike[str], *, chunk_bytes: int = CHUNK_BYTES) -> None:
        super().__init__(root)
        if chunk_bytes < 1:
            raise InputDataError(f"chunk_bytes must be positive, not {chunk_bytes}")
        self.chunk_bytes = chunk_bytes
        self._blocks: dict[str, dict[int, _Block]] | None = None

    @property
    def chunking(self) -> str:
        """How runs are cut into chunks: ``bytes=<chunk_bytes>`` of the curve files."""
        return f"bytes={self.chunk_bytes}"

    # ------------------------------------------------------------------ header
    def datasets(self) -> pd.DataFrame:
        """Every OpenML id with curves; name and sizes from ``datasets.csv`` where it has them.

        ``n_features`` is OpenML's ``NumberOfFeatures`` less the target (as
        :mod:`metabo.ingest.openml` stores it).
        """
        ids = self._dataset_ids()
        table = self._dataset_table().reindex(ids)
        sizes = table.reindex(columns=["NumberOfInstances", "NumberOfFeatures", "NumberOfClasses"])
        whole = {col: pd.to_numeric(sizes[col], errors="coerce").round().astype("Int64") for col in sizes}
        names = table["Name"].astype(object)
        return pd.DataFrame({
            "original_id": [str(i) for i in ids],
            "name": [n if isinstance(n, str) and n else f"openml-{i}"
                     for i, n in zip(ids, names, strict=True)],
            "openml_id": pd.array(ids, dtype="Int64"),
            "n_instances": whole["NumberOfInstances"].array,
            "n_features": (whole["NumberOfFeatures"] - 1).array,
            "n_classes": whole["NumberOfClasses"].where(whole["NumberOfClasses"] > 0).array,
        }, columns=list(DATASET_COLUMNS))

    def meta_features(self) -> pd.DataFrame:
        """The qualities of ``datasets.csv`` (long format) of datasets with curves; empty
        values are left out, so another source may supply them."""
        table = self._dataset_table()
        table = table[table.index.isin(self._dataset_ids())].drop(columns="Name")
        long = table.apply(pd.to_numeric, errors="coerce").stack().rename("value").reset_index()
        long.columns = ["original_id", "name", "value"]
        long = long[np.isfinite(long["value"].to_numpy(np.float64))]
        long["original_id"] = long["original_id"].astype(str)
        return long.reset_index(drop=True)[list(META_FEATURE_COLUMNS)]

    def qualities(self) -> pd.DataFrame:
        """``datasets.csv`` whole: OpenML's qualities of every dataset it lists (curves or
        not), indexed by OpenML id, one column per quality (NaN where empty), no ``Name``."""
        table = self._dataset_table().drop(columns="Name")
        return table.apply(pd.to_numeric, errors="coerce").astype(np.float64)

    def algorithms(self) -> list[AlgorithmInfo]:
        """``lcdb:<learner>`` for each of LCDB's 20 learners (scikit-learn defaults)."""
        return [
            AlgorithmInfo(
                ALGORITHM_PREFIX + learner, "lcdb",
                f"LCDB learner {learner}: {_call(cls, kwargs)} with scikit-learn's defaults "
                "otherwise (not tuned; distinct from metabo's own algorithms)",
            )
            for learner, (cls, kwargs) in LEARNERS.items()
        ]

    def configurations(self) -> pd.DataFrame:
        """One configuration per learner, original id = the learner's name in the files."""
        return pd.DataFrame({
            "original_id": list(LEARNERS),
            "algorithm": [ALGORITHM_PREFIX + learner for learner in LEARNERS],
            "params": [{"estimator": cls, **kwargs} for cls, kwargs in LEARNERS.values()],
        }, columns=list(CONFIGURATION_COLUMNS))

    # ------------------------------------------------------------------ runs
    def n_chunks(self) -> int:
        """How many chunks there are (the curve files' blocks are located once, by bisection)."""
        return len(self._plan())

    def run_chunks(self, start: int = 0) -> Iterator[RunChunk]:
        """Chunks ``start, start + 1, ...`` of the learning-curve runs, read from the curve
        files byte range by byte range."""
        plan = self._plan()
        blocks = self._file_blocks()
        part_bytes = self._part_bytes
        paths = {spec.filename: self._path(spec.filename) for spec in CURVE_FILES}
        with ExitStack() as stack:
            handles = {name: stack.enter_context(path.open("rb")) for name, path in paths.items()}
            for index in range(max(start, 0), len(plan)):
                frames = []
                for openml_id, part in plan[index]:
                    for spec in CURVE_FILES:
                        block = blocks[spec.filename].get(openml_id)
                        if block is None or block.start + part * part_bytes >= block.end:
                            continue
                        begin, data = _read_part(handles[spec.filename], block, part, part_bytes)
                        rows = _parse(paths[spec.filename], spec, data, begin, openml_id)
                        frames.append(_runs(rows, spec))
                runs = pd.concat(frames, ignore_index=True) if frames else _runs(None, CURVE_FILES[0])
                codes, ids = pd.factorize(runs["dataset"], sort=True)
                runs["dataset"] = pd.Categorical.from_codes(codes, categories=[str(i) for i in ids])
                yield RunChunk(index, runs)

    # ------------------------------------------------------------------ internals
    def _path(self, filename: str) -> Path:
        path = self.root / PACKAGE_DIR / filename
        if not path.is_file():
            raise InputDataError(f"{path} is missing; fetch the source again (LCDB.fetch(force=True))")
        return path

    def _file_blocks(self) -> dict[str, dict[int, _Block]]:
        if self._blocks is None:
            self._blocks = {spec.filename: _locate_blocks(self._path(spec.filename)) for spec in CURVE_FILES}
            logger.debug("LCDB blocks in %s: %s", self.root,
                         {name: len(blocks) for name, blocks in self._blocks.items()})
        return self._blocks

    def _dataset_ids(self) -> list[int]:
        return sorted(set().union(*(b.keys() for b in self._file_blocks().values())))

    @property
    def _part_bytes(self) -> int:
        return max(1, self.chunk_bytes // len(CURVE_FILES))

    def _plan(self) -> list[list[tuple[int, int]]]:
        """The (OpenML id, part) pieces of each chunk, in chunk order.

        Pieces in id order are packed greedily: a chunk takes the next piece while its
        bytes (summed over the files) stay within ``chunk_bytes``.
        """
        blocks = self._file_blocks()
        part_bytes = self._part_bytes
        plan: list[list[tuple[int, int]]] = []
        used = self.chunk_bytes
        for openml_id in self._dataset_ids():
            ranges = [(b[openml_id].start, b[openml_id].end) for b in blocks.values() if openml_id in b]
            n_parts = max(1, max(-(-(end - start) // part_bytes) for start, end in ranges))
            for part in range(n_parts):
                size = sum(max(0, min(end - start - part * part_bytes, part_bytes)) for start, end in ranges)
                if used + size > self.chunk_bytes or not plan:
                    plan.append([])
                    used = 0
                plan[-1].append((openml_id, part))
                used += size
        return plan

    def _dataset_table(self) -> pd.DataFrame:
        """``datasets.csv`` indexed by OpenML id (columns: ``Name`` and the qualities)."""
        path = self._path("datasets.csv")
        try:
            table = pd.read_csv(path, dtype={"Name": object})
        except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as e:
            raise InputDataError(f"{path}: unreadable CSV: {e}") from e
        if "openmlid" not in table.columns or "Name" not in table.columns:
            raise InputDataError(f"{path}: no 'openmlid' and 'Name' columns")
        ids = pd.to_numeric(table["openmlid"], errors="coerce")
        bad = ids.isna() | (ids % 1 != 0)
        if bad.any():
            line = int(np.flatnonzero(bad)[0]) + 2
            raise InputDataError(f"{path}: line {line}: openmlid is not an integer")
        if ids.duplicated().any():
            raise InputDataError(f"{path}: openmlid {int(ids[ids.duplicated()].iloc[0])} appears twice")
        return table.drop(columns="openmlid").set_index(pd.Index(ids.astype(np.int64), name="openmlid"))


def _call(cls: str, kwargs: Mapping[str, str]) -> str:
    return f"{cls}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})"


# ---------------------------------------------------------------------------- locating blocks
def _locate_blocks(path: Path) -> dict[int, _Block]:
    """Byte range of each OpenML id's block, found by bisection (the file is grouped by id).

    Bisection only probes lines; a block broken in two that no probe sees is caught
    when its chunk is parsed (every line's id is checked then).
    """
    with path.open("rb") as f:
        header = f.readline().rstrip(b"\r\n")
        if header != _CURVE_HEADER:
            raise InputDataError(
                f"{path}: line 1 is {header[:200]!r}, expected the LCDB header {_CURVE_HEADER!r}"
            )
        first = f.tell()
        size = f.seek(0, os.SEEK_END)
        if size == first:
            return {}
        last = _last_line_start(f, first, size)
        starts = [first]
        _bisect(f, first, _key_at(f, first), last, _key_at(f, last), starts)
        keys = [_key_at(f, start) for start in starts]
    blocks: dict[int, _Block] = {}
    for start, end, key in zip(starts, starts[1:] + [size], keys, strict=True):
        try:
            openml_id = int(key)
        except ValueError:
            raise InputDataError(
                f"{path}: line {_line_number(path, start)}: openmlid {key[:50]!r} is not an integer"
            ) from None
        if openml_id in blocks:
            raise InputDataError(
                f"{path}: the lines of openmlid {openml_id} are not contiguous (lines "
                f"{_line_number(path, blocks[openml_id].start)} and {_line_number(path, start)}); "
                "LCDB files are grouped by openmlid"
            )
        blocks[openml_id] = _Block(start, end)
    return blocks


def _bisect(f: IO[bytes], a: int, key_a: bytes, c: int, key_c: bytes, out: list[int]) -> None:
    """Append to ``out`` the starts of lines in ``(a, c]`` whose id differs from the line
    before (``a`` and ``c`` are line starts), assuming equal ids at both ends mean one block."""
    if key_a == key_c:
        return
    mid = _next_line_start(f, (a + c) // 2) if c - a > _SCAN_BYTES else c
    if mid >= c:  # short interval (or one long line): read it line by line
        f.seek(a)
        offset, previous = a, key_a
        for line in f.read(c - a).split(b"\n")[:-1]:
            key = _key(line)
            if key != previous:
                out.append(offset)
                previous = key
            offset += len(line) + 1
        if key_c != previous:
            out.append(c)
        return
    key_mid = _key_at(f, mid)
    _bisect(f, a, key_a, mid, key_mid, out)
    _bisect(f, mid, key_mid, c, key_c, out)


def _key(line: bytes) -> bytes:
    comma = line.find(b",")
    return line if comma < 0 else line[:comma]


def _key_at(f: IO[bytes], pos: int) -> bytes:
    f.seek(pos)
    return _key(f.readline().rstrip(b"\r\n"))


def _next_line_start(f: IO[bytes], pos: int) -> int:
    """Offset of the first line starting at or after ``pos`` (``pos`` > 0)."""
    f.seek(pos - 1)
    f.readline()
    return f.tell()


def _last_line_start(f: IO[bytes], first: int, size: int) -> int:
    window = _SCAN_BYTES
    while True:
        pos = max(first, size - window)
        f.seek(pos)
        tail = f.read(size - pos)
        newline = tail.rfind(b"\n", 0, len(tail) - 1)
        if newline >= 0:
            return pos + newline + 1
        if pos == first:
            return first
        window *= 4


def _line_number(path: Path, offset: int) -> int:
    """1-based number of the line starting at byte ``offset`` (the header is line 1)."""
    count = 0
    with path.open("rb") as f:
        while offset > 0:
            block = f.read(min(offset, 1 << 20))
            if not block:
                break
            count += block.count(b"\n")
            offset -= len(block)
    return count + 1


# ---------------------------------------------------------------------------- reading chunks
def _read_part(f: IO[bytes], block: _Block, part: int, chunk_bytes: int) -> tuple[int, bytes]:
    """(offset, bytes) of the lines of ``block`` starting in part ``part``'s byte range."""
    lo = block.start + part * chunk_bytes
    hi = min(lo + chunk_bytes, block.end)
    begin = _next_line_start(f, lo) if lo > block.start else lo
    if begin >= hi:
        return begin, b""
    f.seek(begin)
    data = f.read(hi - begin)
    if hi < block.end and not data.endswith(b"\n"):
        data += f.readline()
    return begin, data


def _parse(path: Path, spec: CurveFile, data: bytes, begin: int, openml_id: int) -> pd.DataFrame:
    """The rows of one part, checked; :class:`InputDataError` names the first bad line."""
    def fail(row: int, what: str) -> InputDataError:
        return InputDataError(f"{path}: line {_line_number(path, begin) + row}: {what}")

    if not data:
        return _empty_rows()
    if not data.endswith(b"\n"):
        raise fail(data.count(b"\n"), "the file is truncated (its last line has no end)")
    n_fields = len(_CURVE_COLUMNS)
    if data.count(b",") != (n_fields - 1) * data.count(b"\n"):
        for row, line in enumerate(data.split(b"\n")[:-1]):
            if line.count(b",") != n_fields - 1:
                raise fail(row, f"{line.count(b',') + 1} fields instead of {n_fields}: {line[:200]!r}")
    try:
        rows = pd.read_csv(io.BytesIO(data), header=None, names=list(_CURVE_COLUMNS),
                           dtype={**_DTYPES, "learner": "category"}, keep_default_na=False,
                           na_values=[""], engine="c")
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as e:
        bad = _first_unparsable(data)
        raise fail(bad if bad is not None else 0, f"unreadable values ({e})") from e
    learners = rows["learner"].cat
    known = _LEARNER_DTYPE.categories.get_indexer(learners.categories)
    codes = learners.codes.to_numpy()
    codes = np.where(codes >= 0, known[codes] if len(known) else codes, -1)
    rows["learner"] = pd.Categorical.from_codes(codes, dtype=_LEARNER_DTYPE)
    col = {c: rows[c].to_numpy() for c in _CURVE_COLUMNS if c != "learner"}
    checks = (
        (col["openmlid"] != openml_id, f"openmlid is not {openml_id}: the file is not grouped by openmlid"),
        (codes < 0, "empty or unknown learner (not one of LCDB 0.1.0's)"),
        (col["size_train"] < 1, "size_train below 1"),
        ((col["size_test"] < 0) | (col["outer_seed"] < 0) | (col["inner_seed"] < 0),
         "negative size_test or seed"),
        (col["traintime"] < 0, "negative traintime"),
        *(((col[c] < 0) | (col[c] > spec.upper), f"{c} outside [0, {spec.upper}]") for c, _ in _SPLITS),
    )
    for bad, what in checks:
        if bad.any():
            raise fail(int(np.flatnonzero(bad)[0]), what)
    return rows


def _empty_rows() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=_LEARNER_DTYPE if c == "learner" else t)
                         for c, t in _DTYPES.items()})


def _first_unparsable(data: bytes) -> int | None:
    """Index of the first line whose fields do not parse as LCDB's types (slow; on errors only)."""
    converters = [int if t is np.int64 else float if t is np.float64 else str for t in _DTYPES.values()]
    for row, line in enumerate(data.split(b"\n")[:-1]):
        fields = line.decode("utf-8", errors="replace").rstrip("\r").split(",")
        for convert, text, col in zip(converters, fields, _CURVE_COLUMNS, strict=False):
            if text == "" and (convert is float or col == "learner"):
                continue
            try:
                convert(text)
            except ValueError:
                return row
    return None


def _runs(rows: pd.DataFrame | None, spec: CurveFile) -> pd.DataFrame:
    """The runs of checked curve rows: one per split with a score (``dataset``: the OpenML id)."""
    if rows is None:
        rows = _empty_rows()
    all_scores = [rows[col].to_numpy(np.float64) for col, _ in _SPLITS]
    keeps = [~np.isnan(score) for score in all_scores]
    take = np.concatenate([np.flatnonzero(keep) for keep in keeps])
    scores = np.concatenate([score[keep] for score, keep in zip(all_scores, keeps, strict=True)])
    metrics = [_METRICS.index(prefix + spec.metric) for _, prefix in _SPLITS]
    return pd.DataFrame({
        "dataset": rows["openmlid"].to_numpy(np.int64)[take],
        "configuration": pd.Categorical.from_codes(
            rows["learner"].cat.codes.to_numpy()[take], dtype=_LEARNER_DTYPE),
        "metric": pd.Categorical.from_codes(
            np.repeat(metrics, [int(keep.sum()) for keep in keeps]).astype(np.int8), dtype=_METRIC_DTYPE),
        "value": np.round(1.0 - scores, 4) if spec.complement else scores,
        "fidelity": rows["size_train"].to_numpy(np.float64)[take],
        "fold": rows["outer_seed"].to_numpy(np.int64)[take],
        "repeat": rows["inner_seed"].to_numpy(np.int64)[take],
        "fit_seconds": rows["traintime"].to_numpy(np.float64)[take],
    })
