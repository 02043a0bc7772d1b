"""The shipped knowledge base is imported into the embedded default store on first use."""

from __future__ import annotations

from metabo.kb import KnowledgeBase
from metabo.kb.parquet_io import export_parquet
from metabo.kb.shipped import load_shipped, shipped_kb_path


def _make_export(folder):
    with KnowledgeBase(":memory:") as src:
        src.add_algorithms(["knn"])
        src.register_dataset(name="anneal", source="openml", openml_id=2)
        src.add_runs([{"dataset_id": "openml-2", "algorithm": "knn", "params": {"n_neighbors": 3},
                       "metric": "error_rate", "value": 0.1, "source": "session:build"}])
        export_parquet(src, folder)


def test_default_store_loads_the_shipped_export_once(tmp_path, monkeypatch):
    _make_export(tmp_path / "shipped")
    monkeypatch.setenv("METABO_SHIPPED_KB", str(tmp_path / "shipped"))
    monkeypatch.setenv("METABO_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("METABO_KB", raising=False)
    assert shipped_kb_path() == tmp_path / "shipped"
    with KnowledgeBase() as kb:
        assert kb.path == tmp_path / "home" / "metabo.duckdb"
        assert kb.stats()["runs"] == 1
        kb.connection.execute("DELETE FROM runs")
        kb.connection.execute("DELETE FROM datasets")
    with KnowledgeBase() as kb:  # emptied by the user: not refilled
        assert kb.stats()["runs"] == 0
        assert load_shipped(kb, force=True)["runs"] == 1


def test_explicit_paths_do_not_load_it(tmp_path, monkeypatch):
    _make_export(tmp_path / "shipped")
    monkeypatch.setenv("METABO_SHIPPED_KB", str(tmp_path / "shipped"))
    with KnowledgeBase(tmp_path / "mine.duckdb") as kb:
        assert kb.stats()["runs"] == 0
    with KnowledgeBase(tmp_path / "other.duckdb", load_shipped=True) as kb:
        assert kb.stats()["runs"] == 1
