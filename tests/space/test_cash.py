"""CASHSpace: algorithm root, one-hot + block encoding, ConfigSpace round trip."""

from __future__ import annotations

import json
import math
import pickle

import ConfigSpace as CS
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metabo.exceptions import InputDataError, InvalidConfigurationError, UnknownAlgorithmError
from metabo.kb.canonical import canonical_json
from metabo.space import Categorical, EqualsCondition, Float, Integer, SearchSpace
from metabo.space.algorithms import ALGORITHMS, default_cash_space
from metabo.space.cash import CASHSpace

SEEDS = st.integers(0, 2**32 - 1)


def toy_cash() -> CASHSpace:
    svm = SearchSpace(
        "svm",
        [Categorical("kernel", ("rbf", "poly")), Float("C", 1e-3, 1e3, log=True), Integer("degree", 2, 5)],
        [EqualsCondition("degree", "kernel", "poly")],
    )
    knn = SearchSpace("knn", [Integer("n_neighbors", 1, 30, default=5)])
    return CASHSpace({"svm": svm, "knn": knn, "nb": SearchSpace("nb", [])})


def close(a: dict, b: dict) -> bool:
    return list(a) == list(b) and all(
        math.isclose(a[k], b[k], rel_tol=1e-9) if isinstance(a[k], float) else a[k] == b[k] for k in a
    )


def test_layout_and_slices():
    cash = toy_cash()
    assert cash.algorithms == ("svm", "knn", "nb") and len(cash) == 3
    assert cash.n_dims == 3 + 3 + 1 + 0
    assert cash.slices["svm"] == slice(3, 6) and cash.slices["knn"] == slice(6, 7) and cash.slices["nb"] == slice(7, 7)


def test_encode_one_hot_then_blocks_with_imputed_defaults():
    cash = toy_cash()
    x = cash.encode("knn", {"n_neighbors": 30})
    np.testing.assert_array_equal(x[:3], [0, 1, 0])
    svm = cash["svm"]
    np.testing.assert_allclose(x[cash.slices["svm"]], svm.encode(svm.default_configuration()))
    assert x[cash.slices["knn"]][0] == pytest.approx(29.5 / 30)
    assert cash.decode(x) == ("knn", {"n_neighbors": 30})
    mask = cash.active_mask("svm", {"kernel": "rbf", "C": 1.0})
    assert mask.tolist() == [True, True, True, True, True, False, False]


@given(SEEDS)
def test_round_trip_and_inactive_blocks_ignored(seed):
    cash = default_cash_space()
    rng = np.random.default_rng(seed)
    for algorithm, params in cash.sample(rng, n=4):
        x = cash.encode(algorithm, params)
        assert x.shape == (cash.n_dims,) and np.all((0 <= x) & (x <= 1)) and x[: len(cash)].sum() == 1
        a, p = cash.decode(x)
        assert a == algorithm and close(p, params)
        noisy = x.copy()
        mask = cash.active_mask(algorithm, params)
        noisy[~mask] = rng.random((~mask).sum())
        noisy[: len(cash)] = x[: len(cash)]
        a, p = cash.decode(noisy)
        assert a == algorithm and close(p, params)


def test_sampling_is_seeded_uniform_over_algorithms_and_plain():
    cash = default_cash_space()
    assert cash.sample(3, n=30) == cash.sample(3, n=30)
    assert cash.sample(3, n=30) != cash.sample(4, n=30)
    samples = cash.sample(0, n=1200)  # 50 of each of the 24 algorithms expected (sd 7)
    counts = {a: sum(s[0] == a for s in samples) for a in cash}
    assert set(counts) == set(ALGORITHMS) and min(counts.values()) > 30
    for algorithm, params in samples[:100]:
        cash.validate(algorithm, params)
        assert canonical_json(json.loads(canonical_json(params))) == canonical_json(params)


