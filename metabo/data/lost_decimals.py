"""Lost decimal points in KEEL files: detection, exact repair, and the load policies.

The corruption. Some upstream KEEL files were written by a routine that stripped trailing
zeros and then the decimal point, and printed the rest as a float: 22.08 became 2208
(``2208.0``), 24.50 became 245 and 0.07 became 7 (leading zeros go too). Each corrupted
value is an integer whose last digit is the last significant decimal of the original,
which is never 0; a multiple of 10 survives only where the original was itself an
integer multiple of 10 (30.0 -> 30). :func:`strip_decimal_point` is the corruption.

The statistic (:func:`detect`). A candidate column is one whose every present token is
float-formatted (holds ``.``, ``e`` or ``E``) and integral. For a candidate:

    n_large        number of values with |v| >= 10
    n_large_mult10 number of those that are multiples of 10
    n_distinct     number of distinct values
    f              n_large_mult10 / n_large (0 when n_large = 0)

Genuine integer columns written as floats have f near 0.10 (measured 0.09-0.14 on bupa,
segment, spambase, cleveland, winequality); corrupted ones 0-0.02. A candidate is flagged
when f < MAX_MULTIPLE_OF_10_FRACTION (0.03), n_large >= MIN_LARGE_VALUES and
n_distinct >= MIN_DISTINCT_VALUES (the two minimums keep f meaningful). In a file with a
flagged column, every other candidate with f < 0.03 is flagged too, without the minimums.

The repair (:func:`apply_policy` with ``repair``) restores exact values from a clean
sibling file of the same data (ecoli1.dat for the ecoli subsets). The raw files are read
by the caller's functions, handed in through :class:`SiblingFiles`.
"""

from __future__ import annotations

import itertools
import logging
import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from metabo.exceptions import DataQualityError, InputDataError

logger = logging.getLogger(__name__)

LostDecimalsPolicy = Literal["flag", "repair", "drop", "raise"]
POLICIES: tuple[LostDecimalsPolicy, ...] = ("flag", "repair", "drop", "raise")

# Lost-decimal statistic (see the module docstring). Genuine integer columns written as
# floats have about 10% of their |v| >= 10 values on multiples of 10 (measured 9-14% on
# bupa, segment, spambase, cleveland, winequality); corrupted columns have 0-2%, because
# the corruption only ends a value in 0 when the original was itself an integer
# multiple of 10. 0.03 separates the two; the two minimums keep the fraction meaningful.
MIN_LARGE_VALUES = 20
MIN_DISTINCT_VALUES = 10
MAX_MULTIPLE_OF_10_FRACTION = 0.03
#: Most column mappings tried per sibling file when repairing (C(e, d) of them).
MAX_COLUMN_MAPPINGS = 1000


# ---------------------------------------------------------------------------- detection
@dataclass(frozen=True)
class _IntegralStat:
    """Counts over an all-integral, float-formatted column (``n_large``: |v| >= 10)."""

    n_large: int
    n_large_mult10: int
    n_distinct: int

    @property
    def mult10_fraction(self) -> float:
        return self.n_large_mult10 / self.n_large if self.n_large else 0.0

    @property
    def judgeable(self) -> bool:
        return self.n_large >= MIN_LARGE_VALUES and self.n_distinct >= MIN_DISTINCT_VALUES


def _integral_stat(tokens: list[str], values: np.ndarray | None) -> _IntegralStat | None:
    """The statistic of a raw column whose every token looks like ``2208.0``, else None.

    ``values`` is the parsed column (float64 with NaN where missing when numeric), passed
    in so it is parsed once.
    """
    if values is None or values.dtype != np.float64:
        return None
    values = values[~np.isnan(values)]
    if values.size == 0 or not np.all(values == np.round(values)):
        return None
    if not all("." in t or "e" in t or "E" in t for t in tokens if t):
        return None  # some token is written as an integer: not the corrupting writer
    large = values[np.abs(values) >= 10]
    return _IntegralStat(
        n_large=int(large.size),
        n_large_mult10=int(np.count_nonzero(large % 10 == 0)),
        n_distinct=int(np.unique(values).size),
    )


