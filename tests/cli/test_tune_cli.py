"""``metabo tune`` on a CSV file: prints the selection and its errors, stores the runs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_iris

from metabo.cli.main import main
from metabo.kb import KnowledgeBase
from metabo.testing.store import snapshot_file


def test_tune_csv_random_search(tmp_path, capsys):
    csv = tmp_path / "iris.csv"
    load_iris(as_frame=True).frame.to_csv(csv, index=False)
    kb_path = str(tmp_path / "kb.duckdb")
    assert main(["kb", "init", kb_path]) == 0  # --kb names an existing store
    code = main(["tune", str(csv), "--target", "target", "--budget", "4", "--strategy", "random",
                 "--algorithms", "knn", "decision_tree", "--seed", "1", "--session", "cli", "--kb", kb_path,
                 "--refit"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "session cli: 4 trials" in out
    assert "validation error_rate: 0." in out and "test error_rate: 0." in out
    assert "refitted on training + validation rows, test error_rate: 0." in out
    assert "model: the selection fitted on every row" in out
    # both on the command's clock: the first model comes after the libraries loaded, before the end
    timing = next(line for line in out.splitlines() if line.startswith("time: "))
    in_all = float(timing.split(" s in all")[0].rsplit(" ", 1)[1])
    first = float(timing.split("first model after ")[1].split()[0])
    assert 0 < first <= in_all
    with KnowledgeBase(kb_path) as kb:
        runs = kb.query("SELECT algorithm, metric, source FROM runs WHERE metric = 'error_rate'")
        n_meta = kb.stats()["meta_features"]
    assert len(runs) == 4 * 5 and set(runs["source"]) == {"session:cli"}  # iris: 5-fold cross-validated trials
    assert set(runs["algorithm"]) <= {"knn", "decision_tree"} and n_meta > 0

    code = main(["tune", str(csv), "--target", "target", "--budget", "2", "--strategy", "random",
                 "--algorithms", "knn", "--session", "cli", "--kb", kb_path])
    _, err = capsys.readouterr()
    assert code == 2 and "another search space" in err


def test_first_model_is_counted_once_from_the_process_start_under_a_time_budget(tmp_path, capsys, monkeypatch):
    """The time budget's clock starts with the process (its imports count): the first model
    is timed on that clock, not on it plus the time before ``tune`` was called."""
    import time

    from metabo.cli import tune_cmds

    csv = tmp_path / "iris.csv"
    load_iris(as_frame=True).frame.to_csv(csv, index=False)
    kb_path = str(tmp_path / "kb.duckdb")
    assert main(["kb", "init", kb_path]) == 0
    monkeypatch.setattr(tune_cmds, "process_start", lambda: time.monotonic() - 100.0)  # a slow start
    code = main(["tune", str(csv), "--target", "target", "--budget", "2", "--time-budget", "400", "--strategy",
                 "random", "--algorithms", "knn", "--kb", kb_path])
    out, err = capsys.readouterr()
    assert code == 0, err
    timing = next(line for line in out.splitlines() if line.startswith("time: "))
    in_all = float(timing.split(" s in all")[0].rsplit(" ", 1)[1])
    first = float(timing.split("first model after ")[1].split()[0])
    assert 100.0 <= first <= in_all < 200.0


def test_opening_none_leaves_the_first_trial_to_the_strategy(tmp_path, capsys):
    csv = tmp_path / "iris.csv"
    load_iris(as_frame=True).frame.to_csv(csv, index=False)
    kb_path = str(tmp_path / "kb.duckdb")
    assert main(["kb", "init", kb_path]) == 0
    first = {}
    for opening in ("auto", "none"):
        code = main(["tune", str(csv), "--target", "target", "--budget", "2", "--time-budget", "600", "--strategy",
                     "random", "--algorithms", "lightgbm", "knn", "--seed", "3", "--session", opening, "--kb", kb_path,
                     "--opening", opening, "--ensemble", "none"])
        assert code == 0, capsys.readouterr().err
        with KnowledgeBase(kb_path) as kb:
            first[opening] = kb.query("SELECT c.params FROM runs r JOIN configurations c USING (config_id) "
                                      "WHERE r.source = ? AND r.metric = 'error_rate' ORDER BY r.created_at, r.run_id "
                                      "LIMIT 1", [f"session:{opening}"])["params"].iloc[0]
    assert '"n_estimators":10,"num_leaves":8' in first["auto"].replace(" ", "")
    assert '"n_estimators":10,"num_leaves":8' not in first["none"].replace(" ", "")


@pytest.mark.parametrize("column, words", [
    ("one", "the target 'y' has one class ('x' in all 40 rows): a classifier needs at least two"),
    ("numbers", "the target 'y' holds 40 distinct numbers, a regression target"),
    ("lonely", "only one of them with two rows or more"),
    ("unique", "has 40 classes but none of them with two rows or more (rows per class: "),
    ("unique", ", and 35 more of one row): too few rows to split"),
])
def test_data_that_cannot_be_tuned_is_refused_in_one_line_before_anything_is_stored(tmp_path, capsys, column,
                                                                                      words):
    rng = np.random.default_rng(0)
    y = {"one": ["x"] * 40, "numbers": rng.normal(size=40), "lonely": ["a"] * 39 + ["b"],
         "unique": [f"c{i}" for i in range(40)]}[column]
    csv = tmp_path / "d.csv"
    pd.DataFrame({"a": rng.normal(size=40), "y": y}).to_csv(csv, index=False)
    kb_path = tmp_path / "kb.duckdb"
    assert main(["kb", "init", "--kb", str(kb_path)]) == 0
    before = snapshot_file(kb_path)
    capsys.readouterr()
    assert main(["tune", str(csv), "--target", "y", "--budget", "2", "--kb", str(kb_path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.strip() == f"error: {err.strip()[7:]}" and words in err
    assert len(err.strip().splitlines()) == 1
    assert snapshot_file(kb_path) == before


def test_resume_counts_from_the_stored_trials_and_a_new_run_points_to_the_interrupted_one(tmp_path, capsys):
    csv = tmp_path / "iris.csv"
    load_iris(as_frame=True).frame.to_csv(csv, index=False)
    kb_path = tmp_path / "kb.duckdb"
    assert main(["kb", "init", str(kb_path)]) == 0
    base = ["tune", str(csv), "--target", "target", "--strategy", "random", "--algorithms", "knn", "--kb",
            str(kb_path)]
    assert main([*base, "--budget", "2", "--session", "first"]) == 0
    with KnowledgeBase(kb_path) as kb:  # as a killed process leaves it: running, its owner gone
        kb.connection.execute("UPDATE sessions SET status = 'running' WHERE session_id = 'first'")
        kb.set_state("session-owner:first", {"host": __import__("socket").gethostname(), "pid": 2 ** 22 + 12345})
    capsys.readouterr()
    assert main([*base, "--budget", "1"]) == 0
    out = capsys.readouterr().out
    assert "note: session first on this dataset was interrupted after 2 trials" in out
    assert "--resume first" in out
    assert main([*base, "--budget", "3", "--resume", "first"]) == 0
    out, err = capsys.readouterr()
    assert "session first: 3 trials" in out and "3/3" in err and "0/3" not in err


@pytest.mark.slow
def test_the_model_files_writer_is_loaded_after_the_opening_and_before_the_search(tmp_path):
    """skops (about a second to import) is not on the way to the first model: in a fresh
    process, it is not loaded when the opening trial starts and is loaded by the time the
    search's first trial is asked, so saving the model costs nothing past the budget."""
    import subprocess
    import sys

    csv = tmp_path / "iris.csv"
    load_iris(as_frame=True).frame.to_csv(csv, index=False)
    kb_path = str(tmp_path / "kb.duckdb")
    assert main(["kb", "init", kb_path]) == 0
    code = f"""
import importlib, sys
tune = importlib.import_module("metabo.tuning.tune")
from metabo.optimizer.optimizer import Optimizer
seen = {{}}
real_open, real_ask = tune._open, Optimizer.ask
def spy_open(*a, **k):
    seen.setdefault("opening", "skops.io" in sys.modules)
    return real_open(*a, **k)
def spy_ask(self, *a, **k):
    if not k.get("config"):
        seen.setdefault("search", "skops.io" in sys.modules)
    return real_ask(self, *a, **k)
tune._open, Optimizer.ask = spy_open, spy_ask
from metabo.cli.main import main
code = main(["tune", {str(csv)!r}, "--target", "target", "--budget", "2", "--time-budget", "300",
             "--strategy", "random", "--algorithms", "lightgbm", "knn", "--kb", {kb_path!r},
             "--save-model", {str(tmp_path / "m.skops")!r}])
print("SEEN", seen["opening"], seen["search"], code)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    line = next((x for x in out.stdout.splitlines() if x.startswith("SEEN")), None)
    assert line == "SEEN False True 0", out.stdout[-2000:] + out.stderr[-2000:]
    assert (tmp_path / "m.skops").exists()
