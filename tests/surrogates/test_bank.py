"""The surrogate bank: each member is its own GP (batched, padded bins), exact sampling
transform, cache round trips through the store, refits of changed tasks only, corrupt
entries refitted, views, bad input."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest

from metabo.exceptions import InputDataError, SurrogateError, UnknownAlgorithmError
from metabo.kb import KnowledgeBase
from metabo.kb.canonical import config_id
from metabo.kb.past import PastRuns
from metabo.surrogates import bank_cache
from metabo.surrogates.bank import SurrogateBank, member_seed, space_encoder
from metabo.surrogates.gp import GaussianProcess, GPHyperparameters
from metabo.surrogates.normalization import copula, standardize
from metabo.testing.problems import two_algorithm_problem

SPACE, OBJECTIVE = two_algorithm_problem()
ENCODE = space_encoder(SPACE)
MAX_POINTS = 25


def frame(sizes=(6, 13, 20, 40), seed: int = 0) -> pd.DataFrame:
    """Runs of task t<i> with ``sizes[i]`` configurations per algorithm: members of 6, 13,
    20 and 25 (capped) points, so the bank has several bins and padding."""
    rng = np.random.default_rng(seed)
    rows = []
    for t, size in enumerate(sizes):
        for a in ("a", "b"):
            for p in SPACE[a].sample(rng, size):
                rows.append((f"t{t}", a, p, OBJECTIVE(a, p) * (1 + t) + 0.3 * t + 0.01 * rng.normal()))
    df = pd.DataFrame(rows, columns=["dataset_id", "algorithm", "params", "value"])
    df["config_id"] = [config_id(a, p) for a, p in zip(df["algorithm"], df["params"])]
    return df


def fit(past: PastRuns, **kw) -> SurrogateBank:
    return SurrogateBank.fit(past, ENCODE, **{"max_points": MAX_POINTS, "seed": 0, **kw})


@pytest.fixture(scope="module")
def data():
    past = PastRuns.from_frame(frame())
    return past, fit(past)


def test_standardize_normalization_keeps_the_earlier_scale():
    past = PastRuns.from_frame(frame(sizes=(6, 9)))
    bank = fit(past, normalization="standardize")
    assert bank.normalization_ == "standardize" and bank.without("t0").normalization_ == "standardize"
    for task in ("t0", "t1"):
        groups = past.task_runs(task)
        u_all = standardize(np.concatenate([g.values for g in groups.values()]))
        u = np.concatenate([bank.training_data(task, a)[1] for a in groups])
        np.testing.assert_allclose(u, u_all, atol=1e-12)


def own_gp(bank: SurrogateBank, task: str, algorithm: str) -> GaussianProcess:
    """The member's GP refitted on its data with its hyperparameters (fixed, in u units)."""
    s = bank.members_[(task, algorithm)]
    X, u = bank.training_data(task, algorithm)
    h = GPHyperparameters(s.lengthscales, s.amplitude * s.y_scale**2, s.noise * s.y_scale**2,
                          s.y_shift + s.y_scale * s.mean)
    return GaussianProcess().fit(X, u, hyperparameters=h)


def test_members_are_fitted_on_task_normalized_seeded_subsamples(data):
    """u: the Gaussian copula of the task's values over all its algorithms (the default
    normalization; it was the task's standardization, whose scale did not match the
    target's)."""
    past, bank = data
    assert bank.tasks == ("t0", "t1", "t2", "t3") and bank.algorithms == ("a", "b")
    assert bank.n_fitted_ == 8 and bank.n_loaded_ == 0 and bank.normalization_ == "copula"
    for (task, a), s in bank.members_.items():
        runs = past[(task, a)]
        groups = past.task_runs(task)  # every algorithm of the task
        u_all = copula(np.concatenate([g.values for g in groups.values()]))
        start = sum(len(g.values) for b, g in groups.items() if list(groups).index(b) < list(groups).index(a))
        u = u_all[start:start + len(runs)]
        X_all = SPACE[a].encode_many(list(runs.params))
        if len(runs) > MAX_POINTS:
            pick = np.sort(np.random.default_rng(member_seed(0, task, a)).choice(len(runs), MAX_POINTS, replace=False))
        else:
            pick = np.arange(len(runs))
        X, y = bank.training_data(task, a)
        np.testing.assert_array_equal(X, X_all[pick])
        np.testing.assert_allclose(y, u[pick], rtol=0, atol=1e-12)
        assert len(s.alpha) == min(MAX_POINTS, len(runs))
    # the MAP fit is the one a GaussianProcess makes of the same data with the member's seed
    gp = GaussianProcess(n_restarts=1, seed=member_seed(0, "t2", "a")).fit(*bank.training_data("t2", "a"))
    np.testing.assert_allclose(gp.posterior_state().lengthscales, bank.members_[("t2", "a")].lengthscales, rtol=1e-12)


