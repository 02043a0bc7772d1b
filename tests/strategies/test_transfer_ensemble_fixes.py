"""Fixes of the RLGP/RGPE ensembles (:mod:`metabo.strategies.transfer_ensemble`): each test
reproduces one cause of the filed issue (exploration of untried algorithms, scales, the
target's weight, the variance before any weight, the target GP's settings, the round
robin over one-configuration algorithms)."""

from __future__ import annotations

import numpy as np
import pytest

from metabo.kb.canonical import config_id
from metabo.optimizer import Optimizer
from metabo.optimizer.history import History, TrialRecord
from metabo.space.algorithms import default_cash_space
from metabo.strategies.rgpe import RGPE
from metabo.strategies.rlgp import RLGP
from metabo.surrogates.bank import SurrogateBank, space_encoder
from metabo.testing.problems import noise_objective, shared_past, two_algorithm_problem

SPACE, OBJECTIVE = two_algorithm_problem()


def history_of(configs: list[tuple[str, dict]], values: list[float]) -> History:
    return History([TrialRecord(i, a, dict(p), config_id(a, p), state="complete", value=float(v), status="ok")
                    for i, ((a, p), v) in enumerate(zip(configs, values))])


# ---------------------------------------------------------------- 6. round robin
def _cash_objective(a: str, p: dict) -> float:
    """lda and gaussian_nb (one configuration each) and qda (one float)."""
    if a == "lda":
        return 0.3
    if a == "gaussian_nb":
        return 0.4
    return 0.2 + 0.1 * (np.log10(p["reg_param"]) + 1.5) ** 2


@pytest.mark.parametrize("cls", [RLGP, RGPE])
def test_one_per_algorithm_skips_exhausted_one_configuration_algorithms(cls):
    """The round robin reaches lda and gaussian_nb again after their only configuration
    was asked: it moves on to an algorithm with configurations left instead of raising."""
    space = default_cash_space(["lda", "gaussian_nb", "qda"])
    tasks = {f"t{i}": (lambda a, p, i=i: _cash_objective(a, p) + 0.05 * i) for i in range(3)}
    bank = SurrogateBank.fit(shared_past(space, tasks, n=12), space_encoder(space), max_points=None, seed=0)
    opt = Optimizer(space, cls(bank, one_per_algorithm=True, n_random=30, n_local=2, seed=0), seed=0)
    for _ in range(9):  # three rounds of the three algorithms
        t = opt.ask()
        opt.tell(t, _cash_objective(t.algorithm, t.params))
    ids = [r.config_id for r in opt.history]
    assert len(set(ids)) == len(ids)
    counts = {a: sum(r.algorithm == a for r in opt.history) for a in space.algorithms}
    assert counts["lda"] == counts["gaussian_nb"] == 1 and counts["qda"] == 7


# ---------------------------------------------------------------- 1 and 4. mixture variance
TASKS = {"copy": OBJECTIVE, "anti": lambda a, p: -OBJECTIVE(a, p), "noise": noise_objective(1)}


@pytest.fixture(scope="module")
def bank() -> SurrogateBank:
    return SurrogateBank.fit(shared_past(SPACE, TASKS, n=24), space_encoder(SPACE), max_points=None, seed=0)


