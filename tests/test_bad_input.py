"""Bad input a user gives, through the command line and the Python API: each gets one
clear line (the message asserted here) and leaves every table of the knowledge base as it
was (a snapshot of every row before and after). The service's bad requests are in
tests/service/test_bad_requests.py, on the same snapshot."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from metabo.cli.main import main
from metabo.exceptions import MetaboError
from metabo.kb import KnowledgeBase
from metabo.testing.store import snapshot, snapshot_file


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A store with iris and one finished session, a saved model, and the files the
    cases name (good ones and broken ones)."""
    root = tmp_path_factory.mktemp("bad-input")
    rng = np.random.default_rng(0)
    good = pd.DataFrame({"a": rng.normal(size=60), "b": rng.normal(size=60), "y": rng.choice(["p", "q"], 60)})
    good.to_csv(root / "good.csv", index=False)
    good.drop(columns="y").rename(columns={"b": "c"}).to_csv(root / "other-columns.csv", index=False)
    good.assign(y="x").to_csv(root / "one-class.csv", index=False)
    good.assign(y=rng.normal(size=60)).to_csv(root / "numbers.csv", index=False)
    good.head(0).to_csv(root / "header-only.csv", index=False)
    (root / "binary.csv").write_bytes(bytes(range(256)) * 20)
    (root / "empty.csv").write_bytes(b"")
    (root / "not-a-model.joblib").write_bytes(b"not a pickle at all")
    (root / "corrupt.duckdb").write_bytes(b"this is not a duckdb file" * 200)
    (root / "bad.arff").write_text("@RELATION r\n@ATTRIBUTE a NUMERIC\n@ATTRIBUTE y {p,q}\n@DATA\n1,p\nnot,a,row\n")
    kb = root / "kb.duckdb"
    assert main(["tune", str(root / "good.csv"), "--target", "y", "--budget", "2", "--strategy", "random",
                 "--algorithms", "knn", "--session", "done", "--save-model", str(root / "m.skops"),
                 "--kb", str(kb), "--no-meta-features"]) == 0
    assert main(["kb", "export", str(root / "parquet-dir"), "--kb", str(kb)]) == 0
    (root / "parquet-dir" / "runs.parquet").write_bytes(b"PAR1 broken")  # an export whose runs file is broken
    return root, kb