def detect(columns: Mapping[str, list[str]], values: Mapping[str, np.ndarray]) -> tuple[str, ...]:
    """Names of the columns that look like they lost their decimal points.

    ``columns`` maps a column name to its stripped raw tokens (``""`` where missing) and
    ``values`` maps it to the parsed column. Only columns whose every token is
    float-formatted and integral (``2208.0``) are candidates: the corrupting writer
    printed floats. Such a column is flagged when its values with |v| >= 10 number at
    least ``MIN_LARGE_VALUES``, it has at least ``MIN_DISTINCT_VALUES`` distinct values,
    and fewer than ``MAX_MULTIPLE_OF_10_FRACTION`` of those large values are multiples
    of 10. Rationale: stripping the point makes the last digit the last significant
    decimal, which is never 0, so a multiple of 10 survives only where the original was
    an integer multiple of 10; genuine integer columns sit near 10%.

    In a file with at least one flagged column, every other candidate column whose
    large values (if any) pass the same fraction test is flagged too, without the two
    sample-size minimums: the file is known to be corrupted, and such a column (e.g.
    ecoli's two-valued lip and chg, ``{48, 1}`` and ``{5, 1}``) is too short on evidence
    to clear itself. A candidate with enough evidence and a high fraction stays clean.
    """
    stats = {name: _integral_stat(tokens, values[name]) for name, tokens in columns.items()}
    candidates = {n: s for n, s in stats.items() if s is not None}

    def low_fraction(s: _IntegralStat) -> bool:
        return s.mult10_fraction < MAX_MULTIPLE_OF_10_FRACTION

    if not any(s.judgeable and low_fraction(s) for s in candidates.values()):
        return ()
    return tuple(n for n, s in candidates.items() if low_fraction(s))


def strip_decimal_point(value: float) -> float:
    """The corrupted form of ``value``: 22.08 -> 2208, 24.5 -> 245, 0.07 -> 7, 1.0 -> 1.

    Writes ``value`` in Python's shortest round-trip form without an exponent or trailing
    zeros, then removes the point and the leading zeros (the sign is kept).
    """
    text = np.format_float_positional(value, trim="-")
    sign = -1.0 if text.startswith("-") else 1.0
    digits = text.lstrip("-").replace(".", "").lstrip("0") or "0"
    try:
        return sign * float(int(digits))
    except OverflowError:  # pragma: no cover - needs > 308 digits
        return math.inf


# ---------------------------------------------------------------------------- policies
@dataclass(frozen=True)
class SiblingFiles:
    """The other files of the collection, to repair the corrupted file ``name`` from.

    ``paths`` holds ``(label, path)`` of every other raw file, in search order;
    ``read_raw`` reads one into raw columns, the class last (raising
    :class:`InputDataError` when it cannot); ``parse_column`` parses one raw column.
    """

    name: str
    paths: Sequence[tuple[str, Path]]
    read_raw: Callable[[Path], list[list[str]]]
    parse_column: Callable[[list[str]], np.ndarray]


def apply_policy(
    policy: LostDecimalsPolicy,
    flagged: tuple[str, ...],
    values: dict[str, np.ndarray],
    notes: list[str],
    *,
    label: str,
    siblings: SiblingFiles,
) -> tuple[str, ...]:
    """Apply ``policy`` to the flagged columns (edits ``values`` and ``notes``).

    ``flag`` keeps the columns; ``repair`` restores them from ``siblings`` where it can
    and keeps the rest; ``drop`` removes them; ``raise`` raises
    :class:`DataQualityError`. Returns the columns that stay flagged.
    """
    cols = ", ".join(flagged)
    if policy == "raise":
        raise DataQualityError(
            f"KEEL {label}: columns {cols} lost their decimal points; load it with "
            "lost_decimals='repair' or 'drop'"
        )
    if policy == "drop":
        for col in flagged:
            del values[col]
        if not values:
            raise DataQualityError(
                f"KEEL {label}: every column ({cols}) lost its decimal points; nothing is "
                "left after dropping them"
            )
        notes.append(f"Dropped columns {cols} (lost decimal points).")
        logger.info("KEEL %s: dropped columns %s (lost decimal points)", label, cols)
        return ()
    if policy == "repair":
        repair = _repair_from_siblings(values, flagged, siblings)
        if repair is None:
            notes.append(
                f"Lost decimal points in {cols}: no clean sibling file matches every row, "
                "so nothing was repaired and the columns stay flagged."
            )
        else:
            values.update({c: np.array(v, dtype=np.float64) for c, v in repair.values.items()})
            fixed = ", ".join(repair.values)
            notes.append(f"Repaired lost decimal points in {fixed} exactly from {repair.sibling}.")
            logger.info("KEEL %s: repaired %s from %s", label, fixed, repair.sibling)
            flagged = tuple(c for c in flagged if c not in repair.values)
            if flagged:
                notes.append(
                    f"Columns {', '.join(flagged)} could not be repaired uniquely and stay "
                    "flagged."
                )
        if not flagged:
            return ()
    else:
        notes.append(f"Lost decimal points suspected in {', '.join(flagged)} (flagged).")
    hint = (
        "no clean sibling file can repair them; load with lost_decimals='drop' to train"
        if policy == "repair" else "load with lost_decimals='repair' or 'drop' to train"
    )
    logger.warning(
        "KEEL %s: columns %s lost their decimal points; the dataset is flagged (%s)",
        label, ", ".join(flagged), hint,
    )
    return flagged


