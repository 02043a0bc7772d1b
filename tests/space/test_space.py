"""SearchSpace: sampling, validation, unit-cube encoding, neighbours, ConfigSpace."""

from __future__ import annotations

import json
import math
import pickle

import ConfigSpace as CS
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metabo.exceptions import InputDataError, InvalidConfigurationError
from metabo.kb.canonical import canonical_json
from metabo.space import Categorical, Constant, EqualsCondition, Float, InCondition, Integer, SearchSpace

SEEDS = st.integers(0, 2**32 - 1)


def toy() -> SearchSpace:
    """A conditional space with a grandchild: shrink -> shrinkage only under lsqr."""
    return SearchSpace(
        "toy",
        [
            Categorical("kernel", ("rbf", "poly", "linear")),
            Float("C", 1e-5, 1e5, log=True, default=1.0),
            Integer("degree", 1, 5, default=3),
            Float("coef0", -1.0, 1.0),
            Categorical("solver", ("svd", "lsqr")),
            Float("shrinkage", 0.0, 1.0, default=0.1),
            Integer("leaves", 3, 64, log=True, default=31),
            Constant("tol", 1e-4),
        ],
        [
            EqualsCondition("degree", "kernel", "poly"),
            InCondition("coef0", "kernel", ("poly", "linear")),
            EqualsCondition("solver", "kernel", "linear"),
            EqualsCondition("shrinkage", "solver", "lsqr"),
        ],
    )


def same_config(a: dict, b: dict) -> bool:
    if list(a) != list(b):
        return False
    for k in a:
        if type(a[k]) is not type(b[k]):
            return False
        if not (math.isclose(a[k], b[k], rel_tol=1e-9) if isinstance(a[k], float) else a[k] == b[k]):
            return False
    return True


# -- sampling -------------------------------------------------------------------------
def test_same_seed_same_samples_other_seed_different():
    space = toy()
    assert space.sample(7, n=20) == space.sample(7, n=20)
    assert space.sample(7, n=20) != space.sample(8, n=20)
    rng = np.random.default_rng(0)
    assert space.sample(rng, n=1) != space.sample(rng, n=1)


@given(SEEDS)
def test_samples_validate_hold_active_only_and_are_plain(seed):
    space = toy()
    for config in space.sample(seed, n=5):
        space.validate(config)
        assert set(config) == space.active(config)
        assert all(type(v) in (int, float, str) for v in config.values())
        text = canonical_json(config)
        assert canonical_json(json.loads(text)) == text
        assert json.loads(text) == config


def test_activity_follows_the_condition_chain():
    space = toy()
    base = {"C": 1.0, "leaves": 31, "tol": 1e-4}
    assert space.active({**base, "kernel": "rbf"}) == {"kernel", "C", "leaves", "tol"}
    assert space.active({"kernel": "linear", "solver": "lsqr"}) >= {"coef0", "solver", "shrinkage"}
    assert "shrinkage" not in space.active({"kernel": "poly", "solver": "lsqr"})  # solver inactive
    configs = space.sample(0, n=300)
    assert {"shrinkage", "degree"} <= set().union(*configs)
    assert any("degree" not in c for c in configs)


# -- validation -----------------------------------------------------------------------
def _valid() -> dict:
    return {"kernel": "linear", "C": 2.0, "coef0": 0.0, "solver": "svd", "leaves": 5, "tol": 1e-4}


@pytest.mark.parametrize(
    ("change", "name"),
    [
        ({"gamma": 1.0}, "gamma"),  # unknown
        ({"degree": 2}, "degree"),  # inactive under linear
        ({"shrinkage": 0.5}, "shrinkage"),  # inactive under svd
        ({"C": 1e6}, "C"),  # out of range
        ({"leaves": 5.0}, "leaves"),  # wrong type
        ({"kernel": "sigmoid"}, "kernel"),
        ({"tol": 1e-3}, "tol"),
    ],
)
def test_validation_errors_name_the_hyperparameter(change, name):
    config = {**_valid(), **change}
    with pytest.raises(InvalidConfigurationError, match=repr(name)):
        toy().validate(config)


def test_missing_active_value_is_named():
    config = _valid()
    del config["coef0"]
    with pytest.raises(InvalidConfigurationError, match="active hyperparameter 'coef0' has no value"):
        toy().validate(config)


def test_non_mapping_is_refused():
    with pytest.raises(InvalidConfigurationError):
        toy().validate([("C", 1.0)])


