"""An interrupt (Ctrl-C) during a query is an interrupt, not a failed query."""

from __future__ import annotations

import threading

import pytest

from metabo.kb import KnowledgeBase


def test_an_interrupted_query_raises_keyboard_interrupt(tmp_path):
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        timer = threading.Timer(0.3, kb.connection.interrupt)  # what DuckDB does on SIGINT
        timer.start()
        try:
            with pytest.raises(KeyboardInterrupt):
                kb.query("SELECT count(*) FROM range(1000000000000) t(i) WHERE i % 7 = 3")
        finally:
            timer.cancel()
        assert kb.query("SELECT 1 AS one")["one"].iloc[0] == 1  # the store is usable after it