def test_unknown_algorithm_lists_valid_names():
    cash = toy_cash()
    for call in (
        lambda: cash.validate("xgboost", {}),
        lambda: cash.encode("xgboost", {}),
        lambda: cash["xgboost"],
        lambda: cash.subset(["svm", "xgboost"]),
        lambda: cash.active_mask("xgboost", {}),
    ):
        with pytest.raises(UnknownAlgorithmError, match=r"'xgboost'.*\['svm', 'knn', 'nb'\]"):
            call()
    with pytest.raises(InvalidConfigurationError, match="'degree'"):
        cash.validate("svm", {"kernel": "rbf", "C": 1.0, "degree": 3})


def test_subset_keeps_the_given_order():
    sub = default_cash_space().subset(["svm_rbf", "knn"])
    assert sub.algorithms == ("svm_rbf", "knn")
    assert sub.n_dims == 2 + 2 + 3
    assert default_cash_space(["svm_rbf", "knn"]) == sub


def test_neighbours():
    cash = toy_cash()
    nbs = cash.neighbours("svm", {"kernel": "rbf", "C": 1.0}, 0, n_per_numeric=2)
    assert ("knn", {"n_neighbors": 5}) in nbs and ("nb", {}) in nbs
    own = [p for a, p in nbs if a == "svm"]
    assert {"kernel": "poly", "C": 1.0, "degree": 4} in own and len(own) == 3
    for a, p in nbs:
        cash.validate(a, p)


def test_default_configuration():
    assert toy_cash().default_configuration() == ("svm", {"kernel": "rbf", "C": 1.0})
    assert toy_cash().default_configuration("nb") == ("nb", {})


@pytest.mark.parametrize("make", [toy_cash, default_cash_space])
def test_configspace_round_trip(make):
    cash = make()
    cs = cash.to_configspace()
    assert cs["algorithm"].choices == cash.algorithms
    back = CASHSpace.from_configspace(cs)
    assert back == cash and back.algorithms == cash.algorithms
    assert CASHSpace.from_json(cash.to_json()) == cash
    cs.seed(0)
    for sample in cs.sample_configuration(200):
        values = dict(sample)
        algorithm = values.pop("algorithm")
        params = {k.split(":", 1)[1]: v for k, v in values.items()}
        assert all(k.startswith(f"{algorithm}:") for k in values)
        cash.validate(algorithm, params)
        cash.encode(algorithm, params)


def test_configspace_uses_the_auto_sklearn_convention():
    cs = toy_cash().to_configspace()
    conditions = {str(c) for c in cs.conditions}
    assert "svm:C | algorithm == 'svm'" in conditions
    assert "svm:degree | svm:kernel == 'poly'" in conditions
    for algorithm, params in toy_cash().sample(0, n=50):
        values = {"algorithm": algorithm, **{f"{algorithm}:{k}": v for k, v in params.items()}}
        CS.Configuration(cs, values=values).check_valid_configuration()


def test_from_configspace_refuses_non_cash_spaces():
    no_root = CS.ConfigurationSpace(name="x")
    no_root.add(CS.Float("svm:C", (0.1, 1.0)))
    unprefixed = CS.ConfigurationSpace(name="x")
    root = CS.Categorical("algorithm", ["svm"])
    unprefixed.add([root, CS.Float("C", (0.1, 1.0))])
    orphan = CS.ConfigurationSpace(name="x")
    orphan.add([CS.Categorical("algorithm", ["svm", "knn"]), CS.Float("svm:C", (0.1, 1.0))])
    for cs in (no_root, unprefixed, orphan):
        with pytest.raises(InputDataError):
            CASHSpace.from_configspace(cs)


@settings(max_examples=30)
@given(st.lists(st.floats(0, 1), min_size=99, max_size=99))
def test_any_vector_decodes_to_a_valid_cash_config(vector):
    cash = default_cash_space()
    # one-hot of 24 algorithms + 41 dims of the first 14 + 22 of the 8 added for OBOE's grid
    # + 12 of XGBoost and CatBoost
    assert cash.n_dims == 24 + 41 + 22 + 12
    algorithm, params = cash.decode(vector)
    cash.validate(algorithm, params)