def test_normalize_returns_plain_values_in_order():
    config = {"tol": 1e-4, "leaves": np.int64(5), "C": 2, "kernel": np.str_("rbf")}
    out = toy().normalize(config)
    assert list(out) == ["kernel", "C", "leaves", "tol"]
    assert [type(v) for v in out.values()] == [str, float, int, float]


@pytest.mark.parametrize(
    "make",
    [
        lambda: SearchSpace("s", [Float("a", 0, 1), Float("a", 0, 2)]),
        lambda: SearchSpace("s", [Float("a", 0, 1)], [EqualsCondition("a", "b", 1)]),
        lambda: SearchSpace("s", [Categorical("a", ("x", "y")), Float("b", 0, 1)], [EqualsCondition("b", "a", "z")]),
        lambda: SearchSpace(
            "s",
            [Categorical("a", ("x", "y")), Categorical("b", ("x", "y"))],
            [EqualsCondition("a", "b", "x"), EqualsCondition("b", "a", "x")],
        ),
        lambda: SearchSpace(
            "s",
            [Categorical("a", ("x", "y")), Categorical("b", ("x", "y")), Float("c", 0, 1)],
            [EqualsCondition("c", "a", "x"), EqualsCondition("c", "b", "x")],
        ),
        lambda: SearchSpace("", []),
        lambda: SearchSpace("s", ["a"]),
    ],
)
def test_bad_spaces_raise_input_data_error(make):
    with pytest.raises(InputDataError):
        make()


# -- encoding -------------------------------------------------------------------------
@given(SEEDS)
def test_encode_decode_round_trip(seed):
    space = toy()
    for config in space.sample(seed, n=5):
        x = space.encode(config)
        assert x.shape == (len(space),) and np.all((0 <= x) & (x <= 1))
        assert same_config(space.decode(x), config)
        np.testing.assert_allclose(space.encode(space.decode(x)), x, atol=1e-12)


@given(SEEDS)
def test_inactive_coordinates_hold_the_default_encoding_and_are_ignored(seed):
    space = toy()
    rng = np.random.default_rng(seed)
    defaults = np.array([hp.to_unit(hp.default) for hp in space])
    for config in space.sample(rng, n=5):
        x, mask = space.encode(config), space.active_mask(config)
        assert [hp.name in config for hp in space] == mask.tolist()
        np.testing.assert_array_equal(x[~mask], defaults[~mask])
        noisy = x.copy()
        noisy[~mask] = rng.random((~mask).sum())  # anything in inactive coordinates ...
        assert same_config(space.decode(noisy), config)  # ... decodes to the same config
        for name in set(space.names) - set(config):  # and values for them are refused
            with pytest.raises(InvalidConfigurationError, match=repr(name)):
                space.encode({**config, name: space[name].default})


def test_inactive_default_choice_changes_only_inactive_coordinates():
    space = toy()
    shifted = SearchSpace(
        "toy",
        [hp if hp.name != "degree" else Integer("degree", 1, 5, default=1) for hp in space],
        space.conditions,
    )
    config = {"kernel": "rbf", "C": 3.0, "leaves": 7, "tol": 1e-4}
    a, b = space.encode(config), shifted.encode(config)
    mask = space.active_mask(config)
    np.testing.assert_array_equal(a[mask], b[mask])


@given(st.lists(st.floats(0, 1), min_size=8, max_size=8))
def test_any_unit_vector_decodes_to_a_valid_config(vector):
    space = toy()
    config = space.decode(vector)
    space.validate(config)
    assert same_config(space.decode(space.encode(config)), config)


def test_decode_checks_its_input():
    space = toy()
    with pytest.raises(InputDataError):
        space.decode(np.zeros(3))
    with pytest.raises(InputDataError):
        space.decode(np.full(8, 2.0))


def test_pickles_and_hashes():
    space = toy()
    again = pickle.loads(pickle.dumps(space))
    assert again == space and hash(again) == hash(space)
    default = space.default_configuration()
    assert again.encode(default).tolist() == space.encode(default).tolist()


def test_encode_many_and_len():
    space = toy()
    configs = space.sample(0, n=4)
    assert len(space) == 8
    assert space.encode_many(configs).shape == (4, 8)
    assert space.encode_many([]).shape == (0, 8)


def test_default_configuration_is_valid_and_active_only():
    default = toy().default_configuration()
    assert default == {"kernel": "rbf", "C": 1.0, "leaves": 31, "tol": 1e-4}
    toy().validate(default)


# -- neighbours -------------------------------------------------------------------------
def _descendants(space: SearchSpace, name: str) -> set[str]:
    out, frontier = set(), {name}
    while frontier:
        frontier = {c.child for c in space.conditions if c.parent in frontier}
        out |= frontier
    return out


