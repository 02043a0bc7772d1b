"""Lazy attributes of a package: names looked up in their modules on first use, so that
importing the package stays cheap and a lower package may name what a higher one defines
without importing it (PEP 562's module ``__getattr__``)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``name`` is imported from the module
    ``where[name]`` (relative to ``package`` when it has no dot) and kept in the package's
    namespace; any other name raises :class:`AttributeError`."""

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = where[name] if "." in where[name] else f"{package}.{where[name]}"
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__


__all__ = ["lazy_getattr"]
