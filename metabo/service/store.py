"""One lock around the knowledge base's DuckDB connection, for a threaded server.

A DuckDB connection must not be used by two threads at once, and the service answers
requests on a thread pool. :class:`SerializedStore` wraps a
:class:`~metabo.kb.store.KnowledgeBase`: every method called through it, and every
``transaction()`` block, holds one re-entrant lock. An :class:`~metabo.optimizer.Optimizer`
given the wrapper therefore locks the store only while it writes a trial, not while its
strategy computes a suggestion, so studies suggest in parallel and queries are not held
up by a GP fit. Code that reads the connection directly (``kb.connection``) or calls
library functions with the bare store holds :attr:`SerializedStore.lock` itself
(:meth:`SerializedStore.locked`).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb

    from metabo.kb.store import KnowledgeBase


class SerializedStore:
    """``kb`` with each call and transaction under one lock (module docstring)."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self._kb = kb
        self.lock = threading.RLock()

    @property
    def kb(self) -> KnowledgeBase:
        """The bare store: use it only while holding :attr:`lock`."""
        return self._kb

    @contextmanager
    def locked(self) -> Iterator[KnowledgeBase]:
        """The bare store, the lock held for the block."""
        with self.lock:
            yield self._kb

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """:meth:`KnowledgeBase.transaction` under the lock (nested blocks join the outer one)."""
        with self.lock, self._kb.transaction() as tx:
            yield tx

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._kb, name)
        if not callable(attr):
            return attr

        @functools.wraps(attr)
        def call(*args: Any, **kwargs: Any) -> Any:
            with self.lock:
                return attr(*args, **kwargs)

        return call

    def close(self) -> None:
        """Close the store (after the last request)."""
        with self.lock:
            self._kb.close()