# ---------------------------------------------------------------------------- repair
@dataclass(frozen=True)
class _Repair:
    values: dict[str, list]  # repaired column -> its clean values
    sibling: str  # e.g. "imbalanced/ecoli1.dat"


def _family(name: str) -> str:
    """The leading letters of a file name: ``ecoli`` for ecoli1 and ecoli-0-1_vs_5."""
    match = re.match(r"[A-Za-z]+", name)
    return match.group(0).lower() if match else name


def _as_list(values: np.ndarray) -> list:
    """Python values with None for missing (hashable, so NaN cannot break matching)."""
    if values.dtype == np.float64:
        return [None if math.isnan(v) else v for v in values.tolist()]
    return values.tolist()


def _is_numeric(values: Sequence[object]) -> bool:
    return all(v is None or isinstance(v, float) for v in values)


def _clean_siblings(siblings: SiblingFiles) -> Iterator[tuple[str, list[list]]]:
    """(label, parsed feature columns) of the unflagged files of the same family."""
    for label, path in siblings.paths:
        if _family(path.stem) != _family(siblings.name):
            continue
        try:
            tokens = siblings.read_raw(path)
        except InputDataError as e:
            logger.debug("skipping sibling %s: %s", path, e)
            continue
        features = {str(i): col for i, col in enumerate(tokens[:-1])}
        values = {i: siblings.parse_column(col) for i, col in features.items()}
        if detect(features, values):
            continue
        yield label, [_as_list(v) for v in values.values()]


def _repair_from_siblings(
    values: Mapping[str, np.ndarray], flagged: tuple[str, ...], siblings: SiblingFiles
) -> _Repair | None:
    """Restore flagged columns from the clean sibling that matches every row.

    A sibling column ``k`` stands for column ``j`` under an order-preserving mapping of
    columns; a flagged ``j`` is compared with ``strip_decimal_point`` of ``k``, any other
    column with ``k`` itself. Each row must match at least one sibling row; a flagged
    column is repaired when, for every row, all matching sibling rows agree on it.
    Returns the sibling repairing the most columns, or None.
    """
    names = list(values)
    target = [_as_list(values[c]) for c in names]
    is_flagged = [c in flagged for c in names]
    best: _Repair | None = None
    for label, sibling in _clean_siblings(siblings):
        if len(sibling) < len(target) or math.comb(len(sibling), len(target)) > MAX_COLUMN_MAPPINGS:
            continue
        for mapping in itertools.combinations(range(len(sibling)), len(target)):
            fixed = _match_rows(target, [sibling[k] for k in mapping], is_flagged)
            if fixed is not None and (best is None or len(fixed) > len(best.values)):
                best = _Repair({names[j]: fixed[j] for j in sorted(fixed)}, label)
                if len(fixed) == len(flagged):
                    return best
    return best


def _match_rows(
    target: list[list], sibling: list[list], is_flagged: list[bool]
) -> dict[int, list] | None:
    """Repaired values by column index, or None when some target row matches no row."""
    keyed = []
    for j, col in enumerate(sibling):
        if is_flagged[j]:
            if not _is_numeric(col):
                return None
            col = [None if v is None else strip_decimal_point(v) for v in col]
        if not {v for v in target[j] if v is not None} <= set(col):
            return None  # cheap column-level rejection
        keyed.append(col)
    flagged_idx = [j for j, f in enumerate(is_flagged) if f]
    index: dict[tuple, set[tuple]] = defaultdict(set)
    for row, key in enumerate(zip(*keyed, strict=True)):
        index[key].add(tuple(sibling[j][row] for j in flagged_idx))
    repaired: dict[int, list] = {j: [] for j in flagged_idx}
    for key in zip(*target, strict=True):
        candidates = index.get(key)
        if not candidates:
            return None
        for pos, j in enumerate(flagged_idx):
            if j in repaired:
                clean = {c[pos] for c in candidates}
                if len(clean) == 1:
                    repaired[j].append(clean.pop())
                else:
                    del repaired[j]  # ambiguous for this row: leave the column flagged
    return repaired
