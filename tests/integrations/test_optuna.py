"""WarmStartSampler: Optuna's own sampler contract tests, then the warm start's properties
(order, fallback, determinism across studies and workers, the knowledge base's nearest
task first, a better start than a cold study)."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterator

import optuna
import pytest
from optuna.samplers import BaseSampler, RandomSampler, TPESampler
from optuna.testing.pytest_samplers import (
    BasicSamplerTestCase,
    MultiObjectiveSamplerTestCase,
    RelativeSamplerTestCase,
    SingleOnlySamplerTestCase,
)

from metabo.exceptions import InputDataError
from metabo.integrations.optuna import WarmStartSampler
from metabo.kb import KnowledgeBase

pytestmark = pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")


@pytest.fixture(autouse=True)
def quiet_optuna() -> Iterator[None]:
    """Optuna's per-trial log lines off for these tests only."""
    level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    yield
    optuna.logging.set_verbosity(level)

#: Warm values the contract tests' distributions hold in part: x = 0.5 is in [-1, 1] but
#: not an integer; x = 3 is an integer and a choice of (1, 2, 3); "b" a choice of (a, b, c).
FAKE_WARM = [{"x": 0.5, "y": 1, "z": 0.25}, {"x": 3, "y": -10, "category": "y"}, {"x": "b", "y": 7}]

THEN: dict[str, Callable[[], BaseSampler | str]] = {
    "tpe": lambda: TPESampler(seed=0),
    "random": lambda: RandomSampler(seed=0),
    "gp": lambda: "gp",
}


# -- Optuna's contract tests ---------------------------------------------------------------
class TestBasicContract(BasicSamplerTestCase):
    @pytest.fixture(params=sorted(THEN))
    def sampler(self, request: pytest.FixtureRequest) -> Callable[[], BaseSampler]:
        return lambda: WarmStartSampler(FAKE_WARM, then=THEN[request.param](), seed=0)


class TestRelativeContract(RelativeSamplerTestCase):
    """``then`` samplers whose relative sampling gives every parameter from the first
    completed trial on (the contract's assumption; TPE's startup trials return none)."""

    @pytest.fixture(params=["gp", "tpe-multivariate"])
    def sampler(self, request: pytest.FixtureRequest) -> Callable[[], BaseSampler]:
        if request.param == "gp":
            return lambda: WarmStartSampler(FAKE_WARM, then="gp", seed=0)
        return lambda: WarmStartSampler(FAKE_WARM, then=TPESampler(multivariate=True, n_startup_trials=0, seed=0),
                                        seed=0)


class TestMultiObjectiveContract(MultiObjectiveSamplerTestCase):
    @pytest.fixture(params=["tpe", "random"])
    def sampler(self, request: pytest.FixtureRequest) -> Callable[[], BaseSampler]:
        return lambda: WarmStartSampler(FAKE_WARM, then=THEN[request.param](), seed=0)


class TestGPSingleOnlyContract(SingleOnlySamplerTestCase):
    @pytest.fixture
    def sampler(self) -> Callable[[], BaseSampler]:
        return lambda: WarmStartSampler(FAKE_WARM, then="gp", seed=0)


# -- the warm start ------------------------------------------------------------------------
WARM = [{"x": 0.3, "n": 4, "c": "b"}, {"x": -0.5, "n": 2, "c": "a"}, {"x": 0.9, "n": 8, "c": "b"}]


def mixed(trial: optuna.Trial) -> float:
    x = trial.suggest_float("x", -1.0, 1.0)
    n = trial.suggest_int("n", 1, 8, log=True)
    c = trial.suggest_categorical("c", ["a", "b"])
    return (x - 0.3) ** 2 + abs(n - 4) + (c == "a")


def params_of(sampler: BaseSampler, n_trials: int, objective=mixed, **study) -> list[dict]:
    s = optuna.create_study(sampler=sampler, **study)
    s.optimize(objective, n_trials=n_trials)
    return [t.params for t in s.trials]


