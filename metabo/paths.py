"""Where metabo keeps its files by default, and how it writes a file whole or not at all.

The embedded default knowledge base is one DuckDB file. ``METABO_HOME`` moves every
default location at once (tests and CI point it at a temporary folder);
``METABO_KB`` overrides just the knowledge base file.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Literal

from metabo.exceptions import OutputFileError


def metabo_home() -> Path:
    """The folder of metabo's default files: ``$METABO_HOME`` or ``~/.metabo`` (an empty
    ``METABO_HOME`` is unset, not the current folder)."""
    return Path(os.environ.get("METABO_HOME") or Path.home() / ".metabo").expanduser()


def default_kb_path() -> Path:
    """The embedded default knowledge base: ``$METABO_KB`` or ``<home>/metabo.duckdb``."""
    env = os.environ.get("METABO_KB")
    return Path(env).expanduser() if env else metabo_home() / "metabo.duckdb"


def cache_dir(*parts: str) -> Path:
    """A cache folder under ``<home>/cache`` (created on demand by callers)."""
    return metabo_home().joinpath("cache", *parts)


def write_atomic(path: Path, write: Callable[[IO[Any]], object], *, what: str,
                 mode: Literal["w", "wb"] = "wb") -> None:
    """``write(f)`` into a temporary file in ``path``'s folder, synced, then renamed to
    ``path`` (:func:`os.replace`): a failed write (a full disk, a killed process) leaves no
    file at ``path`` and an older one intact. :class:`OutputFileError` naming ``what`` when
    the file cannot be made or written; any other exception of ``write`` passes through,
    the temporary file removed."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise OutputFileError(f"cannot write {what} to {path}: {e.strerror or e}") from e
    try:
        f: IO[Any] = os.fdopen(fd, "wb") if mode == "wb" else os.fdopen(fd, "w", newline="")
        with f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise OutputFileError(f"cannot write {what} to {path}: {e.strerror or e}; nothing was written") from e
        raise