@pytest.mark.parametrize("m", [1, 7, 300])
def test_every_member_predicts_as_its_own_gp(data, m):
    _, bank = data
    for a in bank.algorithms:
        X = SPACE[a].encode_many(SPACE[a].sample(m, m))
        mean, var = bank.predict(a, X)
        assert mean.shape == var.shape == (4, m)
        for i, t in enumerate(bank.members(a)):
            m_ref, v_ref = own_gp(bank, t, a).predict(X)
            np.testing.assert_allclose(mean[i], m_ref, rtol=0, atol=1e-8)
            np.testing.assert_allclose(var[i], v_ref, rtol=0, atol=1e-8)
            assert np.all(var[i] >= 0)
        # a subset of members, in the order asked
        sub_mean, sub_var = bank.predict(a, X, ["t3", "t0"])
        np.testing.assert_allclose(sub_mean, mean[[3, 0]], rtol=0, atol=1e-12)
        np.testing.assert_allclose(sub_var, var[[3, 0]], rtol=0, atol=1e-12)
    assert bank.predict("a", np.zeros((0, 2)))[0].shape == (4, 0)


def test_the_variance_is_latent_and_small_at_the_data(data):
    _, bank = data
    X, _ = bank.training_data("t3", "b")
    _, var = bank.predict("b", X, ["t3"])
    s = bank.members_[("t3", "b")]
    assert np.all(var < s.y_scale**2 * s.amplitude)  # below the prior everywhere it has data
    far = bank.predict("b", np.full((1, 2), 0.5))[1]
    assert far.shape == (4, 1)


def test_samples_are_the_gps_own_sampling_transform(data):
    _, bank = data
    X = SPACE["a"].encode_many(SPACE["a"].sample(2, 5))
    samples = bank.sample("a", X, 64, seed=np.random.default_rng(11))
    assert samples.shape == (4, 64, 5)
    rng = np.random.default_rng(11)  # the same stream, member after member
    for i, t in enumerate(bank.members("a")):
        np.testing.assert_allclose(samples[i], own_gp(bank, t, "a").sample(X, 64, seed=rng), rtol=0, atol=1e-7)
    np.testing.assert_array_equal(bank.sample("a", X, 64, seed=3), bank.sample("a", X, 64, seed=3))
    assert not np.array_equal(bank.sample("a", X, 64, seed=3), bank.sample("a", X, 64, seed=4))
    assert bank.sample("a", X, 2, seed=0, tasks=["t1"]).shape == (1, 2, 5)


def test_many_samples_have_the_posterior_mean_and_variance(data):
    _, bank = data
    X = SPACE["b"].encode_many(SPACE["b"].sample(5, 6))
    S = 6000
    samples = bank.sample("b", X, S, seed=3)
    mean, var = bank.predict("b", X)
    se = np.sqrt(var / S)
    assert np.all(np.abs(samples.mean(axis=1) - mean) <= 5 * se + 1e-9)
    np.testing.assert_allclose(samples.var(axis=1), var, rtol=0.12, atol=1e-10)
    # joint, not independent: neighbouring candidates correlate as the posterior says
    close = np.array([[0.40, 0.5], [0.41, 0.5]])
    s = bank.sample("b", close, S, seed=1)
    corr = np.array([np.corrcoef(s[i].T)[0, 1] for i in range(4)])
    assert np.all(corr > 0.5)


def test_members_do_not_depend_on_the_other_tasks_and_views_drop_tasks(data):
    past, bank = data
    alone = fit(past.only(tasks=["t1"]))
    np.testing.assert_array_equal(alone.members_[("t1", "a")].alpha, bank.members_[("t1", "a")].alpha)
    view = bank.without("t1")
    assert view.members("a") == ("t0", "t2", "t3") and "t1" in bank.members("a") and view.n_fitted_ == 0
    X = SPACE["a"].encode_many(SPACE["a"].sample(0, 5))
    np.testing.assert_allclose(view.predict("a", X)[0], bank.predict("a", X)[0][[0, 2, 3]], rtol=0, atol=1e-12)
    assert bank.without(["t0", "t1", "t2", "t3"]).algorithms == ()
    with pytest.raises(InputDataError):
        view.predict("a", X, ["t1"])


