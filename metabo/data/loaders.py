"""One entry point for every dataset source: :func:`load_dataset`.

Specs: ``sklearn:iris``, ``keel:australian`` or ``keel:imbalanced/ecoli1``,
``rdata:diamonds`` (:mod:`metabo.data.rdatasets`), ``openml:61``, or a path to a CSV,
Parquet or ARFF file (which needs ``target``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from metabo.data.bundled import load_sklearn
from metabo.data.dataset import Dataset
from metabo.data.files import load_file
from metabo.data.keel import load_keel
from metabo.exceptions import InputDataError

SCHEMES = ("sklearn", "keel", "rdata", "openml")


def load_dataset(spec: str, *, target: str | None = None, **kw: Any) -> Dataset:
    """Load the dataset named by ``spec``.

    ``kw`` goes to the source's loader: :func:`~metabo.data.keel.load_keel`
    (``lost_decimals``, ``cache``, ``kind``), :func:`~metabo.data.rdatasets.load_rdata`
    (``cache``), ``load_openml`` (``server``, ``cache_dir``) or
    :func:`~metabo.data.files.load_file` (``name``, ``nominal``, ``fmt``). ``target`` is
    only for files; the other sources know their target.
    """
    scheme, sep, rest = spec.partition(":")
    if sep and scheme in SCHEMES:
        if target is not None:
            raise InputDataError(f"{spec!r}: target= is only for files; {scheme} knows its target")
        if not rest:
            raise InputDataError(f"{spec!r}: name a dataset after '{scheme}:'")
        if scheme == "sklearn":
            if kw:
                raise InputDataError(f"{spec!r}: sklearn datasets take no options ({sorted(kw)})")
            return load_sklearn(rest)
        if scheme == "keel":
            return load_keel(rest, **kw)
        if scheme == "rdata":
            from metabo.data.rdatasets import load_rdata

            return load_rdata(rest, **kw)
        return _load_openml(spec, rest, **kw)
    path = Path(spec).expanduser()
    if sep and len(scheme) > 1 and not path.exists():  # "foo:bar", not "C:\\data.csv"
        raise InputDataError(
            f"unknown dataset source {scheme!r} in {spec!r}; use "
            f"{', '.join(s + ':' for s in SCHEMES)} or a file path"
        )
    if target is None:
        raise InputDataError(f"{spec!r} is a file: name its class column (--target COLUMN on the command line, "
                             "target= in Python)")
    return load_file(path, target, **kw)


def check_spec(spec: str) -> None:
    """Refuse, without loading or downloading anything, a spec that cannot load: an unknown
    source, scikit-learn name or KEEL name (of the pinned collection), an OpenML id that
    is not a positive integer, a file that does not exist or whose format is unknown."""
    scheme, sep, rest = spec.partition(":")
    if sep and scheme in SCHEMES:
        if not rest:
            raise InputDataError(f"{spec!r}: name a dataset after '{scheme}:'")
        if scheme == "sklearn":
            from metabo.data.bundled import list_sklearn

            if rest not in list_sklearn():
                load_sklearn(rest)  # its error names the choices
        elif scheme == "keel":
            from metabo.data.keel import check_keel_name

            check_keel_name(rest)
        elif scheme == "rdata":
            from metabo.data.rdatasets import check_rdata_name

            check_rdata_name(rest)
        else:
            _openml_id(spec, rest)
        return
    path = Path(spec).expanduser()
    if sep and len(scheme) > 1 and not path.exists():
        raise InputDataError(f"unknown dataset source {scheme!r} in {spec!r}; use "
                             f"{', '.join(s + ':' for s in SCHEMES)} or a file path")
    if not path.is_file():
        raise InputDataError(f"no such file: {path}" + (" (a folder)" if path.is_dir() else ""))
    from metabo.data.files import file_format

    file_format(path)


def _openml_id(spec: str, rest: str) -> int:
    try:
        dataset_id = int(rest)
    except ValueError:
        raise InputDataError(f"{spec!r}: an OpenML dataset id is an integer (openml:61)") from None
    if dataset_id <= 0:
        raise InputDataError(f"{spec!r}: OpenML dataset ids are positive")
    return dataset_id


def _load_openml(spec: str, rest: str, **kw: Any) -> Dataset:
    dataset_id = _openml_id(spec, rest)
    from metabo.data.openml_loader import load_openml  # lazy: pulls in the openml client

    return load_openml(dataset_id, **kw)