# (case, argv with {root} and {kb} placeholders, words of the one-line message)
CLI_CASES = [
    ("tune: unknown algorithm", ["tune", "{root}/good.csv", "--target", "y", "--budget", "1", "--algorithms", "knn",
                                 "nope"], "unknown algorithm 'nope'"),
    ("tune: one-class target", ["tune", "{root}/one-class.csv", "--target", "y", "--budget", "1"], "has one class"),
    ("tune: regression target", ["tune", "{root}/numbers.csv", "--target", "y", "--budget", "1"],
     "a regression target"),
    ("tune: no such target column", ["tune", "{root}/good.csv", "--target", "label", "--budget", "1"],
     "no target column 'label'"),
    ("tune: a file without --target", ["tune", "{root}/good.csv", "--budget", "1"], "--target"),
    ("tune: no such file", ["tune", "{root}/missing.csv", "--target", "y", "--budget", "1"], "missing.csv"),
    ("tune: header only", ["tune", "{root}/header-only.csv", "--target", "y", "--budget", "1"], "has no rows"),
    ("tune: empty file", ["tune", "{root}/empty.csv", "--target", "y", "--budget", "1"], "empty.csv"),
    ("tune: binary garbage", ["tune", "{root}/binary.csv", "--target", "y", "--budget", "1"], "binary.csv"),
    ("tune: malformed ARFF", ["tune", "{root}/bad.arff", "--target", "y", "--budget", "1"], "bad.arff"),
    ("tune: zero budget", ["tune", "{root}/good.csv", "--target", "y", "--budget", "0"], "budget"),
    ("tune: negative time budget", ["tune", "{root}/good.csv", "--target", "y", "--time-budget", "-5"],
     "time"),
    ("tune: no budget at all", ["tune", "{root}/good.csv", "--target", "y"], "--budget"),
    ("tune: a maximized metric", ["tune", "{root}/good.csv", "--target", "y", "--budget", "1", "--metric",
                                  "accuracy"], "use 'error_rate'"),
    ("tune: unknown strategy", ["tune", "{root}/good.csv", "--target", "y", "--budget", "1", "--strategy", "magic"],
     "invalid choice: 'magic'"),
    ("tune: resume an unknown session", ["tune", "{root}/good.csv", "--target", "y", "--budget", "1", "--resume",
                                         "nosuch"], "no session 'nosuch'"),
    ("tune: negative seed", ["tune", "{root}/good.csv", "--target", "y", "--budget", "1", "--seed", "-1"], "seed"),
    ("tune: max-train of zero", ["tune", "{root}/good.csv", "--target", "y", "--budget", "1", "--max-train", "0"],
     "max_train"),
    ("tune: a warm start from nothing", ["tune", "{root}/good.csv", "--target", "y", "--budget", "1", "--strategy",
                                         "rlgp", "--algorithms", "qda"], "nothing to warm-start from"),
    ("predict: no model file", ["predict", "{root}/nope.joblib", "{root}/good.csv"], "nope.joblib"),
    ("predict: not a model", ["predict", "{root}/not-a-model.joblib", "{root}/good.csv"], "not-a-model.joblib"),
    ("predict: other columns", ["predict", "{root}/m.skops", "{root}/other-columns.csv"], "lacks the columns ['b']"),
    ("predict: no data file", ["predict", "{root}/m.skops", "{root}/nope.csv"], "nope.csv"),
    ("predict: no folder for --out", ["predict", "{root}/m.skops", "{root}/good.csv", "--out",
                                      "{root}/no/where.csv"], "no folder"),
    ("predict: --out a folder", ["predict", "{root}/m.skops", "{root}/good.csv", "--out", "{root}"], "is a folder"),
    ("predict: header only", ["predict", "{root}/m.skops", "{root}/header-only.csv"], "no rows to predict"),
    ("predict: a pickle without --trusted", ["predict", "{root}/not-a-model.joblib", "{root}/good.csv"], "--trusted"),
    ("tune: --save-model in a missing folder", ["tune", "{root}/good.csv", "--target", "y", "--budget", "1",
                                                "--save-model", "{root}/nodir/m.skops"], "no folder"),
    ("tune: --save-model a folder", ["tune", "{root}/good.csv", "--target", "y", "--budget", "1", "--save-model",
                                     "{root}"], "is a folder"),
    ("tune: --save-model joblib without --trusted", ["tune", "{root}/good.csv", "--target", "y", "--budget", "1",
                                                     "--save-model", "{root}/m2.joblib"], "runs code when"),
    ("kb stats: a mistyped store", ["kb", "stats", "--kb", "{root}/typo.duckdb"], "no knowledge base at"),
    ("kb stats: a folder", ["kb", "stats", "--kb", "{root}"], "is a folder"),
    ("kb stats: a corrupt store", ["kb", "stats", "--kb", "{root}/corrupt.duckdb"], "restore it from a Parquet"),
    ("kb nearest: bad JSON", ["kb", "nearest", "--meta-features", "{bad"], "not valid JSON"),
    ("kb ranks: unknown algorithm", ["kb", "ranks", "nope"], "unknown algorithm"),
    ("kb runs: unknown dataset", ["kb", "runs", "--dataset", "nope"], "unknown dataset"),
    ("kb import: no folder", ["kb", "import", "{root}/no-export"], "no-export"),
    ("kb import: a broken Parquet file", ["kb", "import", "{root}/parquet-dir"], "parquet"),
    ("space validate: bad value", ["space", "validate", "knn", '{"n_neighbors": -3}'], "n_neighbors"),
    ("space validate: unknown algorithm", ["space", "validate", "nope", "{}"], "unknown algorithm"),
    ("data add: unknown scikit-learn dataset", ["data", "add", "sklearn:nope", "--no-landmarkers"], "nope"),
    ("data add: a store in a missing folder", ["data", "add", "sklearn:iris", "--kb", "{root}/no/kb.duckdb"],
     "no folder"),
    ("sessions: --limit 0", ["sessions", "--limit", "0"], "at least 1"),
    ("kb build: unknown algorithm", ["kb", "build", "sklearn:iris", "--algorithms", "knn", "nope"],
     "unknown algorithm 'nope'"),
]