def test_bad_input(data):
    _, bank = data
    for bad in ("svm", None):
        with pytest.raises(InputDataError):
            bank.predict(bad, np.zeros((2, 2)))
    with pytest.raises(UnknownAlgorithmError):  # also a KeyError
        bank.sample("svm", np.zeros((2, 2)), 3)
    with pytest.raises(InputDataError, match=r"shape \(m, 2\)"):
        bank.predict("a", np.zeros((2, 5)))
    with pytest.raises(InputDataError):
        bank.predict("a", np.zeros(2))
    with pytest.raises(InputDataError, match="NaN"):
        bank.predict("a", np.full((1, 2), np.nan))
    with pytest.raises(InputDataError):
        bank.sample("a", np.array([[0.1, np.inf]]), 3)
    with pytest.raises(InputDataError):
        bank.predict("a", np.zeros((1, 2)), ["nope"])
    with pytest.raises(InputDataError):
        bank.sample("a", np.zeros((1, 2)), 0)
    with pytest.raises(InputDataError):
        bank.training_data("t0", "svm")
    past = PastRuns.from_frame(frame((5,)))
    with pytest.raises(InputDataError):
        fit(past, kernel="laplace")
    with pytest.raises(InputDataError):
        fit(past, max_points=0)
    with pytest.raises(InputDataError, match="key"):
        SurrogateBank.fit(past, lambda a, p: SPACE[a].encode_many(list(p)), kb=object())  # type: ignore[arg-type]


def test_unknown_algorithms_and_configurations_are_skipped_and_a_failing_fit_is_left_out(monkeypatch, caplog):
    df = frame((8, 9))
    outside = [("t0", "svm", {"C": 1.0}, 0.3), ("t0", "a", {"u": 2.0, "k": "l1"}, 0.5)]  # unknown; out of range
    extra = pd.DataFrame(outside, columns=["dataset_id", "algorithm", "params", "value"])
    extra["config_id"] = [config_id(a, p) for _, a, p, _ in outside]
    past = PastRuns.from_frame(pd.concat([df, extra], ignore_index=True))
    original = GaussianProcess.fit

    def failing(self, X, y, **kw):
        if self.seed == member_seed(0, "t1", "a"):
            raise SurrogateError("injected")
        return original(self, X, y, **kw)

    monkeypatch.setattr(GaussianProcess, "fit", failing)
    with caplog.at_level(logging.WARNING, logger="metabo.surrogates.bank"):
        bank = fit(past)
    assert set(bank.members_) == {("t0", "a"), ("t0", "b"), ("t1", "b")} and "injected" in caplog.text
    assert bank.members("a") == ("t0",)
    assert len(bank.training_data("t0", "a")[0]) == 8 and "1 of 9 a configurations on t0" in caplog.text


def test_progress_reports_every_member():
    seen = []
    fit(PastRuns.from_frame(frame((5, 6))), progress=lambda i, n: seen.append((i, n)))
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]


# ---------------------------------------------------------------------- the store's cache
def _kb_with_runs(path, df: pd.DataFrame) -> KnowledgeBase:
    kb = KnowledgeBase(path)
    kb.add_algorithms(["a", "b"])
    ids = {t: kb.register_dataset(name=t, source="test") for t in sorted(set(df["dataset_id"]))}
    kb.add_runs([{"dataset_id": ids[t], "algorithm": a, "params": p, "metric": "error_rate", "value": v, "fold": 0,
                  "source": "test"} for t, a, p, v in df[["dataset_id", "algorithm", "params", "value"]].itertuples(
                      index=False)])
    return kb


