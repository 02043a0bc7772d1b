"""``tune`` / ``metabo tune`` with the warm-start strategies: built from the knowledge base
once the dataset and its meta-features are stored, never transferring from the dataset's
own earlier runs."""

from __future__ import annotations

import pytest
from sklearn.datasets import load_breast_cancer, load_iris, load_wine

from metabo.cli.main import main
from metabo.exceptions import InputDataError
from metabo.kb import KnowledgeBase
from metabo.optimizer import tune
from metabo.space.algorithms import default_cash_space
from metabo.strategies.knn import KNNWarmStart
from metabo.strategies.warm import past_for
from metabo.tuning.registry import resolve_strategy

ALGS = ["knn", "decision_tree"]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A store with three tuned datasets (iris, wine, breast cancer; 4 random trials each)."""
    tmp = tmp_path_factory.mktemp("warm")
    paths = {}
    for name, loader in (("iris", load_iris), ("wine", load_wine), ("cancer", load_breast_cancer)):
        paths[name] = tmp / f"{name}.csv"
        loader(as_frame=True).frame.to_csv(paths[name], index=False)
    kb_path = tmp / "kb.duckdb"
    with KnowledgeBase(kb_path) as kb:
        for name, path in paths.items():
            tune(str(path), target="target", budget=4, space=default_cash_space(ALGS), strategy="random", kb=kb,
                 seed=0, session_id=f"past-{name}")
    return kb_path, paths


def test_warm_strategies_leave_the_dataset_out_of_their_past(store):
    kb_path, paths = store
    space = default_cash_space(ALGS)
    with KnowledgeBase(kb_path, read_only=True) as kb:
        ids = kb.query("SELECT dataset_id, name FROM datasets ORDER BY name")
        iris = ids.loc[ids["name"].str.contains("iris"), "dataset_id"].item()
        others = set(ids["dataset_id"]) - {iris}
        assert set(past_for(kb, iris, space).tasks) == others and len(others) == 2
        knn = resolve_strategy("knn", kb, iris, space, metric="error_rate")[2](0)
        assert isinstance(knn, KNNWarmStart) and set(knn.neighbours()["dataset_id"]) == others
        with pytest.raises(InputDataError, match="unknown strategy"):
            resolve_strategy("nope", kb, iris, space, metric="error_rate")
        with pytest.raises(InputDataError, match="nothing to warm-start"):
            past_for(kb, iris, default_cash_space(["lda"]))


def test_tasks_of_another_error_rate_are_read_only_when_asked(store, tmp_path):
    import shutil

    kb_path, _ = store
    copy = tmp_path / "kb.duckdb"
    shutil.copy(kb_path, copy)
    space = default_cash_space(ALGS)
    with KnowledgeBase(copy) as kb:
        ids = kb.query("SELECT dataset_id, name FROM datasets ORDER BY name")
        iris = ids.loc[ids["name"].str.contains("iris"), "dataset_id"].item()
        oboe = kb.register_dataset(name="openml-3", source="oboe", openml_id=3)
        kb.add_algorithms(ALGS)
        algorithm = ALGS[0]
        params = space[algorithm].default_configuration()
        kb.add_runs([{"dataset_id": oboe, "algorithm": algorithm, "params": params,
                      "metric": "ovr_balanced_error_rate", "value": 0.2, "fold": 0, "source": "oboe"}])
        assert oboe not in past_for(kb, iris, space).tasks
        assert oboe in past_for(kb, iris, space, other_metrics=True).tasks


def test_tune_cli_with_rlgp_stores_its_session(store, capsys, tmp_path):
    kb_path, paths = store
    copy = tmp_path / "kb.duckdb"
    copy.write_bytes(kb_path.read_bytes())
    code = main(["tune", str(paths["iris"]), "--target", "target", "--budget", "3", "--strategy", "rlgp",
                 "--algorithms", *ALGS, "--session", "warm", "--kb", str(copy)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "session warm: 3 trials" in out and "(rlgp, seed 0)" in out
    with KnowledgeBase(copy, read_only=True) as kb:
        runs = kb.query("SELECT count(*) AS n FROM runs WHERE source = 'session:warm' AND metric = 'error_rate' "
                        "AND fold = 0")  # one per trial (iris: five folds each)
        cached = kb.query("SELECT count(*) AS n FROM surrogate_bank")["n"].item()
    assert runs["n"].item() == 3 and cached > 0  # the bank of the past is cached in the store


def test_warm_strategy_without_a_knowledge_base_is_refused(store):
    _, paths = store
    with pytest.raises(InputDataError, match="pass kb"):
        tune(str(paths["iris"]), target="target", budget=1, space=default_cash_space(ALGS), strategy="rlgp")


def test_tune_with_the_warm_default_starts_with_the_portfolios_first_configuration(store, tmp_path):
    from metabo.strategies.portfolio import PortfolioWarmStart

    kb_path, paths = store
    copy = tmp_path / "kb.duckdb"
    copy.write_bytes(kb_path.read_bytes())
    space = default_cash_space(ALGS)
    with KnowledgeBase(copy) as kb:
        ids = kb.query("SELECT dataset_id, name FROM datasets ORDER BY name")
        iris = ids.loc[ids["name"].str.contains("iris"), "dataset_id"].item()
        strategy = resolve_strategy("warm", kb, iris, space, metric="error_rate")[2](0)
        assert isinstance(strategy, PortfolioWarmStart) and iris not in strategy.past.tasks
        m, w = strategy.matrix(space)
        first = m.configs[int((w @ (1 - m.Q)).argmax())]  # gain before any pick: sum_p w_p (1 - Q_pc)
        result = tune(str(paths["iris"]), target="target", budget=3, space=space, strategy="warm", kb=kb, seed=0,
                      session_id="warm-default")
    asked = result.history[0]
    assert (asked.algorithm, dict(asked.params)) == (first[0], dict(first[1]))


def test_auto_is_the_default_and_warm_starts_whenever_the_knowledge_base_has_knowledge(store, capsys, tmp_path):
    kb_path, paths = store
    copy = tmp_path / "kb.duckdb"
    copy.write_bytes(kb_path.read_bytes())
    with KnowledgeBase(copy) as kb:
        result = tune(str(paths["iris"]), target="target", budget=2, space=default_cash_space(ALGS), kb=kb, seed=0)
        assert result.strategy == "warm" and result.strategy_note.startswith("warm start (warm): ")
        assert "2 other tasks" in result.strategy_note  # iris itself left out
        # the fidelity of what transfers: the largest training part of wine's and cancer's runs
        largest = kb.query("SELECT max(fidelity) AS f FROM runs WHERE dataset_id <> ?", [result.dataset_id])["f"]
        assert result.strategy_note.endswith(f"trained on at most {largest.item():,.0f} rows")
        # how the transferred runs were measured: this store's build measured as tune does
        assert "(2 of the tasks measured as this search measures)" in result.strategy_note
        hold_out = resolve_strategy("auto", kb, result.dataset_id, default_cash_space(ALGS), metric="error_rate",
                                    cv=None)[1]
        assert "(0 of the tasks measured as this search measures)" in hold_out  # iris is small: CV, not this
        # a space the past never ran: cold, and why
        name, note, _ = resolve_strategy("auto", kb, result.dataset_id, default_cash_space(["lda"]),
                                         metric="error_rate")
        assert name == "gp" and "nothing to warm-start from" in note
        sessions = kb.query("SELECT strategy FROM sessions WHERE session_id = ?", [result.session_id])
    assert sessions["strategy"].item() == "warm"
    reason = "cold GP-BO: no knowledge base to warm-start from"
    assert resolve_strategy("auto", None, None, default_cash_space(ALGS), metric="error_rate")[:2] == ("gp", reason)
    cold = tune(str(paths["iris"]), target="target", budget=1, space=default_cash_space(ALGS), seed=0)
    assert cold.strategy == "gp" and "no knowledge base" in cold.strategy_note
    code = main(["tune", str(paths["wine"]), "--target", "target", "--budget", "1", "--algorithms", *ALGS,
                 "--kb", str(copy)])
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("session tune-") and lines[1].startswith("strategy: warm start (warm): ")
    assert "(warm, seed 0)" in out