@given(SEEDS)
@settings(max_examples=50)
def test_neighbours_are_valid_and_change_one_hyperparameter(seed):
    space = toy()
    rng = np.random.default_rng(seed)
    config = space.sample(rng)[0]
    neighbours = space.neighbours(config, rng, n_per_numeric=3)
    assert neighbours
    for nb in neighbours:
        space.validate(nb)
        changed = [k for k in set(config) & set(nb) if config[k] != nb[k]]
        assert len(changed) == 1
        assert set(config) ^ set(nb) <= _descendants(space, changed[0])


def test_neighbours_count_and_newly_active_children_take_defaults():
    space = toy()
    config = {"kernel": "rbf", "C": 1.0, "leaves": 31, "tol": 1e-4}
    nbs = space.neighbours(config, 0, n_per_numeric=4)
    assert len(nbs) == 2 + 4 + 4  # other kernels, C, leaves; the constant has none
    assert {"kernel": "poly", "C": 1.0, "degree": 3, "coef0": 0.0, "leaves": 31, "tol": 1e-4} in nbs


# -- ConfigSpace ----------------------------------------------------------------------
def test_configspace_round_trip_preserves_the_space():
    space = toy()
    cs = space.to_configspace()
    assert isinstance(cs, CS.ConfigurationSpace)
    assert cs["C"].log and cs["C"].default_value == 1.0 and cs["leaves"].lower == 3
    back = SearchSpace.from_configspace(cs)
    assert back == space
    assert back.names == space.names
    assert [type(c) for c in back.conditions] == [type(c) for c in space.conditions]


def test_json_round_trip():
    space = toy()
    text = space.to_json()
    assert json.loads(text)["name"] == "toy"
    assert SearchSpace.from_json(text) == space
    with pytest.raises(InputDataError):
        SearchSpace.from_json("{not json")


def test_configspace_samples_validate_in_ours_and_ours_in_configspace():
    space = toy()
    cs = space.to_configspace()
    cs.seed(1)
    for sample in cs.sample_configuration(200):
        space.validate(dict(sample))
        space.encode(dict(sample))
    for config in space.sample(1, n=200):
        CS.Configuration(cs, values=config).check_valid_configuration()


def test_foreign_configspace_without_order_meta():
    cs = CS.ConfigurationSpace(name="foreign")
    a = CS.Categorical("a", ["x", "y"], weights=[0.2, 0.8])
    cs.add([CS.Float("b", (0.0, 1.0)), a, CS.Integer("c", (1, 9))])
    cs.add(CS.EqualsCondition(cs["c"], cs["a"], "x"))
    space = SearchSpace.from_configspace(cs)
    assert space.names == tuple(cs.keys())
    assert space["a"] == Categorical("a", ("x", "y"), default=cs["a"].default_value)  # weights dropped
    assert space.conditions == (EqualsCondition("c", "a", "x"),)


def test_unsupported_configspace_features_are_refused():
    normal = CS.ConfigurationSpace(name="n")
    normal.add(CS.NormalFloatHyperparameter("x", mu=0.0, sigma=1.0, lower=-3.0, upper=3.0))
    forbidden = CS.ConfigurationSpace(name="f")
    forbidden.add(CS.Categorical("a", ["x", "y"]))
    forbidden.add(CS.ForbiddenEqualsClause(forbidden["a"], "y"))
    less = CS.ConfigurationSpace(name="l")
    less.add([CS.Integer("a", (1, 5)), CS.Float("b", (0.0, 1.0))])
    less.add(CS.LessThanCondition(less["b"], less["a"], 3))
    for cs in (normal, forbidden, less):
        with pytest.raises(InputDataError):
            SearchSpace.from_configspace(cs)


@given(SEEDS)
@settings(max_examples=50)
def test_encoded_neighbours_decode_to_the_neighbours_of_the_same_draws(seed):
    """``neighbours_encoded`` and ``neighbours`` draw in the same order from the same
    generator, so the decoded rows are the same configurations (floats up to rounding)."""
    space = toy()
    config = space.sample(np.random.default_rng(seed))[0]
    rows = space.neighbours_encoded(space.encode(config), np.random.default_rng(seed + 1), 3)
    expected = space.neighbours(config, np.random.default_rng(seed + 1), 3)
    assert len(rows) == len(expected)
    for row, nb in zip(rows, expected):
        got = space.decode(row)
        assert list(got) == list(nb)
        assert all(got[k] == pytest.approx(v, rel=1e-12) if isinstance(v, float) else got[k] == v
                   for k, v in nb.items())
        np.testing.assert_allclose(space.encode(got), row, rtol=0, atol=1e-12)
