"""Local CSV, Parquet and ARFF files as :class:`Dataset` objects (source ``file``).

The format comes from the extension (``.csv`` or ``.arff``, also compressed as
``.csv.gz``, ``.arff.gz`` and the like; ``.parquet`` / ``.pq``) unless ``fmt`` names it.
In CSV and ARFF, ``?`` is a missing value. ARFF nominal attributes become nominal
columns (a ``?`` in a nominal declaration, as in OpenML's ``{?,FEMALE,MALE,_}``, is the
missing marker, not a category); in CSV and Parquet, text, boolean and categorical
columns do (see :meth:`Dataset.from_frame`). ARFF STRING attributes become nominal
columns too, listed in :attr:`Dataset.string_columns` (OpenML counts them as features
that are neither numeric nor symbolic).
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import logging
import lzma
import os
import re
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import IO, Literal

import arff
import pandas as pd

from metabo.data.dataset import Dataset
from metabo.exceptions import InputDataError

logger = logging.getLogger(__name__)

FileFormat = Literal["csv", "parquet", "arff"]

_SUFFIXES: Mapping[str, FileFormat] = MappingProxyType(
    {".csv": "csv", ".tsv": "csv", ".parquet": "parquet", ".pq": "parquet", ".arff": "arff"}
)
_COMPRESSIONS = frozenset({".gz", ".bz2", ".zip", ".xz", ".zst"})
#: Compressions the ARFF reader opens, and the CSV dialect check (pandas opens every one of
#: _COMPRESSIONS for CSV; a .zip or .zst CSV is read as comma-separated).
_ARFF_OPENERS: Mapping[str, Callable[..., IO[str]]] = MappingProxyType(
    {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
)


@dataclass(frozen=True)
class Table:
    """A file's table and what its format declares: nominal and STRING columns (ARFF)."""

    frame: pd.DataFrame
    nominal: tuple[str, ...] = ()
    string: tuple[str, ...] = ()


def load_file(
    path: str | os.PathLike[str],
    target: str,
    *,
    name: str | None = None,
    nominal: list[str] | None = None,
    fmt: FileFormat | None = None,
    ignore: Sequence[str] | None = None,
) -> Dataset:
    """Load a table whose column ``target`` is the target.

    Args:
        path: the file.
        target: the target column's name.
        name: the dataset name (default: the file name without its extensions).
        nominal: columns to treat as nominal even if they hold numbers.
        fmt: ``csv``, ``parquet`` or ``arff``; default from the extension.
        ignore: columns to leave out, such as an identifier (OpenML's
            ``ignore_attribute``, e.g. zoo's ``animal``).

    Raises :class:`InputDataError` for a missing file, an unknown format, a file the
    parser rejects, a missing target column, or an ``ignore`` name that is not a column
    (or is the target).
    """
    path = Path(path)
    fmt = _format(path, fmt)
    table = _read(path, fmt)
    frame = table.frame
    if target not in frame.columns:
        raise InputDataError(
            f"{path}: no target column {target!r}; the columns are {list(frame.columns)[:20]}"
        )
    dropped = _ignored(path, frame, target, ignore)
    frame = frame.drop(columns=dropped)
    declared = set(table.nominal) | set(table.string)
    return Dataset.from_frame(
        frame,
        target,
        name=name or _stem(path),
        source="file",
        nominal=sorted((set(nominal or ()) | declared) - set(dropped)),
        string_columns=tuple(c for c in table.string if c not in set(dropped) and c != target),
        description=f"{fmt} file {path}" + (f" without columns {dropped}" if dropped else ""),
    )


def read_table(path: str | os.PathLike[str], fmt: FileFormat | None = None) -> tuple[pd.DataFrame, list[str]]:
    """The table in ``path`` as read for :func:`load_file` (no target needed: rows to
    predict on) and the columns its format declares nominal (ARFF nominal and STRING)."""
    table = _read(Path(path), fmt)
    return table.frame, [*table.nominal, *table.string]


def _read(path: Path, fmt: FileFormat | None) -> Table:
    fmt = _format(path, fmt)
    if not path.is_file():
        raise InputDataError(f"no such file: {path}")
    return _READERS[fmt](path)


def _ignored(path: Path, frame: pd.DataFrame, target: str, ignore: Sequence[str] | None) -> list[str]:
    """The columns of ``ignore`` (checked: existing, not the target), in table order."""
    if ignore is None:
        return []
    if isinstance(ignore, str):
        ignore = [ignore]
    unknown = sorted(set(ignore) - set(frame.columns))
    if unknown:
        raise InputDataError(
            f"{path}: cannot ignore {unknown}: no such columns; the columns are {list(frame.columns)[:20]}"
        )
    if target in set(ignore):
        raise InputDataError(f"{path}: the target column {target!r} cannot be ignored")
    return [c for c in frame.columns if c in set(ignore)]


def file_format(path: str | os.PathLike[str]) -> FileFormat:
    """The format of ``path`` by its extension (:class:`InputDataError` if unknown)."""
    return _format(Path(path), None)


