"""Shared fixtures.

``openml_server``: a started, empty :class:`~metabo.testing.openml_server.FakeOpenMLServer`
on 127.0.0.1 (tests fill it); ``openml_cache``: a throwaway cache directory for the
``openml`` client.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from metabo.testing.openml_server import FakeOpenMLServer


@pytest.fixture
def openml_server() -> Iterator[FakeOpenMLServer]:
    with FakeOpenMLServer() as server:
        yield server


@pytest.fixture
def openml_cache(tmp_path: Path) -> Path:
    return tmp_path / "openml-cache"
