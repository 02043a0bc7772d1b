"""Hyperparameter types: closed-form encodings, round trips, validation, neighbours."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metabo.exceptions import InputDataError, InvalidConfigurationError
from metabo.space import Categorical, Constant, Float, Integer


# -- closed cases ---------------------------------------------------------------------
def test_log_float_encoding_closed_form():
    hp = Float("C", 1e-5, 1e5, log=True)
    assert hp.to_unit(1e-5) == 0.0
    assert hp.to_unit(1e5) == 1.0
    assert hp.to_unit(1.0) == pytest.approx(0.5, abs=1e-12)  # geometric midpoint
    assert hp.to_unit(1e-3) == pytest.approx(0.2)
    assert hp.from_unit(0.5) == pytest.approx(1.0)
    assert hp.default == pytest.approx(1.0)  # default: geometric midpoint


def test_linear_float_encoding_closed_form():
    hp = Float("x", -1, 3)
    assert (hp.to_unit(-1), hp.to_unit(1), hp.to_unit(3)) == (0.0, 0.5, 1.0)
    assert hp.from_unit(0.25) == 0.0
    assert hp.default == 1.0
    assert isinstance(hp.low, float) and isinstance(hp.high, float)


def test_integer_bins_closed_form():
    hp = Integer("k", 1, 10)  # ten equal bins of width 0.1, values at their centres
    assert [hp.to_unit(v) for v in (1, 2, 10)] == pytest.approx([0.05, 0.15, 0.95])
    assert hp.from_unit(0.0) == 1 and hp.from_unit(0.0999) == 1
    assert hp.from_unit(0.1001) == 2 and hp.from_unit(1.0) == 10
    assert [hp.from_unit(hp.to_unit(v)) for v in range(1, 11)] == list(range(1, 11))
    assert hp.default == 6  # from_unit(0.5): the upper of the two middle values


def test_log_integer_bins():
    hp = Integer("n", 1, 100, log=True)
    units = [hp.to_unit(v) for v in range(1, 101)]
    assert all(0 < u < 1 for u in units) and units == sorted(units)
    assert [hp.from_unit(u) for u in units] == list(range(1, 101))
    assert hp.from_unit(0.0) == 1 and hp.from_unit(1.0) == 100
    # bins are [v - 1/2, v + 1/2) through the log: value 1 owns log(3)/log(201) of [0, 1]
    assert hp.from_unit(math.log(3) / math.log(201) - 1e-9) == 1
    assert hp.from_unit(math.log(3) / math.log(201) + 1e-9) == 2


def test_categorical_bin_centres():
    hp = Categorical("c", ("a", "b", "c"))
    assert [hp.to_unit(c) for c in "abc"] == pytest.approx([1 / 6, 1 / 2, 5 / 6])
    assert [hp.from_unit(u) for u in (0.0, 0.34, 0.67, 1.0)] == ["a", "b", "c", "c"]
    assert hp.default == "a"
    assert Categorical("p", (1, 2), default=2).to_unit(2) == 0.75


def test_constant():
    hp = Constant("v", 1e-9)
    assert hp.to_unit(1e-9) == 0.5 and hp.from_unit(0.1) == 1e-9 and hp.default == 1e-9
    assert hp.neighbours(1e-9, 0) == []


# -- round trips ----------------------------------------------------------------------
@st.composite
def floats_in_space(draw):
    log = draw(st.booleans())
    low = draw(st.floats(1e-6, 1e3)) if log else draw(st.floats(-1e3, 1e3))
    width = draw(st.floats(1e-3, 1e4))
    hp = Float("x", low, low + width, log=log)
    return hp, draw(st.floats(hp.low, hp.high))


@given(floats_in_space())
def test_float_round_trip(case):
    hp, v = case
    u = hp.to_unit(v)
    assert 0.0 <= u <= 1.0
    assert hp.from_unit(u) == pytest.approx(v, rel=1e-9, abs=1e-9)


@given(st.integers(1, 1000), st.integers(1, 1000), st.booleans(), st.data())
def test_integer_round_trip(low, span, log, data):
    hp = Integer("k", low, low + span, log=log)
    v = data.draw(st.integers(hp.low, hp.high))
    assert hp.from_unit(hp.to_unit(v)) == v
    assert type(hp.from_unit(data.draw(st.floats(0, 1)))) is int


@given(st.floats(0, 1))
def test_unit_round_trip_of_samples_is_stable(u):
    for hp in (Float("a", 1e-5, 1e5, log=True), Integer("b", 3, 64, log=True), Categorical("c", ("x", "y"))):
        v = hp.from_unit(u)
        again = hp.from_unit(hp.to_unit(v))
        assert type(again) is type(v)
        assert again == (pytest.approx(v, rel=1e-12) if isinstance(v, float) else v)


def test_samples_are_plain_and_reproducible():
    hps = (Float("a", 0, 1), Integer("b", 1, 9), Categorical("c", (1, 2)), Constant("d", "s"))
    for hp in hps:
        a = [hp.sample(np.random.default_rng(3)) for _ in range(3)]
        b = [hp.sample(np.random.default_rng(3)) for _ in range(3)]
        assert a == b
        assert all(type(v) in (float, int, str) for v in a)
    rng = np.random.default_rng(0)
    assert len({Float("a", 0, 1).sample(rng) for _ in range(10)}) == 10


# -- validation -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("hp", "value"),
    [
        (Float("gamma", 1e-5, 1e5, log=True), 1e6),
        (Float("gamma", 1e-5, 1e5, log=True), float("nan")),
        (Float("gamma", 1e-5, 1e5, log=True), True),
        (Float("gamma", 1e-5, 1e5, log=True), "1.0"),
        (Integer("depth", 1, 10), 0),
        (Integer("depth", 1, 10), 3.0),
        (Integer("depth", 1, 10), True),
        (Categorical("weights", ("uniform", "distance")), "other"),
        (Categorical("p", (1, 2)), 1.0),
        (Categorical("p", (1, 2)), True),
        (Constant("solver", "svd"), "lsqr"),
    ],
)
def test_validation_names_the_hyperparameter(hp, value):
    with pytest.raises(InvalidConfigurationError, match=repr(hp.name)):
        hp.validate(value)


def test_validation_message_gives_the_range():
    with pytest.raises(InvalidConfigurationError, match=r"\[1e-05, 100000.0\] \(log scale\)"):
        Float("C", 1e-5, 1e5, log=True).validate(0.0)


def test_numpy_scalars_are_accepted_and_normalized():
    assert type(Integer("k", 1, 5).normalize(np.int64(3))) is int
    assert type(Float("x", 0, 1).normalize(np.float32(0.5))) is float
    assert Float("x", 0, 2).normalize(1) == 1.0 and type(Float("x", 0, 2).normalize(1)) is float
    assert type(Categorical("c", ("a", "b")).normalize(np.str_("a"))) is str


@pytest.mark.parametrize(
    "make",
    [
        lambda: Float("x", 1, 1),
        lambda: Float("x", 0, 1, log=True),
        lambda: Float("x", 0, 1, default=2),
        lambda: Float("x", 0, float("inf")),
        lambda: Integer("k", 0, 5, log=True),
        lambda: Integer("k", 1.5, 5),
        lambda: Categorical("c", ()),
        lambda: Categorical("c", ("a", "a")),
        lambda: Categorical("c", ("a", "b"), default="z"),
        lambda: Categorical("c", "ab"),
        lambda: Constant("c", None),
        lambda: Float("", 0, 1),
    ],
)
def test_bad_definitions_raise_input_data_error(make):
    with pytest.raises(InputDataError):
        make()


def test_unit_coordinates_are_checked():
    hp = Float("x", 0, 1)
    assert hp.from_unit(1.0 + 1e-12) == 1.0
    with pytest.raises(InputDataError):
        hp.from_unit(1.5)
    with pytest.raises(InputDataError):
        hp.from_unit(float("nan"))


# -- neighbours -------------------------------------------------------------------------
@given(st.integers(0, 2**32 - 1), st.floats(0, 1))
@settings(max_examples=50)
def test_numeric_neighbours_are_valid_distinct_and_different(seed, u):
    for hp in (Float("C", 1e-5, 1e5, log=True), Integer("k", 1, 30), Integer("n", 3, 64, log=True), Integer("b", 0, 2)):
        value = hp.from_unit(u)
        nbs = hp.neighbours(value, np.random.default_rng(seed), n=4)
        expected = 4 if isinstance(hp, Float) else min(4, hp.high - hp.low)
        assert len(nbs) == expected
        assert len(set(nbs)) == len(nbs) and value not in nbs
        for nb in nbs:
            hp.validate(nb)


def test_float_neighbours_spread_like_sd_02():
    hp = Float("x", 0, 1)
    rng = np.random.default_rng(0)
    steps = np.array([nb - 0.5 for _ in range(500) for nb in hp.neighbours(0.5, rng, n=4)])
    assert steps.std() == pytest.approx(0.2, rel=0.1)


def test_categorical_neighbours_are_every_other_choice():
    hp = Categorical("c", ("a", "b", "c", "d"))
    assert hp.neighbours("b", 0) == ["a", "c", "d"]


@given(st.lists(st.floats(0, 1), min_size=1, max_size=20))
def test_snap_unit_is_the_vectorized_code_of_the_decoded_value(us):
    u = np.array(us)
    for hp in (Float("a", 1e-5, 1e5, log=True), Float("f", -3.0, 7.0), Integer("b", 3, 64, log=True),
               Integer("i", -4, 9), Categorical("c", ("x", "y", 3)), Constant("k", "z")):
        expected = np.array([hp.to_unit(hp.from_unit(x)) for x in us])
        np.testing.assert_allclose(hp.snap_unit(u), expected, rtol=1e-12, atol=1e-15)