@pytest.mark.parametrize("case, argv, words", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_the_command_line_refuses_in_one_line_and_stores_nothing(world, capsys, case, argv, words):
    root, kb = world
    argv = [a.replace("{root}", str(root)) for a in argv]
    if "--kb" not in argv:
        argv += ["--kb", str(kb)]
    before = snapshot_file(kb)
    files = sorted(p.name for p in root.rglob("*"))
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as e:  # argparse
        code = e.code
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, (out, err)
    assert len(lines) == 1, err
    assert "error" in lines[0] and words.lower() in lines[0].lower(), lines[0]
    assert "Traceback" not in err
    assert snapshot_file(kb) == before
    assert sorted(p.name for p in root.rglob("*")) == files  # no file made either


def _api_cases(root: Path):
    """name -> (prepare(kb) -> what the bad call needs, the bad call, words of its message);
    what ``prepare`` stores (an optimizer's session) is in the snapshot taken before the call."""
    from metabo.data.files import load_file
    from metabo.ensembles.model import EnsembleModel
    from metabo.optimizer import Optimizer, tune
    from metabo.space.algorithms import default_cash_space
    from metabo.strategies import make_strategy

    def good():
        return pd.read_csv(root / "good.csv")

    def asked(kb):
        dataset_id = kb.query("SELECT dataset_id FROM datasets")["dataset_id"][0]
        opt = Optimizer(default_cash_space(["knn"]), make_strategy("random", seed=0), kb=kb, dataset_id=dataset_id,
                        seed=0)
        return opt, opt.ask()

    def run(algorithm, value):
        return lambda kb: kb.add_runs([{
            "dataset_id": kb.query("SELECT dataset_id FROM datasets")["dataset_id"][0], "algorithm": algorithm,
            "params": {"n_neighbors": 3} if algorithm == "knn" else {}, "metric": "error_rate", "value": value,
            "source": "s"}])

    def same(kb):
        return kb

    return {
        "tune: a DataFrame without target=": (same, lambda kb: tune(good(), kb=kb, budget=1), "needs target="),
        "tune: a DataFrame whose target is missing": (same, lambda kb: tune(good(), target="label", kb=kb, budget=1),
                                                      "label"),
        "tune: an unknown metric": (same, lambda kb: tune(good(), target="y", kb=kb, budget=1, metric="nosuch"),
                                    "unknown metric 'nosuch'"),
        "tune: a budget of no trials": (same, lambda kb: tune(good(), target="y", kb=kb, budget=0), "budget"),
        "tune: an unknown strategy": (same, lambda kb: tune(good(), target="y", kb=kb, budget=1, strategy="magic"),
                                      "magic"),
        "tell: NaN with status ok": (asked, lambda ot: ot[0].tell(ot[1], math.nan), "finite value"),
        "tell: an unknown status": (asked, lambda ot: ot[0].tell(ot[1], 0.1, status="great"), "status"),
        "tell: a trial never asked": (asked, lambda ot: ot[0].tell(7, 0.1), "no trial 7"),
        "add_runs: an unknown algorithm": (same, run("nope", 0.1), "nope"),
        "add_runs: a NaN value of a successful run": (same, run("knn", float("nan")), "value"),
        "load_file: a malformed ARFF": (same, lambda kb: load_file(root / "bad.arff", "y"), "bad.arff"),
        "EnsembleModel.load: not a model": (same, lambda kb: EnsembleModel.load(root / "not-a-model.joblib"),
                                            "not-a-model.joblib"),
        "KnowledgeBase: a corrupt file": (same, lambda kb: KnowledgeBase(root / "corrupt.duckdb"), "corrupt"),
    }


API_CASE_NAMES = list(_api_cases(Path(".")))


@pytest.mark.parametrize("case", API_CASE_NAMES)
def test_the_python_api_raises_a_metabo_error_and_stores_nothing(world, tmp_path, case):
    root, kb_path = world
    copy = tmp_path / "kb.duckdb"
    shutil.copyfile(kb_path, copy)
    prepare, call, words = _api_cases(root)[case]
    with KnowledgeBase(copy) as kb:
        needs = prepare(kb)
        before = snapshot(kb)
        with pytest.raises(MetaboError) as e:
            call(needs)
        after = snapshot(kb)
    message = str(e.value)
    assert words.lower() in message.lower() and "\n" not in message.strip(), message
    assert after == before


def test_the_table_is_what_the_closing_note_lists():
    """Each case has a distinct name (the closing note's table is generated from these)."""
    names = [c[0] for c in CLI_CASES] + API_CASE_NAMES
    assert len(names) == len(set(names)) and len(names) >= 45
    json.dumps(names)