def _mixture(mu: np.ndarray, v: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The law of total variance of the mixture sum_m w_m N(mu_m, v_m): (mean, var)."""
    mean = w @ mu
    return mean, w @ (v + mu**2) - mean**2


@pytest.mark.parametrize("cls", [RLGP, RGPE])
def test_after_one_observation_the_variance_is_the_mixture_variance(bank, cls):
    """No pair to weight by after trial 1: the base GPs weigh the same and the ensemble is
    their mixture (variance by the law of total variance), not mean(sigma^2) / T."""
    (config,) = SPACE.subset(["a"]).sample(np.random.default_rng(3), 1)
    h = history_of([config], [OBJECTIVE(*config)])
    strategy = cls(bank, n_random=50, seed=0)
    for a in SPACE.algorithms:
        X = SPACE[a].sample_encoded(np.random.default_rng(4), 7)
        mu, v = bank.predict(a, X)
        w = np.full(len(mu), 1.0 / len(mu))
        mean, var = strategy.posterior(h, SPACE, a, X)
        np.testing.assert_allclose(mean, _mixture(mu, v, w)[0], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(var, _mixture(mu, v, w)[1], rtol=1e-8, atol=1e-12)
        assert np.all(var > v.mean(axis=0) / len(mu))


@pytest.fixture(scope="module")
def similar_bank() -> SurrogateBank:
    """Two tasks that order every configuration as the target does, and a rough copy."""
    rough = noise_objective(2)
    tasks = {"copy": OBJECTIVE, "scaled": lambda a, p: 1.5 * OBJECTIVE(a, p) + 0.3,
             "rough": lambda a, p: OBJECTIVE(a, p) + 0.2 * rough(a, p)}
    return SurrogateBank.fit(shared_past(SPACE, tasks, n=24), space_encoder(SPACE), max_points=None, seed=0)


def test_an_untried_algorithm_keeps_the_mixture_variance_of_its_weighted_base_gps(similar_bank):
    """RLGP's task weights come from 'a''s pairs (split between 'copy' and 'scaled'); 'b'
    is untried (no target GP): its ensemble is the weighted mixture of its base GPs,
    variance by the law of total variance, not sum_m w_m^2 var_m."""
    bank = similar_bank
    configs = SPACE.subset(["a"]).sample(np.random.default_rng(2), 6)
    h = history_of(configs, [OBJECTIVE(*c) for c in configs])
    strategy = RLGP(bank, n_random=50, n_samples=50, seed=0)
    X = SPACE["b"].sample_encoded(np.random.default_rng(6), 9)
    mean, var = strategy.posterior(h, SPACE, "b", X, np.random.default_rng(1))
    weights = strategy.last_weights_["b"]
    members = bank.members("b")
    w = np.array([weights.get(t, 0.0) for t in members])
    w = w / w.sum() if w.sum() > 0 else np.full(len(members), 1.0 / len(members))
    mu, v = bank.predict("b", X)
    np.testing.assert_allclose(mean, _mixture(mu, v, w)[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(var, _mixture(mu, v, w)[1], rtol=1e-8, atol=1e-12)
    assert np.count_nonzero(w) >= 2
    assert np.all(var >= w @ v - 1e-12)  # never below the members' weighted variance


@pytest.fixture(scope="module")
def bank_without_b() -> SurrogateBank:
    """Past tasks that never ran algorithm 'b' (the optimum's algorithm on the target)."""
    past = shared_past(SPACE, {"copy": OBJECTIVE, "shifted": lambda a, p: OBJECTIVE(a, p) + 0.2}, n=15,
                     algorithms=("a",))
    return SurrogateBank.fit(past, space_encoder(SPACE), max_points=None, seed=0)


@pytest.mark.parametrize("cls", [RLGP, RGPE])
def test_an_algorithm_without_base_gps_gets_the_prior_and_is_tried(bank_without_b, cls):
    """No past task ran 'b': before it is tried its ensemble is N(mean of the target's
    normalized values, 1) (finite EI), and the strategy tries it within a modest budget."""
    assert bank_without_b.algorithms == ("a",)
    configs = SPACE.subset(["a"]).sample(np.random.default_rng(5), 4)
    h = history_of(configs, [OBJECTIVE(*c) for c in configs])
    X = SPACE["b"].sample_encoded(np.random.default_rng(6), 5)
    found = cls(bank_without_b, n_random=50, seed=0).posterior(h, SPACE, "b", X)
    assert found is not None
    np.testing.assert_allclose(found[0], 0.0, atol=1e-12)
    np.testing.assert_allclose(found[1], 1.0)
    opt = Optimizer(SPACE, cls(bank_without_b, n_random=100, n_local=3, seed=0), seed=0)
    for _ in range(10):
        t = opt.ask()
        opt.tell(t, OBJECTIVE(t.algorithm, t.params))
    assert any(r.algorithm == "b" for r in opt.history)


# ---------------------------------------------------------------- 3. the target's weight floor
def _rough(a: str, p: dict) -> float:
    """The toy objective with a ripple the target's few observations cannot resolve."""
    return OBJECTIVE(a, p) + 0.3 * np.sin(12 * (p["u"] if a == "a" else p["v"]))


@pytest.fixture(scope="module")
def many_copies_bank() -> SurrogateBank:
    """Eight past tasks that order every configuration as the target does, each GP fitted
    on 40 runs: they out-rank the target's leave-one-out GP at every sample, which alone
    would get (almost) no weight (0.02 of RLGP's at 16 observations before the floor)."""
    tasks = {f"copy{i}": (lambda a, p, i=i: (1 + 0.1 * i) * _rough(a, p) + i) for i in range(8)}
    return SurrogateBank.fit(shared_past(SPACE, tasks, n=40), space_encoder(SPACE), max_points=None, seed=0)


@pytest.mark.parametrize("cls", [RLGP, RGPE])
def test_the_target_weight_grows_with_its_evidence(many_copies_bank, cls):
    """w_target >= n / (n + n0) (n0 = 10, the default; n: the target's observations, of
    the algorithm for RGPE), the base weights rescaled to the rest."""
    configs = SPACE.sample(np.random.default_rng(8), 16)
    h = history_of(configs, [_rough(*c) for c in configs])
    strategy = cls(many_copies_bank, n_random=50, n_samples=50, seed=0)
    strategy.posterior(h, SPACE, "a", SPACE["a"].sample_encoded(np.random.default_rng(0), 2))
    for a, w in strategy.last_weights_.items():
        n = len(h.completed) if cls is RLGP else sum(r.algorithm == a for r in h.completed)
        assert w["target"] >= n / (n + 10) - 1e-12, (a, n, w)
        assert sum(w.values()) == pytest.approx(1.0)


def test_target_floor_rescales_the_base_weights():
    from metabo.strategies.weights import target_floor

    w = target_floor(np.array([0.6, 0.3, 0.1]), n=10, n0=10)  # the target (last) is below 10/20
    np.testing.assert_allclose(w, [0.6 * 0.5 / 0.9, 0.3 * 0.5 / 0.9, 0.5])
    np.testing.assert_array_equal(target_floor(np.array([0.2, 0.8]), n=10, n0=10), [0.2, 0.8])  # above: kept
    np.testing.assert_array_equal(target_floor(np.array([0.7, 0.3]), n=0, n0=10), [0.7, 0.3])


# ---------------------------------------------------------------- 2. one scale (Gaussian copula)
def test_copula_transform_in_closed_form():
    from scipy.stats import norm

    from metabo.surrogates.normalization import copula, winsorized_delta

    delta = 1.0 / (4.0 * 3**0.25 * np.sqrt(np.pi * np.log(3)))
    assert winsorized_delta(3) == pytest.approx(delta)
    F = np.clip(np.array([2.5, 0.5, 1.5]) / 3, delta, 1 - delta)  # mid-ranks of [3, 1, 2]
    np.testing.assert_allclose(copula(np.array([3.0, 1.0, 2.0])), norm.ppf(F), rtol=1e-12)
    ties = copula(np.array([1.0, 1.0, 2.0, 3.0]))  # tied values: one z, F = (0 + 2/2) / 4
    assert ties[0] == ties[1] == pytest.approx(norm.ppf(max(0.25, winsorized_delta(4))))
    y = np.random.default_rng(0).lognormal(size=50)
    z = copula(y)
    order = np.argsort(y)
    assert np.all(np.diff(z[order]) > 0)  # strictly increasing in y (no ties here)
    np.testing.assert_allclose(copula(np.exp(3 * y) + 7), z, rtol=0, atol=0)  # invariant to monotone maps
    np.testing.assert_allclose(copula(-y), -z, rtol=1e-12)  # symmetric
    assert z.min() == pytest.approx(norm.ppf(winsorized_delta(50)))  # winsorized
    assert copula(np.array([4.0])).tolist() == [0.0]


def test_base_and_target_values_of_one_function_land_on_one_scale():
    """A past task and the target evaluate the same configurations of the same function, the
    target on another (monotone) scale: both are normalized to the same values."""
    from metabo.surrogates.normalization import copula

    configs = list({config_id(a, p): (a, p) for a, p in SPACE.sample(np.random.default_rng(1), 16)}.values())
    f = {config_id(a, p): OBJECTIVE(a, p) for a, p in configs}
    past = shared_past(SPACE, {"t": OBJECTIVE}, n=16, seed=1)
    bank = SurrogateBank.fit(past, space_encoder(SPACE), max_points=None, seed=0)
    h = history_of(configs, [np.exp(3 * f[config_id(a, p)]) + 7 for a, p in configs])
    z = RLGP(bank, n_random=50, seed=0).target_values(h)
    u = np.concatenate([bank.training_data("t", a)[1] for a in bank.algorithms])
    np.testing.assert_allclose(np.sort(z), np.sort(u), atol=1e-12)
    np.testing.assert_allclose(z, copula(h.y), atol=0)
    assert bank.normalization_ == "copula"


def test_the_bank_cache_key_names_the_normalization():
    from metabo.surrogates import bank_cache

    keys = {n: bank_cache.settings_key(kernel="matern52", max_points=50, n_restarts=1, seed=0, encoder="e",
                                       normalization=n) for n in ("copula", "standardize")}
    assert keys["copula"] != keys["standardize"] and all('"normalization"' in k for k in keys.values())


# ---------------------------------------------------------------- 5. the target GP as GP-BO's
def test_target_gp_defaults_are_gp_bo_defaults():
    import inspect

    from metabo.strategies.gp import GPBO
    from metabo.strategies.transfer_ensemble import WeightedGPEnsembles

    ours, cold = inspect.signature(WeightedGPEnsembles).parameters, inspect.signature(GPBO).parameters
    for name in ("n_random", "n_local", "n_starts", "n_restarts", "refit_every", "warping"):
        assert ours[name].default == cold[name].default, name
    strategy = RLGP(SurrogateBank({}), seed=0)
    assert (strategy.n_random, strategy.n_local, strategy.n_restarts, strategy.warping) == (
        cold["n_random"].default, cold["n_local"].default, cold["n_restarts"].default, cold["warping"].default)


def test_the_target_gp_models_warped_values(bank):
    """normalization='standardize': the target's values are Yeo-Johnson warped as GP-BO's
    (skewed values: warping differs from plain standardization); the target GPs'
    hyperparameters are fitted on warped values (GP-BO's model cache and warping)."""
    from metabo.surrogates.warping import warp

    configs = SPACE.sample(np.random.default_rng(2), 10)
    h = history_of(configs, [np.exp(4 * OBJECTIVE(*c)) for c in configs])
    strategy = RLGP(bank, normalization="standardize", n_random=50, seed=0)
    z = strategy.target_values(h)
    np.testing.assert_allclose(z, warp(h.y), atol=1e-12)
    assert not np.allclose(z, (h.y - h.y.mean()) / h.y.std(), atol=1e-3)
    targets = strategy._target_models(h, SPACE, h.X(SPACE), z)
    for a, (model, _, za) in targets.items():
        rows = [i for i, r in enumerate(h.completed) if r.algorithm == a]
        np.testing.assert_allclose(za, z[rows], atol=1e-12)
        np.testing.assert_allclose(model.y_, z[rows], atol=1e-12)
        assert strategy._caches[a].warping == "yeo-johnson"
