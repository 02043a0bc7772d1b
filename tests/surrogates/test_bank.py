"""The surrogate bank: each member equals its own GP, batched; samples; views; bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from metabo.exceptions import InputDataError, UnknownAlgorithmError
from metabo.kb.canonical import config_id
from metabo.kb.past import PastRuns
from metabo.surrogates.bank import SurrogateBank, space_encoder
from metabo.surrogates.gp import GaussianProcess
from metabo.testing.problems import two_algorithm_problem

SPACE, OBJECTIVE = two_algorithm_problem()


def past(n_tasks: int = 4, seed: int = 0) -> PastRuns:
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(n_tasks):
        for a, p in SPACE.sample(rng, 40 + 5 * t):  # tasks of different sizes: several batch groups
            rows.append((f"t{t}", a, p, OBJECTIVE(a, p) * (1 + t) + 0.3 * t + 0.01 * rng.normal()))
    frame = pd.DataFrame(rows, columns=["dataset_id", "algorithm", "params", "value"])
    frame["config_id"] = [config_id(a, p) for a, p in zip(frame["algorithm"], frame["params"])]
    return PastRuns.from_frame(frame)


@pytest.fixture(scope="module")
def data():
    p = past()
    return p, SurrogateBank.fit(p, space_encoder(SPACE), max_points=20, seed=0)


def test_every_member_predicts_as_its_own_gp(data):
    p, bank = data
    assert bank.tasks == ("t0", "t1", "t2", "t3") and bank.algorithms == ("a", "b")
    X = SPACE["b"].encode_many(SPACE["b"].sample(1, 30))
    mean, var = bank.predict("b", X)
    assert mean.shape == var.shape == (4, 30)
    for i, t in enumerate(bank.members("b")):
        s = bank.members_[(t, "b")]
        values = np.concatenate([g.values for g in p.task_runs(t).values()])
        runs = p[(t, "b")]
        assert len(s.alpha) == min(20, len(runs))
        gp = GaussianProcess(seed=0)
        # the same data (task-standardized, the member's subsample) and hyperparameters
        u = (runs.values - values.mean()) / values.std()
        keep = [j for j, x in enumerate(SPACE["b"].encode_many(runs.params)) if any(np.allclose(x, r) for r in s.X)]
        gp.fit(s.X, u[keep], hyperparameters=_hyper(s))
        m_ref, v_ref = gp.predict(X)
        np.testing.assert_allclose(mean[i], m_ref, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(var[i], v_ref, rtol=1e-6, atol=1e-9)
    sub_mean, _ = bank.predict("b", X, ["t2", "t0"])
    np.testing.assert_array_equal(sub_mean, mean[[2, 0]])


def _hyper(s):
    from metabo.surrogates.gp import GPHyperparameters

    return GPHyperparameters(s.lengthscales, s.amplitude * s.y_scale**2, s.noise * s.y_scale**2,
                             s.y_shift + s.y_scale * s.mean)


def test_samples_match_the_posterior(data):
    _, bank = data
    X = SPACE["a"].encode_many(SPACE["a"].sample(2, 6))
    samples = bank.sample("a", X, 4000, seed=3)
    assert samples.shape == (4, 4000, 6)
    mean, var = bank.predict("a", X)
    sd = np.sqrt(var) + 1e-9
    np.testing.assert_allclose(samples.mean(axis=1), mean, atol=float(4 * sd.max() / np.sqrt(4000)) + 1e-6)
    np.testing.assert_allclose(samples.var(axis=1), var, rtol=0.15, atol=1e-8)
    np.testing.assert_array_equal(samples, bank.sample("a", X, 4000, seed=3))


def test_members_do_not_depend_on_the_other_tasks_and_views_drop_tasks(data):
    p, bank = data
    alone = SurrogateBank.fit(p.only(tasks=["t1"]), space_encoder(SPACE), max_points=20, seed=0)
    np.testing.assert_array_equal(alone.members_[("t1", "a")].alpha, bank.members_[("t1", "a")].alpha)
    view = bank.without("t1")
    assert view.members("a") == ("t0", "t2", "t3") and "t1" in bank.members("a")
    X = SPACE["a"].encode_many(SPACE["a"].sample(0, 5))
    np.testing.assert_allclose(view.predict("a", X)[0], bank.predict("a", X)[0][[0, 2, 3]])


def test_bad_input(data):
    _, bank = data
    with pytest.raises(UnknownAlgorithmError):
        bank.predict("svm", np.zeros((2, 2)))
    with pytest.raises(InputDataError):
        bank.predict("a", np.zeros((2, 5)))
    with pytest.raises(InputDataError):
        bank.predict("a", np.full((1, 2), np.nan))
    with pytest.raises(InputDataError):
        bank.predict("a", np.zeros((1, 2)), ["nope"])
    with pytest.raises(InputDataError):
        SurrogateBank.fit(past(1), space_encoder(SPACE), kernel="laplace")


def test_store_cache_loads_unchanged_tasks_and_refits_changed_ones(tmp_path):
    from metabo.kb import KnowledgeBase

    p = past(3)
    path = tmp_path / "kb.duckdb"
    X = SPACE["a"].encode_many(SPACE["a"].sample(0, 7))
    with KnowledgeBase(path) as kb:
        first = SurrogateBank.fit(p, space_encoder(SPACE), max_points=20, seed=0, kb=kb)
        assert first.n_fitted_ == 6
    with KnowledgeBase(path) as kb:  # reopened: every member from the store, identical predictions
        again = SurrogateBank.fit(p, space_encoder(SPACE), max_points=20, seed=0, kb=kb)
        assert again.n_fitted_ == 0
        np.testing.assert_array_equal(again.predict("a", X)[0], first.predict("a", X)[0])
        # one more run on t1: only t1's GPs (both algorithms: its scale changed) are refitted
        frame = pd.DataFrame([(t, a, c, pr, v) for (t, a), g in p.groups.items()
                              for c, pr, v in zip(g.config_ids, g.params, g.values)],
                             columns=["dataset_id", "algorithm", "config_id", "params", "value"])
        extra = ("b", {"v": 0.5, "n": 3})
        frame.loc[len(frame)] = ["t1", "b", config_id(*extra), extra[1], 0.42]
        changed = SurrogateBank.fit(PastRuns.from_frame(frame), space_encoder(SPACE), max_points=20, seed=0, kb=kb)
        assert changed.n_fitted_ == 2
        # other settings are other entries
        assert SurrogateBank.fit(p, space_encoder(SPACE), max_points=10, seed=0, kb=kb).n_fitted_ == 6
        # a corrupt blob is refitted, not trusted
        kb.connection.execute("UPDATE surrogate_bank SET state = 'garbage'::BLOB WHERE task = 't0' AND algorithm = 'a'")
        healed = SurrogateBank.fit(PastRuns.from_frame(frame), space_encoder(SPACE), max_points=20, seed=0, kb=kb)
        assert healed.n_fitted_ == 1
        np.testing.assert_allclose(healed.predict("a", X)[0][[0, 2]], first.predict("a", X)[0][[0, 2]])  # t1 changed