def test_pickles_and_names_blocks_after_their_algorithm():
    cash = toy_cash()
    assert pickle.loads(pickle.dumps(cash)) == cash
    renamed = CASHSpace({"k": SearchSpace("knn", [Integer("n_neighbors", 1, 30)])})
    assert renamed["k"].name == "k"
    assert CASHSpace.from_configspace(renamed.to_configspace()) == renamed
    with pytest.raises(TypeError):
        cash.spaces["x"] = cash["nb"]  # type: ignore[index]


def test_bad_cash_spaces():
    with pytest.raises(InputDataError):
        CASHSpace({})
    with pytest.raises(InputDataError):
        CASHSpace({"a:b": SearchSpace("x", [])})
    with pytest.raises(InputDataError):
        CASHSpace({"a": "not a space"})
    with pytest.raises(InputDataError):
        toy_cash().decode(np.zeros(3))


@pytest.mark.parametrize("make", [toy_cash, default_cash_space])
def test_sample_encoded_rows_are_encodings_of_valid_configurations(make):
    cash = make()
    X = cash.sample_encoded(3, 400)
    assert X.shape == (400, cash.n_dims)
    for x in X:
        algorithm, params = cash.decode(x)
        cash.validate(algorithm, params)  # inactive coordinates hold the defaults' codes:
        np.testing.assert_allclose(cash.encode(algorithm, params), x, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(X, cash.sample_encoded(3, 400))  # seeded


def test_sample_encoded_has_the_distribution_of_sample():
    """Algorithm frequencies and the conditional child's activity rate match ``sample``
    (two-sample chi-square on counts; 4,000 draws each)."""
    from scipy.stats import chi2_contingency

    cash = toy_cash()
    n = 4000
    by_vector = [cash.decode(x) for x in cash.sample_encoded(0, n)]
    by_sample = cash.sample(1, n)

    def counts(configs):
        keys = ["svm-rbf", "svm-poly", "knn", "nb"]
        c = dict.fromkeys(keys, 0)
        for a, p in configs:
            c[f"svm-{p['kernel']}" if a == "svm" else a] += 1
        return [c[k] for k in keys]

    _, p_value, _, _ = chi2_contingency([counts(by_vector), counts(by_sample)])
    assert p_value > 1e-3
    degree = [p["degree"] for a, p in by_vector if a == "svm" and "degree" in p]
    assert set(degree) == {2, 3, 4, 5}


def test_encoded_neighbours_keep_the_algorithm_then_list_the_other_defaults():
    cash = default_cash_space()
    rng = np.random.default_rng(5)
    for algorithm, params in cash.sample(rng, 30):
        x = cash.encode(algorithm, params)
        own = cash.neighbours_encoded(x, 0, 4, other_algorithms=False)
        both = cash.neighbours_encoded(x, 0, 4)
        assert len(both) == len(own) + len(cash) - 1
        np.testing.assert_array_equal(both[: len(own)], own)
        for row in own:
            a, p = cash.decode(row)
            assert a == algorithm
            cash.validate(a, p)
        others = [cash.encode(*cash.default_configuration(b)) for b in cash.algorithms if b != algorithm]
        np.testing.assert_array_equal(both[len(own):], np.array(others))


@settings(max_examples=25, deadline=None)
@given(SEEDS, st.booleans())
def test_neighbours_of_many_rows_equal_one_row_at_a_time(seed, others):
    """The batched neighbourhoods (one call per local-search step) are the rows' own
    neighbourhoods in row order, drawn from the generator in the same order, whatever the
    mix of algorithms and active conditions."""
    cash = default_cash_space()
    X = cash.sample_encoded(seed, 7)
    rows, owner = cash.neighbours_encoded_many(X, np.random.default_rng(seed), 3, other_algorithms=others)
    gen = np.random.default_rng(seed)
    one = [cash.neighbours_encoded(x, gen, 3, other_algorithms=others) for x in X]
    np.testing.assert_array_equal(rows, np.vstack(one))
    np.testing.assert_array_equal(owner, np.concatenate([np.full(len(r), k) for k, r in enumerate(one)]))
    with pytest.raises(InputDataError):
        cash.neighbours_encoded_many(X[:, 1:], 0)
