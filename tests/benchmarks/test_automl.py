"""The AutoML benchmark: the held-out knowledge base, the split, resumption, the summary's
ranks, head-to-head counts and overruns on hand-made results, and the Optuna peer."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from benchmarks import automl
from metabo.data.dataset import Dataset
from metabo.exceptions import InputDataError, UnknownDatasetError
from metabo.kb import KnowledgeBase

# ----------------------------------------------------------------- held-out knowledge base
OWNED = {  # table -> the column naming the dataset a row belongs to
    "datasets": "dataset_id", "meta_features": "dataset_id", "runs": "dataset_id", "sessions": "dataset_id",
    "surrogate_bank": "task", "source_ids": "local_id",
}


def _dataset(name: str, shift: float) -> Dataset:
    frame = pd.DataFrame({"a": np.arange(10.0) + shift, "y": ["p", "q"] * 5})
    return Dataset.from_frame(frame, "y", name=name, source="test")


def _owned_rows(path) -> dict[str, pd.Series]:
    with KnowledgeBase(path, read_only=True) as kb:
        out = {t: kb.query(f"SELECT {c} AS d FROM {t} ORDER BY ALL")["d"] for t, c in OWNED.items()}
        out["predictions"] = kb.query("SELECT r.dataset_id AS d FROM predictions p JOIN runs r USING (run_id) "
                                      "ORDER BY ALL")["d"]
        out["orphan_predictions"] = kb.query("SELECT count(*) AS n FROM predictions WHERE run_id NOT IN "
                                             "(SELECT run_id FROM runs)")["n"]
    return out


@pytest.fixture
def store(tmp_path):
    """A store with task ``a``, its same-content twin, and two other tasks, each owning a row
    in every table that refers to a dataset."""
    src = tmp_path / "kb.duckdb"
    with KnowledgeBase(src) as kb:
        kb.add_algorithms(["knn"])
        a, b, c = (kb.add_dataset(_dataset(n, s)) for n, s in (("a", 0), ("b", 1), ("c", 2)))
        twin = "twin-of-a"  # the same content stored under another id (another source, say)
        kb.connection.execute("INSERT INTO datasets BY NAME SELECT * REPLACE (? AS dataset_id) FROM datasets "
                              "WHERE dataset_id = ?", [twin, a])
        for i, did in enumerate((a, twin, b, c)):
            kb.add_runs([{"dataset_id": did, "algorithm": "knn", "params": {"n_neighbors": k}, "metric": "error_rate",
                          "value": 0.1 * k, "source": "test", "status": "ok"} for k in (1, 3)])
            for run_id in kb.query("SELECT run_id FROM runs WHERE dataset_id = ?", [did])["run_id"]:
                kb.add_predictions(run_id, np.full((4, 2), 0.5))
            kb.add_meta_features(did, {"NumberOfInstances": 10.0, "ClassEntropy": 1.0})
            kb.add_session(f"s{i}", strategy="gp", dataset_id=did)
            kb.connection.execute("INSERT INTO surrogate_bank VALUES (?, 'knn', 'error_rate', '{}', 'f', 2, "
                                  "'\\x00'::BLOB, now())", [did])
            kb.connection.execute("INSERT INTO source_ids VALUES ('test', 'dataset', ?, ?)", [f"orig-{did}", did])
    return src, a, twin, (b, c)


def test_the_held_out_copy_drops_the_task_and_its_same_content_twins_from_every_table(store, tmp_path):
    src, a, twin, others = store
    before = _owned_rows(src)
    assert a != twin and set(before["runs"]) == {a, twin, *others}

    removed = automl.held_out_kb(src, tmp_path / "copy.duckdb", a)

    assert removed == sorted({a, twin})
    after = _owned_rows(tmp_path / "copy.duckdb")
    for table in (*OWNED, "predictions"):
        assert not set(after[table]) & {a, twin}, table  # nothing of the task or its twin is left
        kept = before[table][before[table].isin(others)].reset_index(drop=True)
        pd.testing.assert_series_equal(after[table], kept, check_names=False)  # every other row is kept
    assert after["orphan_predictions"].iloc[0] == 0
    pd.testing.assert_series_equal(_owned_rows(src)["runs"], before["runs"])  # the source is untouched


def test_the_held_out_copy_refuses_an_unknown_task(store, tmp_path):
    with pytest.raises(UnknownDatasetError, match="unknown dataset 'no-such-task'"):
        automl.held_out_kb(store[0], tmp_path / "copy.duckdb", "no-such-task")
    assert not (tmp_path / "copy.duckdb").exists()


# ----------------------------------------------------------------- split
def test_the_outer_split_is_stratified_seeded_and_a_partition():
    y = np.array(["a"] * 80 + ["b"] * 20)
    train, test = automl.outer_split(y, 0)
    assert len(test) == 25 and sorted(np.concatenate([train, test]).tolist()) == list(range(100))
    assert (y[test] == "b").sum() == 5
    assert all((p == q).all() for p, q in zip(automl.outer_split(y, 0), (train, test)))
    assert not np.array_equal(automl.outer_split(y, 1)[1], test)


def test_the_cell_files_hold_the_split_and_the_target_as_y(tmp_path):
    data = Dataset.from_frame(pd.DataFrame({"a": np.arange(40.0), "c": [1, 2] * 20}), "c", name="t", source="test")
    y_test = automl.write_cell(data, 0, tmp_path)
    train, test = pd.read_csv(tmp_path / "train.csv"), pd.read_csv(tmp_path / "test.csv")
    assert list(train.columns) == ["a", "y"] and list(test.columns) == ["a"]
    assert len(train) == 30 and len(test) == 10 and set(train["a"]).isdisjoint(test["a"])
    assert sorted(y_test) == sorted(data.y.astype(str).to_numpy()[test["a"].astype(int)])


def test_a_nominal_column_of_number_codes_is_written_as_text_and_the_rest_as_they_are(tmp_path):
    frame = pd.DataFrame({"who": [1002, 17, 3, 17] * 10, "kind": ["u", "v"] * 20, "x": np.arange(40.0),
                          "c": ["p", "q", "q", "p"] * 10})
    data = Dataset.from_frame(frame, "c", name="t", source="test", nominal=["who"])
    automl.write_cell(data, 0, tmp_path)
    train, test = pd.read_csv(tmp_path / "train.csv"), pd.read_csv(tmp_path / "test.csv")
    assert set(train["who"]) | set(test["who"]) == {"c1002", "c17", "c3"}  # read back as text, not numbers
    assert set(train["kind"]) == {"u", "v"} and train["x"].dtype == np.float64
    assert list(data.X["who"].cat.categories.astype(str)) == ["1002", "17", "3"]  # the dataset itself unchanged


def test_a_feature_named_as_the_target_column_is_renamed_not_lost(tmp_path):
    frame = pd.DataFrame({"x": np.arange(40.0), "y": np.arange(40.0) * 2, "y_": np.ones(40), "c": ["p", "q"] * 20})
    automl.write_cell(Dataset.from_frame(frame, "c", name="t", source="test"), 0, tmp_path)
    train, test = pd.read_csv(tmp_path / "train.csv"), pd.read_csv(tmp_path / "test.csv")
    assert list(train.columns) == ["x", "y__", "y_", "y"] and list(test.columns) == ["x", "y__", "y_"]
    assert (train["y__"] == 2 * train["x"]).all() and set(train["y"]) == {"p", "q"}


# ----------------------------------------------------------------- tool output
def test_metabo_logs_and_error_rates_are_read_back(tmp_path):
    log = ("session abc (resume it with --resume if interrupted)\nstrategy: warm: 41 tasks\n"
           "session abc: 142 trials on dataset-x (warm, seed 1), 2 failed\n"
           "time: 29.1 s in tune (final fit 0.3 s), 29.8 s in all; first model after 1.8 s\n")
    assert automl.parse_metabo_log(log) == {"trials": 142, "strategy": "warm", "first_model": 1.8, "members": None}
    assert automl.parse_metabo_log(log + "model: the ensemble of 7 members fitted on every row\n")["members"] == 7
    assert automl.parse_metabo_log(log + "model: the selection fitted on every row\n")["members"] == 1
    barred = log.replace("session abc: 142", "trials: 142trial [00:29, 4.8trial/s]\rsession abc: 142")
    assert automl.parse_metabo_log(barred)["trials"] == 142  # the progress bar's last frame on the same line
    moved = log.replace("session abc: 142", "\x1b[A  evaluations: 100%|#| 5/5 [00:01]session abc: 142")
    assert automl.parse_metabo_log(moved) == automl.parse_metabo_log(log)  # a bar's cursor move before it
    assert automl.parse_metabo_log("Traceback ...") == {"trials": None, "strategy": None, "first_model": None,
                                                        "members": None}
    (tmp_path / "p.csv").write_text("prediction\n1\n2\n01\n")
    assert automl.error_rate(tmp_path / "p.csv", np.array([1, 1, "01"], dtype=object)) == pytest.approx(1 / 3)
    assert automl.error_rate(tmp_path / "p.csv", np.array(["1", "2"])) is None  # wrong length
    assert automl.error_rate(tmp_path / "missing.csv", np.array(["1"])) is None


# ----------------------------------------------------------------- summary on a known table
def _row(dataset, tool, error, *, seconds=30.0, budget=30.0, seed=0, first=1.0):
    return {"dataset": dataset, "seed": seed, "budget": budget, "tool": tool, "test_error": error,
            "seconds": seconds, "trials": 10, "first_model": first}


ERRORS = {  # dataset -> errors of metabo, flaml, optuna
    "d1": (0.10, 0.20, 0.20),  # ranks 1, 2.5, 2.5
    "d2": (0.30, 0.10, 0.20),  # ranks 3, 1, 2
    "d3": (0.20, 0.20, 0.20),  # ranks 2, 2, 2
    "d4": (0.10, 0.30, 0.05),  # ranks 2, 3, 1
}


def _table_rows():
    return [_row(d, t, e) for d, errs in ERRORS.items() for t, e in zip(("metabo", "flaml", "optuna"), errs)]


def test_average_ranks_share_ties():
    ranks = automl.average_ranks(automl.error_table(_table_rows(), 30.0))
    assert ranks.to_dict() == pytest.approx({"metabo": 2.0, "flaml": 2.125, "optuna": 1.875})
    assert ranks.sum() == pytest.approx(6.0)  # 1 + 2 + 3 per row


def test_a_tool_without_runs_at_a_budget_leaves_no_cell_finished():
    rows = _table_rows() + [{**_row("d1", "metabo", 0.1), "budget": 120.0}]
    assert len(automl.error_table(rows, 30.0)) == len(ERRORS)
    assert automl.error_table(rows, 120.0).empty  # flaml and optuna have not run at 120 s


def test_head_to_head_counts_and_wilcoxon_against_a_closed_form():
    table = automl.error_table(_table_rows(), 30.0)
    assert automl.head_to_head(table, "metabo", "flaml")[:3] == (2, 1, 1)
    assert automl.head_to_head(table, "metabo", "optuna")[:3] == (1, 1, 2)
    # six wins of different sizes: the exact two-sided signed-rank p is 2 / 2^6
    six = pd.DataFrame({"a": np.zeros(6), "b": np.arange(1, 7) / 10})
    assert automl.head_to_head(six, "a", "b") == (6, 0, 0, pytest.approx(2 / 64))
    assert automl.head_to_head(six, "a", "a") == (0, 6, 0, 1.0)


def test_a_dataset_counts_once_in_the_head_to_head_over_datasets():
    rows = _table_rows() + [{**r, "seed": 1, "test_error": r["test_error"] + (0.1 if r["tool"] == "metabo" else 0)}
                            for r in _table_rows() if r["dataset"] in ("d1", "d2")]
    table = automl.error_table(rows, 30.0)
    datasets = automl.by_dataset(table)
    assert len(table) == 6 and list(datasets.index) == ["d1", "d2", "d3", "d4"]
    assert datasets.loc["d1", "metabo"] == pytest.approx(0.15) and datasets.loc["d2", "flaml"] == pytest.approx(0.1)
    # d1: .15 against .20 a win; d2: .35 against .10 a loss; d3 a tie; d4 a win
    assert automl.head_to_head(datasets, "metabo", "flaml")[:3] == (2, 1, 1)
    assert "over 4 datasets (mean of seeds) 2/1/1" in automl.summarize(rows)


def test_overrun_counts_runs_beyond_five_percent_only():
    rows = [_row("d", "t", 0.1, seconds=s) for s in (20.0, 31.5, 31.6, 60.0)]  # 31.5 = 1.05 x 30 is on time
    assert automl.overrun_rate(rows) == 0.5
    assert automl.overrun_rate([_row("d", "t", 0.1, seconds=125.0, budget=120.0)]) == 0.0  # under 126


def test_the_summary_uses_only_cells_every_tool_finished():
    rows = _table_rows() + [_row("d5", "metabo", 0.1), _row("d5", "flaml", None, seconds=95.0),
                            _row("d5", "optuna", 0.4)]
    text = automl.summarize(rows)
    assert "budget 30 s: 4 of 5 cells (dataset x seed) every tool finished" in text
    assert "metabo vs flaml: 2 wins, 1 ties, 1 losses" in text
    flaml = next(line for line in text.splitlines() if line.startswith("  flaml "))
    assert "test error 0.2000  balanced nan  rank 2.12  overrun>5% 20%" in flaml  # rows without balanced errors
    assert "(within 10% of the budget 5/5)" in flaml and flaml.endswith("failed 1/5")
    with_balanced = [{**r, "balanced_error": None if r["test_error"] is None else r["test_error"] / 2} for r in rows]
    assert "balanced 0.1000" in next(line for line in automl.summarize(with_balanced).splitlines()
                                     if line.startswith("  flaml "))


# ----------------------------------------------------------------- resumption
def test_resumption_skips_the_keys_already_written_and_a_torn_line(tmp_path):
    path = tmp_path / "runs.jsonl"
    written = [_row("d1", "metabo", 0.1), _row("d1", "flaml", 0.2, budget=120.0)]
    path.write_text("".join(json.dumps(r) + "\n" for r in written) + '{"dataset": "d2", "se')
    jobs = [{"dataset": d, "seed": 0, "budget": b, "tool": t}
            for b in (30.0, 120.0) for d in ("d1", "d2") for t in ("metabo", "flaml")]
    done = automl.done_keys(path)
    assert done == {("d1", 0, 30.0, "metabo"), ("d1", 0, 120.0, "flaml")}
    left = automl.pending(jobs, done)
    assert len(left) == 6 and all(automl.result_key(j) not in done for j in left)
    assert automl.pending(jobs, {automl.result_key(j) for j in jobs}) == []


# ----------------------------------------------------------------- the Optuna peer
@pytest.mark.slow
def test_optuna_tpe_stops_within_its_budget_and_refits_on_every_row():
    from sklearn.datasets import load_iris

    from metabo.optimizer.budget import TimeBudget

    X, y = load_iris(return_X_y=True, as_frame=True)
    data = Dataset.from_frame(X.assign(y=y.astype(str)), "y", name="iris", source="test")
    clock = TimeBudget(4.0)
    result = automl.optuna_tpe(data, budget=clock, seed=0)
    assert clock.elapsed() < 4.0 * (1 + automl.OVERRUN)
    assert result.trials >= 3 and 0 <= result.valid_error < 0.5 and result.first_model < 4.0
    assert result.model.predict(X).shape == (150,)  # fitted on all 150 rows, all three classes known
    assert len(result.model.classes_) == 3


def test_tool_runs_import_the_code_the_benchmark_runs(tmp_path):
    """A tool's ``python -m metabo...`` started in its work folder imports this process's
    ``metabo`` (a frozen copy on PYTHONPATH wins over what is installed or edited), and a
    runner this process's ``benchmarks`` (not installed: the repository's root)."""
    import subprocess
    import sys

    import benchmarks
    import metabo
    from benchmarks.automl import one_thread_env

    env = one_thread_env()
    assert env["OMP_NUM_THREADS"] == "1"
    done = subprocess.run([sys.executable, "-c", "import benchmarks, metabo; print(metabo.__file__); "
                           "print(benchmarks.__file__)"], capture_output=True, text=True, env=env, cwd=tmp_path,
                          check=True)
    assert done.stdout.split() == [metabo.__file__, benchmarks.__file__]
    # metabo-baseline: another checkout's metabo comes first
    other = tmp_path / "checkout"
    (other / "metabo").mkdir(parents=True)
    (other / "metabo" / "__init__.py").write_text("")
    done = subprocess.run([sys.executable, "-c", "import metabo; print(metabo.__file__)"], capture_output=True,
                          text=True, env=one_thread_env(other), cwd=tmp_path, check=True)
    assert done.stdout.strip() == str(other / "metabo" / "__init__.py")


def test_the_plot_is_drawn_while_a_budget_has_no_cell_every_tool_finished(tmp_path):
    rows = _table_rows() + [_row("d1", "metabo", 0.1, budget=120.0)]  # only metabo has run at 120 s
    assert automl.error_table(rows, 120.0).empty
    automl.plot(rows, tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 0


# ----------------------------------------------------------------- balanced error, Friedman/Nemenyi, memory
def test_balanced_error_is_the_mean_of_the_per_class_error_rates(tmp_path):
    (tmp_path / "p.csv").write_text("prediction\na\na\na\na\nb\n")
    y = np.array(["a", "a", "a", "b", "b"])  # class a: 0 of 3 wrong; class b: 1 of 2 wrong
    assert automl.balanced_error_rate(tmp_path / "p.csv", y) == pytest.approx((0 + 1 / 2) / 2)
    assert automl.error_rate(tmp_path / "p.csv", y) == pytest.approx(1 / 5)
    assert automl.balanced_error_rate(tmp_path / "p.csv", y[:3]) is None


def test_friedman_agrees_with_scipy_and_the_critical_difference_with_demsars_table():
    from scipy.stats import friedmanchisquare

    table = automl.error_table(_table_rows(), 30.0)
    p, cd = automl.friedman_nemenyi(table)
    assert p == pytest.approx(friedmanchisquare(*table.to_numpy().T).pvalue)
    # Demsar (2006), Table 5(a): q_.05 = 2.343 for three classifiers; N = 4 cells
    assert cd == pytest.approx(2.343 * np.sqrt(3 * 4 / (6 * 4)), abs=1e-3)
    assert np.isnan(automl.friedman_nemenyi(table[["metabo", "flaml"]])[0])  # two tools: Wilcoxon's job
    summary = automl.summarize(_table_rows())
    assert "Friedman p" in summary and "critical difference of average ranks 1.66" in summary


def test_first_model_within_a_tenth_of_the_budget_counts_only_runs_that_report_one():
    rows = [{"budget": 600.0, "first_model": 30.0}, {"budget": 600.0, "first_model": 90.0},
            {"budget": 600.0, "first_model": None}]
    assert automl.first_model_share(rows) == (1, 2)


def test_a_run_reports_its_peak_memory_and_a_hung_one_is_killed_with_its_group(tmp_path):
    import sys

    seconds, code, log, peak = automl._run(
        [sys.executable, "-c", "b = bytearray(300 * 2**20); b[::4096] = b'x' * len(b[::4096]); print('done')"],
        timeout=60, cwd=tmp_path)
    assert code == 0 and "done" in log and "peak-memory" not in log
    assert peak is not None and peak >= 300
    _, code, log, _ = automl._run([sys.executable, "-c", "print('session s: 7 trials on d (warm, seed 0)'); "
                                   "print('  member ' * 2000)"], timeout=60, cwd=tmp_path)
    assert code == 0 and automl.parse_metabo_log(log)["trials"] == 7  # a long member list after the line
    seconds, code, log, peak = automl._run(
        [sys.executable, "-c", "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', "
                               "'import time; time.sleep(60)']); time.sleep(60)"], timeout=2, cwd=tmp_path)
    assert code == -9 and peak is None and seconds < 30


def test_each_peer_runs_its_runner_in_its_own_environment(tmp_path):
    pythons = {"flaml": "/venvs/flaml/bin/python", "autogluon": "/venvs/ag/bin/python"}
    args = (tmp_path / "train.csv", tmp_path / "test.csv", tmp_path / "pred.csv")
    best = automl.peer_command("autogluon-best", *args, budget=30.0, seed=1, peer_python=pythons)
    assert best[0] == "/venvs/ag/bin/python" and best[1].endswith("autogluon_runner.py")
    assert best[2:] == [str(a) for a in args] + ["30.0", "1", "best_quality"]
    assert automl.peer_command("autogluon", *args, budget=30.0, seed=1, peer_python=pythons)[-1] == "medium_quality"
    assert automl.peer_command("flaml", *args, budget=30.0, seed=1, peer_python=pythons)[-1] == "1"
    with pytest.raises(InputDataError, match="autogluon virtual environment"):
        automl.peer_command("autogluon-best", *args, budget=30.0, seed=1, peer_python={"flaml": "x"})
    with pytest.raises(InputDataError, match="not a peer tool"):
        automl.peer_command("metabo", *args, budget=30.0, seed=1)


@pytest.mark.parametrize("tool, extra", [("metabo", []), ("metabo-gp", ["--strategy", "gp"]),
                                         ("metabo-single", ["--ensemble", "none"]),
                                         ("metabo-gp-single", ["--strategy", "gp", "--ensemble", "none"]),
                                         ("metabo-no-opening", ["--opening", "none"]),
                                         ("metabo-baseline", [])])
def test_each_metabo_tool_is_tune_with_its_own_options(tool, extra, tmp_path, monkeypatch):
    from benchmarks import automl

    seen, firsts = [], []

    def fake_run(cmd, *, timeout, cwd, first=None):  # noqa: ANN001, ANN202 - the command, not a run
        seen.append(list(cmd))
        firsts.append(first)
        return 1.0, 1, "", None

    monkeypatch.setattr(automl, "_run", fake_run)
    baseline = tmp_path / "before"
    automl.run_tool(tool, tmp_path / "train.csv", tmp_path / "test.csv", tmp_path, budget=30, seed=1,
                    kb=tmp_path / "kb.duckdb", baseline=baseline)
    assert firsts == [baseline if tool == "metabo-baseline" else None]  # the other checkout, for it alone
    cmd = seen[0]
    assert cmd[cmd.index("tune") - 1:][:2] == ["metabo.cli.main", "tune"]
    tail = cmd[cmd.index("--seed") + 2:]
    assert tail == extra
