"""Where metabo keeps its files by default.

The embedded default knowledge base is one DuckDB file. ``METABO_HOME`` moves every
default location at once (tests and CI point it at a temporary folder);
``METABO_KB`` overrides just the knowledge base file.
"""

from __future__ import annotations

import os
from pathlib import Path


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