@pytest.mark.parametrize("then", ["tpe", "random", "gp"])
def test_the_first_trials_take_the_warm_configurations_in_order(then):
    params = params_of(WarmStartSampler(WARM, then=THEN[then](), seed=0), 5)
    assert params[:3] == WARM
    assert all(-1 <= p["x"] <= 1 and 1 <= p["n"] <= 8 and p["c"] in ("a", "b") for p in params[3:])
    if then == "random":  # the warm trials left its generator untouched: its own sequence follows
        assert params[3:] == params_of(RandomSampler(seed=0), 2)


@pytest.mark.parametrize("then", [lambda: RandomSampler(seed=3), lambda: TPESampler(seed=3, n_startup_trials=4)])
def test_without_warm_configurations_it_is_the_then_sampler(then):
    assert params_of(WarmStartSampler([], then=then()), 8) == params_of(then(), 8)


def test_warm_values_the_distribution_does_not_hold_are_sampled_by_then(caplog):
    warm = [{"x": 50.0, "n": 2.5, "c": "z", "not_asked": 1}, {"x": True, "n": 4.0, "c": "a"}]
    with caplog.at_level(logging.WARNING, logger="metabo.integrations.optuna"):
        params = params_of(WarmStartSampler(warm, then=RandomSampler(seed=1)), 2)
    bare = params_of(RandomSampler(seed=1), 1)
    assert params[0] == bare[0]  # every value outside: then's own first draw
    assert params[1]["n"] == 4 and type(params[1]["n"]) is int and params[1]["c"] == "a"
    assert params[1]["x"] != 1.0  # True is not a number here
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 4 and "trial 0: warm value x=50.0 is outside" in warned[0]


@pytest.mark.parametrize("then", [None, "gp"])
def test_the_same_seed_gives_the_same_trials(then):
    def run(seed: int) -> list[dict]:
        return params_of(WarmStartSampler(WARM, then=then, seed=seed), 7)

    first = run(0)
    assert run(0) == first
    assert run(1)[:3] == first[:3] and run(1)[3:] != first[3:]


def test_workers_sharing_a_storage_take_each_warm_configuration_once():
    storage = optuna.storages.InMemoryStorage()
    a = optuna.create_study(study_name="s", storage=storage, sampler=WarmStartSampler(WARM, seed=0))
    b = optuna.load_study(study_name="s", storage=storage, sampler=WarmStartSampler(WARM, seed=0))
    trials = [a.ask(), b.ask(), a.ask(), b.ask()]
    for t in trials:
        mixed(t)
    assert [t.params for t in trials[:3]] == WARM and trials[3].params not in WARM

    threaded = optuna.create_study(sampler=WarmStartSampler(WARM, seed=0))
    threaded.optimize(mixed, n_trials=6, n_jobs=2)
    assert [t.params for t in sorted(threaded.trials, key=lambda t: t.number)[:3]] == WARM


def test_an_enqueued_trial_keeps_its_values():
    s = optuna.create_study(sampler=WarmStartSampler(WARM, seed=0))
    s.enqueue_trial({"x": 0.0})
    s.optimize(mixed, n_trials=2)
    assert s.trials[0].params == {**WARM[0], "x": 0.0} and s.trials[1].params == WARM[1]


def test_gp_models_a_maximized_objective():
    def peak(trial: optuna.Trial) -> float:
        return -((trial.suggest_float("x", 0.0, 1.0) - 0.7) ** 2)

    s = optuna.create_study(direction="maximize", sampler=WarmStartSampler([{"x": 0.0}, {"x": 1.0}], then="gp",
                                                                             seed=0))
    s.optimize(peak, n_trials=8)
    assert s.best_params["x"] == pytest.approx(0.7, abs=0.05)  # the values' sign is right


def _two_asked_together(sampler: WarmStartSampler) -> float:
    """The distance between two trials asked before either is told, after 6 told ones."""
    s = optuna.create_study(sampler=sampler)
    space = {"x": optuna.distributions.FloatDistribution(-5.0, 5.0),
             "y": optuna.distributions.FloatDistribution(-5.0, 5.0)}
    s.optimize(lambda t: (t.suggest_float("x", -5.0, 5.0) - 1) ** 2 + (t.suggest_float("y", -5.0, 5.0) + 2) ** 2,
               n_trials=6)
    first, second = s.ask(space), s.ask(space)
    return math.dist(first.params.values(), second.params.values())