def test_cache_round_trip_and_refit_of_the_changed_task_only(tmp_path):
    path = tmp_path / "kb.duckdb"
    X = SPACE["a"].encode_many(SPACE["a"].sample(0, 7))
    with _kb_with_runs(path, frame((6, 13, 30))) as kb:
        past = PastRuns.from_kb(kb)
        first = fit(past, kb=kb)
        assert (first.n_fitted_, first.n_loaded_) == (6, 0)
        assert int(kb.query("SELECT count(*) AS n FROM surrogate_bank")["n"].iloc[0]) == 6
        t1 = past.tasks[1]
    with KnowledgeBase(path) as kb:  # reopened: every member from the store, identical predictions
        past = PastRuns.from_kb(kb)
        again = fit(past, kb=kb)
        assert (again.n_fitted_, again.n_loaded_) == (0, 6)
        for key, s in first.members_.items():
            t = again.members_[key]
            for field in ("X", "L", "alpha", "lengthscales"):
                np.testing.assert_array_equal(getattr(t, field), getattr(s, field))
            np.testing.assert_array_equal(again.targets_[key], first.targets_[key])
        np.testing.assert_array_equal(again.predict("a", X)[0], first.predict("a", X)[0])
        np.testing.assert_array_equal(again.sample("a", X, 5, seed=2), first.sample("a", X, 5, seed=2))
        # one more run on t1: only t1's GPs are refitted (both algorithms: its scale changed)
        kb.add_runs([{"dataset_id": t1, "algorithm": "b", "params": {"v": 0.5, "n": 3}, "metric": "error_rate",
                      "value": 0.42, "fold": 0, "source": "test"}])
        changed_past = PastRuns.from_kb(kb)
        changed = fit(changed_past, kb=kb)
        assert (changed.n_fitted_, changed.n_loaded_) == (2, 4)
        fresh = fit(changed_past)  # the refitted members are what a fit without the store gives
        for key in changed.members_:
            np.testing.assert_array_equal(changed.members_[key].alpha, fresh.members_[key].alpha)
        assert fit(changed_past, kb=kb).n_fitted_ == 0
        # other settings are other entries; the first ones stay
        assert fit(changed_past, kb=kb, max_points=10).n_fitted_ == 6
        assert fit(changed_past, kb=kb, seed=1).n_fitted_ == 6
        assert fit(changed_past, kb=kb).n_fitted_ == 0
        assert bank_cache.clear(kb) == 18 and fit(changed_past, kb=kb).n_fitted_ == 6


def _tamper(kb: KnowledgeBase, task: str, algorithm: str, blob: bytes) -> None:
    kb.connection.execute("UPDATE surrogate_bank SET state = ? WHERE task = ? AND algorithm = ?",
                          [blob, task, algorithm])


def _blob(kb: KnowledgeBase, task: str, algorithm: str) -> tuple[bytes, tuple[str, ...]]:
    row = kb.query("SELECT task, algorithm, metric, settings, fingerprint, state FROM surrogate_bank "
                   "WHERE task = ? AND algorithm = ?", [task, algorithm]).iloc[0]
    return bytes(row["state"]), tuple(row[["task", "algorithm", "metric", "settings", "fingerprint"]])