def _format(path: Path, fmt: str | None) -> FileFormat:
    if fmt is not None:
        if fmt not in _SUFFIXES.values():
            raise InputDataError(f"unknown file format {fmt!r}; use csv, parquet or arff")
        return fmt  # type: ignore[return-value]
    suffixes = [s.lower() for s in path.suffixes]
    if len(suffixes) >= 2 and suffixes[-1] in _COMPRESSIONS and suffixes[-2] in (".csv", ".tsv"):
        return "csv"
    if len(suffixes) >= 2 and suffixes[-1] in _ARFF_OPENERS and suffixes[-2] == ".arff":
        return "arff"
    if suffixes and suffixes[-1] in _SUFFIXES:
        return _SUFFIXES[suffixes[-1]]
    raise InputDataError(
        f"cannot tell the format of {path.name!r} from its extension; use .csv (or .tsv), .parquet, "
        ".pq or .arff (.csv, .tsv and .arff also compressed, e.g. .csv.gz), or pass "
        "fmt='csv' | 'parquet' | 'arff'"
    )


def _stem(path: Path) -> str:
    name = path.name
    while Path(name).suffix.lower() in _SUFFIXES.keys() | _COMPRESSIONS:
        name = name[: -len(Path(name).suffix)]
    return name or path.name


#: The separators a CSV file may use, in order of preference on a tie.
CSV_SEPARATORS = (",", ";", "\t", "|")


def csv_dialect(sample: str) -> tuple[str, str]:
    """``(separator, decimal mark)`` of a CSV file from its first characters ``sample``:
    the separator of :data:`CSV_SEPARATORS` that occurs most often in the header line
    (``,`` on a tie or none), and ``,`` as the decimal mark for ``;``-separated files whose
    numbers are written ``1,5`` (and none ``1.5``), as spreadsheets in many locales save them."""
    header = next((line for line in sample.splitlines() if line.strip()), "")
    counts = {s: header.count(s) for s in CSV_SEPARATORS}
    sep = max(CSV_SEPARATORS, key=lambda s: (counts[s], -CSV_SEPARATORS.index(s)))
    sep = sep if counts[sep] else ","
    body = sample[len(header):]
    decimal = "," if sep == ";" and re.search(r"\d,\d", body) and not re.search(r"\d\.\d", body) else "."
    return sep, decimal


def _read_csv(path: Path) -> Table:
    try:
        opener = _ARFF_OPENERS.get(path.suffix.lower())
        sample = ""
        if path.suffix.lower() in _COMPRESSIONS and opener is None:  # read whole by pandas: not sniffed
            sep, decimal = ("\t" if path.with_suffix("").suffix.lower() == ".tsv" else ","), "."
        else:
            with (opener or open)(path, "rt", encoding="utf-8", errors="replace") as f:
                sample = f.read(65536)
            sep, decimal = csv_dialect(sample)
        frame = pd.read_csv(path, na_values=["?"], skipinitialspace=True, sep=sep, decimal=decimal)
        header = _header(path, sample, sep)
    except UnicodeDecodeError as e:
        raise InputDataError(f"cannot read CSV file {path}: it is not UTF-8 text (byte {e.object[e.start]:#04x} at "
                             f"position {e.start}); is it a CSV file?") from e
    except ImportError as e:  # pandas reads .zst with the optional zstandard package
        raise InputDataError(f"cannot read CSV file {path}: its compression needs a package that is not "
                             f"installed ({str(e).splitlines()[0][:80]}); or decompress the file first") from e
    except (pd.errors.ParserError, pd.errors.EmptyDataError, OSError, ValueError, *_BROKEN_ARCHIVE) as e:
        raise InputDataError(f"cannot read CSV file {path}: {e or type(e).__name__}") from e
    frame = _numbers_written_as_text(frame, path)
    twice = header[header.duplicated()].unique().tolist()
    if twice and len(header) == frame.shape[1]:  # pandas renames the later ones "name.1", "name.2", ...
        renamed = [f"{a!r} as {b!r}" for a, b in zip(header, frame.columns) if a != b]
        logger.warning("%s: the header names %s more than once; read %s", path, ", ".join(map(repr, twice[:5])),
                       ", ".join(renamed[:5]) + (" and more" if len(renamed) > 5 else ""))
    return Table(frame)


#: A number written with a decimal comma (``0,125``, ``-3,5``, ``2,5e-3``) or as an integer.
_DECIMAL_COMMA = re.compile(r"[+-]?(?:\d+|\d*,\d+(?:[eE][+-]?\d+)?)")
#: A number whose thousands are grouped by commas (``1,234``, ``-12,345,678.5``) or without any.
_THOUSANDS = re.compile(r"[+-]?(?:[1-9]\d{0,2}(?:,\d{3})+|\d+)(?:\.\d+)?")
#: One comma before three digits (``1,234``): a thousands group or three decimals.
_EITHER = re.compile(r"[+-]?[1-9]\d{0,2},\d{3}")