def test_gp_keeps_concurrent_trials_apart_by_the_constant_lie(monkeypatch):
    apart = _two_asked_together(WarmStartSampler([], then="gp", seed=3))
    # the same sampler shown the running trial as nothing (no lie): it finds the same maximum again
    monkeypatch.setattr("metabo.optimizer.history.History.with_lies", lambda self, liar="max": self)
    together = _two_asked_together(WarmStartSampler([], then="gp", seed=3))
    assert apart > 10 * together


@pytest.mark.parametrize("distribution", [
    optuna.distributions.FloatDistribution(1e-3, 10.0, log=True),
    optuna.distributions.FloatDistribution(-1.0, 1.0, step=0.25),
    optuna.distributions.IntDistribution(1, 64, log=True),
    optuna.distributions.IntDistribution(0, 10, step=2),
    optuna.distributions.CategoricalDistribution([None, "a", 2.5]),
])
def test_optuna_distributions_round_trip_through_the_projects_space(distribution):
    from metabo.integrations.optuna import _hyperparameter, _to_optuna, _to_project

    hp = _hyperparameter("p", distribution)
    s = optuna.create_study(sampler=RandomSampler(seed=0))
    for _ in range(20):
        value = s.ask({"p": distribution}).params["p"]
        code = _to_project(value, distribution)
        hp.validate(code)
        back = _to_optuna(code, distribution)
        assert back == value and type(back) is type(value)
    last = distribution.choices[-1] if hasattr(distribution, "choices") else distribution.high
    assert _to_optuna(hp.from_unit(1.0), distribution) == last


def test_bad_arguments_name_the_fix():
    with pytest.raises(InputDataError, match="sequence of parameter dicts"):
        WarmStartSampler({"x": 1.0})
    with pytest.raises(InputDataError, match="Optuna sampler, 'gp' or None"):
        WarmStartSampler([], then="tpe")


# -- from the knowledge base -----------------------------------------------------------------
OPTIMUM = {"C": 10.0, "gamma": 0.01}


def svm(trial: optuna.Trial) -> float:
    """Minimal at the nearest task's best configuration, OPTIMUM."""
    c = trial.suggest_float("C", 1e-5, 1e5, log=True)
    gamma = trial.suggest_float("gamma", 1e-5, 1e5, log=True)
    return (math.log10(c) - 1) ** 2 + (math.log10(gamma) + 2) ** 2


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    """Tasks near (f = 1), mid (f = 3), far (f = 10) and new (f = 1.4, with its own runs)."""
    path = tmp_path_factory.mktemp("optuna") / "kb.duckdb"
    runs = {
        "near": [("svm_rbf", OPTIMUM, 0.05), ("svm_rbf", {"C": 1.0, "gamma": 1.0}, 0.3),
                 ("knn", {"n_neighbors": 5, "weights": "uniform", "p": 2}, 0.2)],
        "mid": [("svm_rbf", {"C": 100.0, "gamma": 0.1}, 0.1),
                ("knn", {"n_neighbors": 15, "weights": "distance", "p": 1}, 0.04)],
        "far": [("svm_rbf", {"C": 0.01, "gamma": 10.0}, 0.2)],
        "new": [("svm_rbf", {"C": 1e4, "gamma": 1e4}, 0.0)],
    }
    meta = {"near": 1.0, "mid": 3.0, "far": 10.0, "new": 1.4}
    with KnowledgeBase(path) as store:
        store.add_algorithms(["svm_rbf", "knn"])
        for name, rows in runs.items():
            task = store.register_dataset(name=name, source="test")
            store.add_meta_features(task, {"f": meta[name]})
            store.add_runs([{"dataset_id": task, "algorithm": a, "params": p, "metric": "error_rate", "value": v,
                             "fold": 0, "source": "test"} for a, p, v in rows])
    with KnowledgeBase(path, read_only=True) as store:
        yield store