def test_corrupt_entries_are_refitted_never_used(tmp_path, caplog):
    past = PastRuns.from_frame(frame((6, 13, 30)))
    X = SPACE["a"].encode_many(SPACE["a"].sample(0, 7))
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        first = fit(past, kb=kb)
        good, identity = _blob(kb, "t0", "a")
        other, _ = _blob(kb, "t2", "a")
        member = bank_cache.unpack(good, identity)
        s = member.state
        scaled_L = bank_cache.CachedMember(type(s)(s.X, s.L * 1.001, s.alpha, s.lengthscales, s.amplitude, s.noise,
                                                   s.mean, s.y_shift, s.y_scale), member.y, member.jitter)
        moved_y = bank_cache.CachedMember(s, member.y + 1e-3, member.jitter)
        bad = {
            "garbage": b"garbage",
            "truncated": good[: len(good) // 2],
            **{f"bit flip at {i}": good[:i] + bytes([good[i] ^ 0x10]) + good[i + 1:]
               for i in (3, 30, 250, len(good) - 1)},
            "another member's": other,
            "wrong factor": bank_cache.pack(scaled_L, identity),
            "wrong targets": bank_cache.pack(moved_y, identity),
        }
        for what, blob in bad.items():
            with pytest.raises(bank_cache.CorruptEntryError):
                bank_cache.unpack(blob, identity)
            if what.startswith("wrong"):  # a valid archive: caught by the factorization check
                with pytest.raises(bank_cache.CorruptEntryError, match="reproduce"):
                    bank_cache.unpack(blob, identity)
            _tamper(kb, "t0", "a", blob)
            caplog.clear()
            with caplog.at_level(logging.WARNING, logger="metabo.surrogates.bank_cache"):
                healed = fit(past, kb=kb)
            assert (healed.n_fitted_, healed.n_loaded_) == (1, 5), what
            assert "cannot be trusted" in caplog.text, what
            np.testing.assert_allclose(healed.predict("a", X)[0], first.predict("a", X)[0], rtol=0, atol=1e-12)
            assert fit(past, kb=kb).n_fitted_ == 0, what  # the refit was stored back
        assert bank_cache.unpack(good, identity).jitter == member.jitter


def test_the_cache_is_not_exported(tmp_path):
    from metabo.kb.parquet_io import export_parquet, import_parquet

    past = PastRuns.from_frame(frame((6, 7)))
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        fit(past, kb=kb)
        export_parquet(kb, tmp_path / "export")
    assert not (tmp_path / "export" / "surrogate_bank.parquet").exists()
    with KnowledgeBase(tmp_path / "imported.duckdb") as kb:
        import_parquet(kb, tmp_path / "export")
        assert fit(past, kb=kb).n_fitted_ == 4  # an imported store refits its bank once
        assert fit(past, kb=kb).n_fitted_ == 0


def test_a_read_only_store_serves_its_cache_and_is_not_written(tmp_path, caplog):
    past = PastRuns.from_frame(frame((6, 7)))
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        fit(past.only(tasks=["t0"]), kb=kb)
    with KnowledgeBase(tmp_path / "kb.duckdb", read_only=True) as kb:
        with caplog.at_level(logging.WARNING, logger="metabo.surrogates.bank"):
            bank = fit(past, kb=kb)
        assert (bank.n_fitted_, bank.n_loaded_) == (2, 2) and "could not be cached" in caplog.text


def test_kept_selections_and_sampling_factors_give_the_results_of_a_fresh_bank(data, monkeypatch):
    """predict with a selection of members and sample at the same X again (the cached
    paths) equal a fresh bank's first calls, bit for bit; eviction keeps them right."""
    from metabo.surrogates import bank as bank_module

    past, bank = data
    X = SPACE["a"].encode_many(SPACE["a"].sample(7, 6))
    Y = SPACE["a"].encode_many(SPACE["a"].sample(8, 4))

    def fresh() -> SurrogateBank:
        return SurrogateBank(bank.members_, bank.targets_)

    for tasks in (["t3", "t1"], None, ["t0"]):
        first = fresh().predict("a", X, tasks)
        bank.predict("a", Y, tasks)  # keeps the selection
        again = bank.predict("a", X, tasks)
        for f, g in zip(first, again):
            np.testing.assert_array_equal(f, g)
    for tasks in (["t2", "t0"], None):
        first = fresh().sample("a", X, 16, seed=5, tasks=tasks)
        bank.sample("a", X, 16, seed=9, tasks=tasks)  # keeps the factors at X
        np.testing.assert_array_equal(bank.sample("a", X, 16, seed=5, tasks=tasks), first)
    monkeypatch.setattr(bank_module, "_FACTORS_KEPT", 1)
    monkeypatch.setattr(bank_module, "_SELECTIONS_KEPT", 1)
    small = fresh()
    for Z in (X, Y, X):
        np.testing.assert_array_equal(small.sample("a", Z, 8, seed=1), fresh().sample("a", Z, 8, seed=1))
        for tasks in (["t1"], ["t2", "t3"]):
            np.testing.assert_array_equal(small.predict("a", Z, tasks)[1], fresh().predict("a", Z, tasks)[1])
    assert len(small._factors) == 1 and len(small._selections) == 1


def test_state_predictor_is_the_gps_own_predict():
    """One GP's posterior arrays by the bank's batched path: its predict, to rounding."""
    from metabo.surrogates.bank import state_predictor

    rng = np.random.default_rng(4)
    X, y = rng.random((9, 3)), rng.normal(size=9) * 3 + 1
    gp = GaussianProcess(seed=0).fit(X, y)
    gp.add(rng.random(3), 0.5)  # an extended factor, as the target GPs have
    Xs = rng.random((40, 3))
    for got, want in zip(state_predictor(gp.posterior_state())(Xs), gp.predict(Xs)):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    assert state_predictor(gp.posterior_state())(np.empty((0, 3)))[0].shape == (0,)


def test_a_pickled_bank_predicts_as_the_original(data):
    import pickle

    _, bank = data
    X = SPACE["a"].encode_many(SPACE["a"].sample(3, 5))
    bank.sample("a", X, 4, seed=0)  # fills a cache, which is not pickled
    copy = pickle.loads(pickle.dumps(bank))
    assert not copy._factors and copy.algorithms == bank.algorithms and copy.tasks == bank.tasks
    np.testing.assert_array_equal(copy.predict("a", X, ["t2"])[0], bank.predict("a", X, ["t2"])[0])
    np.testing.assert_array_equal(copy.sample("a", X, 4, seed=1), bank.sample("a", X, 4, seed=1))
