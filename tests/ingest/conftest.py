"""Fixtures of the OpenML ingestion tests.

``server``: the fake OpenML server filled by :func:`add_example_content` (10 runs: 5
setups x tasks 1 and 2, datasets 61 and 62); ``kb``: an empty store; ``ingest``:
:func:`ingest_openml` of tasks 1 and 2 from ``server`` into ``kb``, fast retries;
``snapshot``: every table's rows, to compare a store before and after a failure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from metabo.ingest.openml import IngestReport, ingest_openml
from metabo.ingest.openml_client import RetryPolicy
from metabo.kb import KnowledgeBase
from metabo.kb.schema import TABLES
from metabo.testing.openml_server import FakeOpenMLServer, add_example_content

FAST = RetryPolicy(attempts=3, backoff=0.0)


@pytest.fixture
def server(openml_server: FakeOpenMLServer) -> FakeOpenMLServer:
    add_example_content(openml_server)
    return openml_server


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    with KnowledgeBase(tmp_path / "kb.duckdb") as store:
        yield store


@pytest.fixture
def ingest(server: FakeOpenMLServer, kb: KnowledgeBase, openml_cache: Path) -> Callable[..., IngestReport]:
    def run(**kwargs) -> IngestReport:
        kwargs.setdefault("task_ids", (1, 2))
        kwargs.setdefault("retry", FAST)
        if "server" not in kwargs:
            kwargs["server"] = server.url
        return ingest_openml(kb, cache_dir=openml_cache, **kwargs)

    return run


@pytest.fixture
def snapshot() -> Callable[[KnowledgeBase], dict[str, list[tuple]]]:
    """Every table's rows (sorted, timestamps included) of a store."""

    def take(kb: KnowledgeBase) -> dict[str, list[tuple]]:
        return {
            table: sorted(kb.connection.execute(f"SELECT * FROM {table}").fetchall(), key=repr)  # noqa: S608
            for table in TABLES
        }

    return take
