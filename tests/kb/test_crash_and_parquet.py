"""A process killed mid-ingest leaves no half batch; Parquet export/import is exact."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pandas as pd
import pytest

from metabo.data.dataset import Dataset
from metabo.exceptions import InputDataError, KnowledgeBaseError
from metabo.kb import KnowledgeBase
from metabo.kb.parquet_io import export_parquet, import_parquet
from metabo.kb.schema import TABLE_KEYS, TABLES

CHILD = textwrap.dedent(
    """
    import sys, time, pathlib
    import numpy as np, pandas as pd
    from metabo.kb import KnowledgeBase
    kb = KnowledgeBase(sys.argv[1])
    n = 20000
    batch = pd.DataFrame({"dataset_id": "openml-1", "algorithm": "knn",
        "params": [f'{{"n_neighbors": {i}}}' for i in range(n)],
        "metric": "error_rate", "value": np.linspace(0, 1, n), "source": "child"})
    with kb.transaction():
        kb.add_runs(batch.iloc[: n // 2])
        pathlib.Path(sys.argv[2]).write_text("half")
        time.sleep(60)
        kb.add_runs(batch.iloc[n // 2 :])
    """
)


def _seed_store(path):
    with KnowledgeBase(path) as kb:
        kb.add_algorithms(["knn"])
        kb.register_dataset(name="kr-vs-kp", source="openml", openml_id=1)
        kb.add_runs(pd.DataFrame({"dataset_id": "openml-1", "algorithm": "knn", "params": ['{"n_neighbors": -1}'],
                                  "metric": "error_rate", "value": [0.5], "source": "parent"}))
        return kb.stats()


def test_killed_mid_batch_leaves_store_consistent(tmp_path):
    path = tmp_path / "kb.duckdb"
    before = _seed_store(path)
    marker = tmp_path / "marker"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(path), str(marker)])
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert proc.poll() is None, "child died before writing its batch"
            assert time.monotonic() < deadline, "child never reached the middle of its batch"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    with KnowledgeBase(path) as kb:
        after = kb.stats()
        assert after == before
        assert kb.query("SELECT count(*) AS n FROM runs WHERE source = 'child'").iloc[0, 0] == 0
        # and the store still takes writes
        kb.add_run(dataset_id="openml-1", algorithm="knn", params={"n_neighbors": 2}, metric="error_rate",
                   value=0.3, source="parent")


def _rich_store(path) -> KnowledgeBase:
    kb = KnowledgeBase(path)
    kb.add_algorithms(["knn", "svm_rbf"])
    frame = pd.DataFrame({"a": [1.0, np.nan, 3.0, 4.5], "b": pd.Categorical(["x", "y", None, "x"]),
                          "t": ["p", "q", "p", "q"]})
    ds = Dataset.from_frame(frame, "t", name="tiny", source="test", flags={"lost_decimals": ("a",)})
    kb.add_dataset(ds, {"NumberOfInstances": 4, "ClassEntropy": 1.0, "Undefined": float("nan")})
    kb.register_dataset(name="anneal", source="openml", openml_id=2)
    rng = np.random.default_rng(0)
    runs = pd.DataFrame({
        "dataset_id": rng.choice(["test-tiny", "openml-2"], 300),
        "algorithm": rng.choice(["knn", "svm_rbf"], 300),
        "params": [json.dumps({"k": int(k), "w": float(w), "m": m})
                   for k, w, m in zip(rng.integers(1, 9, 300), rng.random(300), rng.choice(["a", "b"], 300))],
        "metric": "error_rate", "value": rng.random(300), "fold": rng.integers(0, 3, 300),
        "split_seed": rng.integers(0, 2**40, 300), "fit_seconds": rng.random(300) * 10,
        "fidelity": np.where(rng.random(300) < 0.5, np.nan, 100.0),
        "status": rng.choice(["ok", "ok", "crash"], 300), "source": "session:abc",
    })
    runs.loc[runs.status == "crash", "value"] = np.nan
    runs["message"] = np.where(runs.status == "crash", "MemoryError: ünïcode 'quoted'", None)
    kb.add_runs(runs)
    rid = kb.query("SELECT run_id FROM runs ORDER BY run_id LIMIT 1").iloc[0, 0]
    kb.add_predictions(rid, rng.dirichlet(np.ones(3), 17))
    kb.add_session("abc", strategy="gp", dataset_id="test-tiny", settings={"budget": 5})
    kb.set_state("openml:cursor", {"offset": 1000})
    return kb


def _dump(kb: KnowledgeBase) -> dict[str, pd.DataFrame]:
    return {t: kb.query(f"SELECT * FROM {t} ORDER BY {', '.join(TABLE_KEYS[t])}") for t in TABLES}


def test_parquet_round_trip_is_exact(tmp_path):
    with _rich_store(tmp_path / "a.duckdb") as src:
        original = _dump(src)
        counts = export_parquet(src, tmp_path / "export")
    assert counts["runs"] > 0 and counts["predictions"] == 1
    with KnowledgeBase(tmp_path / "b.duckdb") as dst:
        added = import_parquet(dst, tmp_path / "export")
        assert added == counts
        again = import_parquet(dst, tmp_path / "export")
        assert all(v == 0 for v in again.values())
        copy = _dump(dst)
    for table in TABLES:
        pd.testing.assert_frame_equal(original[table], copy[table], check_exact=True, obj=table)


def test_an_export_without_predictions_keeps_everything_else_and_imports(tmp_path):
    with _rich_store(tmp_path / "a.duckdb") as src:
        original = _dump(src)
        counts = export_parquet(src, tmp_path / "export", without=("predictions",))
        with pytest.raises(InputDataError, match="unknown table"):
            export_parquet(src, tmp_path / "other", without=("nope",))
    assert counts["predictions"] == 0 and counts["runs"] == len(original["runs"])
    with KnowledgeBase(tmp_path / "b.duckdb") as dst:
        import_parquet(dst, tmp_path / "export")
        copy = _dump(dst)
    assert copy["predictions"].empty
    for table in TABLES:
        if table != "predictions":
            pd.testing.assert_frame_equal(original[table], copy[table], check_exact=True, obj=table)


def test_the_runs_travel_without_their_ids_which_import_computes_again(tmp_path):
    """The ids are the identity's hash: the export leaves them out, import computes them,
    and the predictions (keyed by run id) still find their runs."""
    with _rich_store(tmp_path / "a.duckdb") as src:
        original = _dump(src)
        export_parquet(src, tmp_path / "export")
    runs = pd.read_parquet(tmp_path / "export" / "runs.parquet")
    assert "run_id" not in runs.columns and len(runs) == len(original["runs"])
    assert json.loads((tmp_path / "export" / "manifest.json").read_text())["derived"] == {"runs": ["run_id"]}
    with KnowledgeBase(tmp_path / "b.duckdb") as dst:
        import_parquet(dst, tmp_path / "export")
        joined = dst.query("SELECT count(*) FROM predictions p JOIN runs r USING (run_id)").iloc[0, 0]
        pd.testing.assert_frame_equal(original["runs"], _dump(dst)["runs"], check_exact=True)
    assert joined == len(original["predictions"]) == 1


def test_ids_that_are_not_the_hash_travel_as_stored_and_older_exports_import(tmp_path):
    """A store whose ids were written by another tool keeps them in the export; an export
    whose manifest names no derived column (before they were left out) imports as before."""
    with _rich_store(tmp_path / "a.duckdb") as src:
        src.connection.execute("UPDATE runs SET run_id = 'foreign-' || run_id WHERE fold = 0")
        src.connection.execute("UPDATE predictions SET run_id = 'foreign-' || run_id "
                               "WHERE run_id NOT IN (SELECT run_id FROM runs)")
        original = _dump(src)
        export_parquet(src, tmp_path / "export")
    manifest_path = tmp_path / "export" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    assert manifest["derived"] == {"runs": []}
    assert "run_id" in pd.read_parquet(tmp_path / "export" / "runs.parquet").columns
    del manifest["derived"]
    manifest_path.write_text(json.dumps(manifest))
    with KnowledgeBase(tmp_path / "b.duckdb") as dst:
        import_parquet(dst, tmp_path / "export")
        copy = _dump(dst)
    for table in TABLES:
        pd.testing.assert_frame_equal(original[table], copy[table], check_exact=True, obj=table)


def test_the_same_store_exports_to_the_same_files(tmp_path):
    with _rich_store(tmp_path / "a.duckdb") as src:
        export_parquet(src, tmp_path / "one")
        export_parquet(src, tmp_path / "two")
    for table in TABLES:
        one, two = (tmp_path / folder / f"{table}.parquet" for folder in ("one", "two"))
        assert one.read_bytes() == two.read_bytes(), table


def test_import_of_truncated_or_foreign_folder_stores_nothing(tmp_path):
    with _rich_store(tmp_path / "a.duckdb") as src:
        export_parquet(src, tmp_path / "export")
    with pytest.raises(InputDataError, match="not a metabo export"):
        with KnowledgeBase(tmp_path / "c.duckdb") as kb:
            import_parquet(kb, tmp_path)
    (tmp_path / "export" / "runs.parquet").write_bytes(b"PAR1 garbage")
    with KnowledgeBase(tmp_path / "d.duckdb") as kb:
        before = kb.stats()
        with pytest.raises((KnowledgeBaseError, InputDataError)) as info:
            import_parquet(kb, tmp_path / "export")
        assert "runs.parquet" in str(info.value) or "import" in str(info.value)
        assert kb.stats() == before