def _numbers_written_as_text(frame: pd.DataFrame, path: Path) -> pd.DataFrame:
    """``frame`` with its text columns of numbers read as numbers: a column whose every
    value is a number written with a decimal comma (``"0,125"``, quoted in a comma-separated
    file, as spreadsheets of many locales export them) or with thousands grouped by commas
    (``"12,345.5"``). Read as text such a column would be nominal, one level per value.

    A column whose commas all stand before exactly three digits (``"1,234"``) could be
    either; it is read as numbers only when another of its values decides (``"1,5"``, a
    decimal comma; ``"1,234,567"`` or ``"1,234.5"``, thousands), and left as text with a
    warning otherwise. The same rules read the rows given to ``metabo predict``."""
    out = frame
    for column in frame.columns:
        values = frame[column]
        if values.dtype != object and not pd.api.types.is_string_dtype(values):
            continue
        present = values.dropna()
        head = present.iloc[:200].astype(str).str.strip()
        if head.empty or not (head.str.fullmatch(_DECIMAL_COMMA) | head.str.fullmatch(_THOUSANDS)).all():
            continue  # a column of words fails on its first values: the rest is not read
        text = present.astype(str).str.strip()
        commas = text.str.contains(",", regex=False)
        if not commas.any():
            continue
        either = text[commas].str.fullmatch(_EITHER).all()  # every comma stands before three digits
        undecided = either and not text.str.contains(".", regex=False).any()  # and no decimal point decides
        if text.str.fullmatch(_DECIMAL_COMMA).all() and not either:
            numbers, how = text.str.replace(",", ".", regex=False), "a decimal comma"
        elif text.str.fullmatch(_THOUSANDS).all() and not undecided:
            numbers, how = text.str.replace(",", "", regex=False), "commas grouping the thousands"
        else:
            if either:
                logger.warning("%s: column %r holds numbers like %r, with a comma that may group thousands or mark "
                               "decimals; read as text (nominal). Write them without the comma to read them as "
                               "numbers", path, column, text[commas].iloc[0])
            continue
        if out is frame:
            out = frame.copy()
        out[column] = pd.to_numeric(numbers, errors="raise").reindex(values.index)
        logger.info("%s: column %r read as numbers written with %s (e.g. %r)", path, column, how,
                    text[commas].iloc[0])
    return out


def _header(path: Path, sample: str, sep: str) -> pd.Series:
    """The header's names as written (before pandas renames repeated ones): from the
    sniffed sample when it holds the whole first line, else from the file's first row."""
    if "\n" in sample:
        return pd.Series(next(csv.reader(io.StringIO(sample), delimiter=sep, skipinitialspace=True)))
    return pd.read_csv(path, header=None, nrows=1, dtype=str, skipinitialspace=True, sep=sep).iloc[0]


#: What a truncated or corrupt compressed file raises besides OSError (gzip and bz2's).
_BROKEN_ARCHIVE = (EOFError, lzma.LZMAError, zipfile.BadZipFile)


def _read_parquet(path: Path) -> Table:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
        nested = [f.name for f in schema if pa.types.is_nested(f.type)]
        if nested:  # a list or struct per cell is no feature a classifier takes
            raise InputDataError(f"cannot read Parquet file {path}: the columns {nested[:10]} hold lists or "
                                 "structs; give one value per cell (flatten them first)")
        frame = pd.read_parquet(path)
    except (pa.ArrowException, OSError, ValueError) as e:
        if isinstance(e, InputDataError):
            raise
        raise InputDataError(f"cannot read Parquet file {path}: {e}") from e
    return Table(frame)


def _read_arff(path: Path) -> Table:
    """Float64 numeric columns, Categorical nominal ones (declared categories in declared
    order, ``?`` left out: liac-arff reads it as None) and object STRING ones."""
    opener = _ARFF_OPENERS.get(path.suffix.lower())
    try:
        with (opener(path, "rt", encoding="utf-8") if opener else path.open(encoding="utf-8")) as f:
            doc = arff.load(f)
    except (arff.ArffException, UnicodeDecodeError, OSError, ValueError, *_BROKEN_ARCHIVE) as e:
        raise InputDataError(f"cannot read ARFF file {path}: {e}") from e
    columns: dict[str, pd.Series] = {}
    nominal: list[str] = []
    string: list[str] = []
    rows = doc["data"]
    for i, (attr, kind) in enumerate(doc["attributes"]):
        values = [row[i] for row in rows]
        if attr in columns:
            raise InputDataError(f"ARFF file {path} declares attribute {attr!r} twice")
        if isinstance(kind, list):
            categories = list(dict.fromkeys(c for c in kind if c is not None))
            columns[attr] = pd.Series(pd.Categorical(values, categories=categories))
            nominal.append(attr)
        elif str(kind).upper() in {"NUMERIC", "REAL", "INTEGER"}:
            columns[attr] = pd.Series(values, dtype="float64")
        else:  # STRING
            columns[attr] = pd.Series(values, dtype=object)
            string.append(attr)
    frame = pd.DataFrame(columns, index=pd.RangeIndex(len(rows)))
    return Table(frame, tuple(nominal), tuple(string))


_READERS: Mapping[str, Callable[[Path], Table]] = MappingProxyType(
    {"csv": _read_csv, "parquet": _read_parquet, "arff": _read_arff}
)
