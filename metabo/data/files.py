"""Local CSV, Parquet and ARFF files as :class:`Dataset` objects (source ``file``).

The format comes from the extension (``.csv``, also compressed as ``.csv.gz`` and the
like; ``.parquet`` / ``.pq``; ``.arff``) unless ``fmt`` names it. In CSV and ARFF, ``?``
is a missing value. ARFF nominal attributes become nominal columns; in CSV and Parquet,
text, boolean and categorical columns do (see :meth:`Dataset.from_frame`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Literal

import arff
import pandas as pd

from metabo.data.dataset import Dataset
from metabo.exceptions import InputDataError

FileFormat = Literal["csv", "parquet", "arff"]

_SUFFIXES: Mapping[str, FileFormat] = MappingProxyType(
    {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".arff": "arff"}
)
_COMPRESSIONS = frozenset({".gz", ".bz2", ".zip", ".xz", ".zst"})


def load_file(
    path: str | os.PathLike[str],
    target: str,
    *,
    name: str | None = None,
    nominal: list[str] | None = None,
    fmt: FileFormat | None = None,
) -> Dataset:
    """Load a table whose column ``target`` is the target.

    Args:
        path: the file.
        target: the target column's name.
        name: the dataset name (default: the file name without its extensions).
        nominal: columns to treat as nominal even if they hold numbers.
        fmt: ``csv``, ``parquet`` or ``arff``; default from the extension.

    Raises :class:`InputDataError` for a missing file, an unknown format, a file the
    parser rejects, or a missing target column.
    """
    path = Path(path)
    frame, declared_nominal = read_table(path, fmt)
    if target not in frame.columns:
        raise InputDataError(
            f"{path}: no target column {target!r}; the columns are {list(frame.columns)[:20]}"
        )
    return Dataset.from_frame(
        frame,
        target,
        name=name or _stem(path),
        source="file",
        nominal=sorted(set(nominal or ()) | set(declared_nominal)),
        description=f"{fmt} file {path}",
    )


def read_table(path: str | os.PathLike[str], fmt: FileFormat | None = None) -> tuple[pd.DataFrame, list[str]]:
    """The table in ``path`` as read for :func:`load_file` (no target needed: rows to
    predict on) and the columns its format declares nominal (ARFF)."""
    path = Path(path)
    fmt = _format(path, fmt)
    if not path.is_file():
        raise InputDataError(f"no such file: {path}")
    return _READERS[fmt](path)


def _format(path: Path, fmt: str | None) -> FileFormat:
    if fmt is not None:
        if fmt not in _SUFFIXES.values():
            raise InputDataError(f"unknown file format {fmt!r}; use csv, parquet or arff")
        return fmt  # type: ignore[return-value]
    suffixes = [s.lower() for s in path.suffixes]
    if len(suffixes) >= 2 and suffixes[-1] in _COMPRESSIONS and suffixes[-2] == ".csv":
        return "csv"
    if suffixes and suffixes[-1] in _SUFFIXES:
        return _SUFFIXES[suffixes[-1]]
    raise InputDataError(
        f"cannot tell the format of {path.name!r} from its extension; use .csv, .parquet, "
        ".pq or .arff, or pass fmt='csv' | 'parquet' | 'arff'"
    )


def _stem(path: Path) -> str:
    name = path.name
    while Path(name).suffix.lower() in _SUFFIXES.keys() | _COMPRESSIONS:
        name = name[: -len(Path(name).suffix)]
    return name or path.name


def _read_csv(path: Path) -> tuple[pd.DataFrame, list[str]]:
    try:
        frame = pd.read_csv(path, na_values=["?"], skipinitialspace=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError,
            OSError, ValueError) as e:
        raise InputDataError(f"cannot read CSV file {path}: {e}") from e
    return frame, []


def _read_parquet(path: Path) -> tuple[pd.DataFrame, list[str]]:
    import pyarrow as pa

    try:
        frame = pd.read_parquet(path)
    except (pa.ArrowException, OSError, ValueError) as e:
        raise InputDataError(f"cannot read Parquet file {path}: {e}") from e
    return frame, []


def _read_arff(path: Path) -> tuple[pd.DataFrame, list[str]]:
    """A frame with float64 numeric and Categorical nominal (declared order) columns."""
    try:
        with path.open(encoding="utf-8") as f:
            doc = arff.load(f)
    except (arff.ArffException, UnicodeDecodeError, OSError, ValueError) as e:
        raise InputDataError(f"cannot read ARFF file {path}: {e}") from e
    columns: dict[str, pd.Series] = {}
    nominal: list[str] = []
    rows = doc["data"]
    for i, (attr, kind) in enumerate(doc["attributes"]):
        values = [row[i] for row in rows]
        if attr in columns:
            raise InputDataError(f"ARFF file {path} declares attribute {attr!r} twice")
        if isinstance(kind, list):
            columns[attr] = pd.Series(pd.Categorical(values, categories=kind))
            nominal.append(attr)
        elif str(kind).upper() in {"NUMERIC", "REAL", "INTEGER"}:
            columns[attr] = pd.Series(values, dtype="float64")
        else:  # STRING
            columns[attr] = pd.Series(values, dtype=object)
            nominal.append(attr)
    return pd.DataFrame(columns, index=pd.RangeIndex(len(rows))), nominal


_READERS: Mapping[str, Callable[[Path], tuple[pd.DataFrame, list[str]]]] = MappingProxyType(
    {"csv": _read_csv, "parquet": _read_parquet, "arff": _read_arff}
)
