"""Fixtures of the service tests: a store with one dataset, the app on it (TestClient),
a copy of the shipped knowledge base for warm starts and knowledge queries; ``snap``
gives the whole content of the app's store, to show a refused request changed nothing,
and ``serve_app`` a TestClient on another store or with a token."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from metabo.kb import KnowledgeBase
from metabo.kb.parquet_io import import_parquet
from metabo.service.app import create_app
from metabo.service.settings import ServiceSettings
from metabo.testing.store import snapshot

SHIPPED = Path(__file__).resolve().parents[2] / "data" / "kb"
#: Meta-features of the toy dataset every fresh store holds.
TOY_META = {"NumberOfInstances": 150.0, "NumberOfFeatures": 4.0, "NumberOfClasses": 3.0}
ALGORITHMS = ["knn", "decision_tree"]


def app_snapshot(client: TestClient) -> dict[str, list[tuple]]:
    with client.app.state.manager.store.locked() as kb:  # type: ignore[attr-defined]
        return snapshot(kb)


@pytest.fixture
def snap() -> Callable[[TestClient], dict[str, list[tuple]]]:
    return app_snapshot


@pytest.fixture
def serve_app() -> Callable[..., TestClient]:
    return serve


@pytest.fixture
def kb_path(tmp_path: Path) -> Path:
    """A fresh store holding the dataset ``service-toy`` and its meta-features."""
    path = tmp_path / "kb.duckdb"
    with KnowledgeBase(path) as kb:
        dataset_id = kb.register_dataset(name="toy", source="service")
        kb.add_meta_features(dataset_id, TOY_META)
    return path


def serve(path: Path, token: str | None = None, **settings: Any) -> TestClient:
    """A TestClient of the app on ``path`` (use it as a context manager: it opens the store);
    ``settings``: other :class:`ServiceSettings` fields."""
    return TestClient(create_app(ServiceSettings(kb_path=path, token=token, **settings)))


@pytest.fixture
def client(kb_path: Path) -> Iterator[TestClient]:
    with serve(kb_path) as c:
        yield c


@pytest.fixture
def study(client: TestClient) -> str:
    """A random-search study on the toy dataset over two algorithms."""
    r = client.post("/studies", json={"study_id": "s", "dataset_id": "service-toy", "strategy": "random",
                                      "space": {"algorithms": ALGORITHMS}, "seed": 3})
    assert r.status_code == 201, r.text
    return "s"


@pytest.fixture(scope="session")
def shipped_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped knowledge base imported into a store (copy it before writing)."""
    path = tmp_path_factory.mktemp("shipped") / "kb.duckdb"
    with KnowledgeBase(path) as kb:
        import_parquet(kb, SHIPPED)
    return path


@pytest.fixture
def shipped(shipped_path: Path, tmp_path: Path) -> Path:
    """A writable copy of the shipped store."""
    path = tmp_path / "shipped.duckdb"
    path.write_bytes(shipped_path.read_bytes())
    return path