def test_from_kb_puts_the_nearest_tasks_best_configuration_first(kb):
    from metabo.kb.past import PastRuns

    by_dataset = WarmStartSampler.from_kb(kb, dataset_id="new", algorithm="svm_rbf", k=3, method="knn")
    assert by_dataset.warm == (OPTIMUM, {"C": 100.0, "gamma": 0.1}, {"C": 0.01, "gamma": 10.0})  # new left out
    by_meta = WarmStartSampler.from_kb(kb, meta_features={"f": 0.9}, algorithm="svm_rbf", k=2, method="knn")
    assert by_meta.warm == (OPTIMUM, {"C": 1e4, "gamma": 1e4})
    past = PastRuns.from_kb(kb)
    assert (WarmStartSampler.from_kb(past, meta_features={"f": 0.9}, algorithm="svm_rbf", k=2, method="knn").warm
            == by_meta.warm)
    renamed = WarmStartSampler.from_kb(kb, dataset_id="new", algorithm="svm_rbf", k=1, method="knn",
                                       param_names={"svm_C": "C", "svm_gamma": "gamma"})
    assert renamed.warm == ({"svm_C": 10.0, "svm_gamma": 0.01},)


def test_from_kb_over_several_algorithms_names_the_parameters_as_configspace_does(kb):
    cash = WarmStartSampler.from_kb(kb, dataset_id="new", algorithm=["svm_rbf", "knn"], k=2, method="knn")
    assert cash.warm == ({"algorithm": "svm_rbf", "svm_rbf:C": 10.0, "svm_rbf:gamma": 0.01},
                         {"algorithm": "knn", "knn:n_neighbors": 15, "knn:weights": "distance", "knn:p": 1})


def test_from_kb_by_default_gives_the_portfolio_of_the_default_warm_start(kb):
    """Each task's regret: near (OPTIMUM 0, {1, 1} 1), mid and far one configuration each
    (0); weights fall with |f - 1.4|. Greedy gains: OPTIMUM (near's 1), then mid's and far's
    only configurations; {1, 1} gains nothing once OPTIMUM is in, so the portfolio stops."""
    one = WarmStartSampler.from_kb(kb, dataset_id="new", algorithm="svm_rbf")
    assert one.warm == (OPTIMUM, {"C": 100.0, "gamma": 0.1}, {"C": 0.01, "gamma": 10.0})
    # CASH: after OPTIMUM, an untried algorithm first (mid's knn, regret 0 there, 1 for its svm)
    cash = WarmStartSampler.from_kb(kb, dataset_id="new", algorithm=["svm_rbf", "knn"])
    assert cash.warm[:2] == ({"algorithm": "svm_rbf", "svm_rbf:C": 10.0, "svm_rbf:gamma": 0.01},
                             {"algorithm": "knn", "knn:n_neighbors": 15, "knn:weights": "distance", "knn:p": 1})
    assert WarmStartSampler.from_kb(kb, dataset_id="new", algorithm="svm_rbf", n_warm=1).warm == (OPTIMUM,)
    with pytest.raises(InputDataError, match="method must be"):
        WarmStartSampler.from_kb(kb, dataset_id="new", method="tpe")


def test_from_kb_needs_the_new_task(kb):
    from metabo.kb.past import PastRuns

    with pytest.raises(InputDataError, match="dataset_id .* or meta_features"):
        WarmStartSampler.from_kb(kb, algorithm="svm_rbf")
    with pytest.raises(InputDataError, match="dataset_id .* or meta_features"):
        WarmStartSampler.from_kb(kb, dataset_id="new", meta_features={"f": 1.0})
    with pytest.raises(InputDataError, match="give meta_features"):
        WarmStartSampler.from_kb(PastRuns.from_kb(kb), dataset_id="new")


def test_a_warm_started_study_starts_better_than_a_cold_one(kb):
    warm = optuna.create_study(sampler=WarmStartSampler.from_kb(kb, dataset_id="new", algorithm="svm_rbf", seed=0))
    cold = optuna.create_study(sampler=TPESampler(seed=0))
    for study in (warm, cold):
        study.optimize(svm, n_trials=3)
    assert warm.best_value == pytest.approx(0.0, abs=1e-12) and warm.trials[0].params == OPTIMUM
    assert cold.best_value > 1.0
