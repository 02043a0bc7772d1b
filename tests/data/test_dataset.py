"""The Dataset type: conversions, fingerprint invariances, flags, dropped target rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metabo.data.dataset import Dataset
from metabo.exceptions import DataQualityError, InputDataError


def _frame(n: int = 20, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "num": rng.normal(size=n), "cat": rng.choice(["a", "b", "?"], size=n),
        "flag": rng.random(n) < 0.5, "t": rng.choice(["p", "q"], size=n),
    })


def test_kinds_and_conversions():
    ds = Dataset.from_frame(_frame(), "t", name="x", source="test")
    assert ds.feature_kinds == ("numeric", "nominal", "nominal")
    assert ds.X["num"].dtype == np.float64
    assert ds.X["cat"].isna().sum() == (_frame()["cat"] == "?").sum()  # '?' is missing, not a category
    assert "?" not in ds.X["cat"].cat.categories
    assert ds.n_classes == 2 and ds.task == "classification"


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), perm_seed=st.integers(0, 10_000))
def test_fingerprint_ignores_row_order_and_column_names(seed, perm_seed):
    frame = _frame(seed=seed)
    a = Dataset.from_frame(frame, "t", name="x", source="one")
    shuffled = frame.sample(frac=1.0, random_state=perm_seed).rename(columns={"num": "A1", "cat": "A2"})
    b = Dataset.from_frame(shuffled, "t", name="y", source="two")
    assert a.fingerprint == b.fingerprint


def test_fingerprint_sees_content_changes():
    frame = _frame()
    a = Dataset.from_frame(frame, "t", name="x", source="s")
    changed = frame.copy()
    changed.loc[3, "num"] += 1e-9
    assert Dataset.from_frame(changed, "t", name="x", source="s").fingerprint != a.fingerprint
    swapped = frame[["cat", "num", "flag", "t"]]
    assert Dataset.from_frame(swapped, "t", name="x", source="s").fingerprint != a.fingerprint


def test_rows_without_target_are_dropped_and_noted(caplog):
    frame = _frame()
    frame.loc[[2, 5], "t"] = None
    ds = Dataset.from_frame(frame, "t", name="x", source="s", description="origin")
    assert ds.n_instances == 18
    assert "2 row(s) without a target value dropped" in ds.description
    assert ds.description.startswith("origin")
    assert "without a target" in caplog.text


def test_flags_refuse_training_until_dropped():
    ds = Dataset.from_frame(_frame(), "t", name="x", source="s", flags={"lost_decimals": ("num",)})
    with pytest.raises(DataQualityError, match="lost_decimals: num"):
        ds.require_clean()
    Dataset.from_frame(_frame(), "t", name="x", source="s").require_clean()


def test_bad_frames_are_refused():
    with pytest.raises(InputDataError, match="no target column"):
        Dataset.from_frame(_frame(), "nope", name="x", source="s")
    with pytest.raises(InputDataError, match="nominal columns"):
        Dataset.from_frame(_frame(), "t", name="x", source="s", nominal=["zzz"])
    with pytest.raises(InputDataError, match="dtype"):
        Dataset(name="x", X=pd.DataFrame({"a": [1, 2]}), y=pd.Series(["p", "q"]), source="s")
    with pytest.raises(InputDataError, match="rows"):
        Dataset(name="x", X=pd.DataFrame({"a": [1.0]}), y=pd.Series(["p", "q"]), source="s")


def test_string_columns_must_be_nominal_columns_of_x():
    X = pd.DataFrame({"name": pd.Categorical(["a b", "c d"]), "x": [1.0, 2.0]})
    y = pd.Series(pd.Categorical(["p", "q"]))
    assert Dataset(name="x", X=X, y=y, source="s", string_columns=("name",)).string_columns == ("name",)
    for bad in (("x",), ("absent",)):
        with pytest.raises(InputDataError, match="string_columns"):
            Dataset(name="x", X=X, y=y, source="s", string_columns=bad)
