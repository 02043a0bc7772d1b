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


def test_memo_computes_once_and_drops_the_least_recently_used(monkeypatch):
    import numpy as np
    import pandas as pd

    import metabo.data.dataset as dataset_module
    from metabo.data.dataset import Dataset

    ds = Dataset.from_frame(pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "t": ["x", "y", "x", "y"]}), "t", name="m",
                            source="test")
    calls = []

    def make(k, size=8):
        def compute():
            calls.append(k)
            return np.zeros(size // 8)
        return compute

    monkeypatch.setattr(dataset_module, "MEMO_ITEMS", 2)
    monkeypatch.setattr(dataset_module, "MEMO_BYTES", 64)
    ds.memo("a", make("a"))
    ds.memo("b", make("b"))
    ds.memo("a", make("a"))  # kept: not computed again, and now the most recent
    ds.memo("c", make("c"))  # drops b, the least recently used
    ds.memo("a", make("a"))
    ds.memo("b", make("b"))
    assert calls == ["a", "b", "c", "b"]
    ds.memo("big", make("big", size=128))  # larger than the bound alone: returned, not kept
    ds.memo("big", make("big", size=128))
    assert calls[-2:] == ["big", "big"] and list(ds.__dict__["_memo"]) == ["a", "b"]
    ds.memo("d", make("d", size=56))  # a goes (two items at most); b (8 bytes) and d (56) fit in 64
    assert list(ds.__dict__["_memo"]) == ["b", "d"]


def test_wide_table_builds_and_fingerprints_as_column_by_column() -> None:
    """A table wider than the column-by-column path (numeric, nominal, boolean, missing
    cells): from_frame keeps every column's kind and order, and the fingerprint is the
    hash of the frame of canonical strings that pandas computes (what is stored)."""
    import hashlib

    from metabo.data.dataset import _canonical_strings

    rng = np.random.default_rng(3)
    frame = pd.DataFrame(rng.normal(size=(30, 120)), columns=[f"x{i}" for i in range(120)])
    frame.iloc[2, 5] = np.nan
    frame.insert(7, "colour", rng.choice(["red", "blue", None], 30))
    frame.insert(50, "count", rng.integers(0, 4, 30))
    frame["flag"] = rng.integers(0, 2, 30).astype(bool)
    frame["y"] = rng.choice(["a", "b"], 30)
    data = Dataset.from_frame(frame, "y", name="wide", source="file", nominal=["count"])
    assert list(data.X.columns) == [c for c in frame.columns if c != "y"]
    assert isinstance(data.X["colour"].dtype, pd.CategoricalDtype)
    assert isinstance(data.X["count"].dtype, pd.CategoricalDtype)
    assert data.X["x5"].dtype == np.float64 and np.isnan(data.X["x5"].iloc[2])

    table = data.X.copy()
    table.columns = [f"c{i}" for i in range(table.shape[1])]
    table["__y__"] = data.y.to_numpy()
    rows = pd.util.hash_pandas_object(table.apply(_canonical_strings), index=False).to_numpy(np.uint64)
    digest = hashlib.sha256(f"{table.shape[0]}x{table.shape[1]}|".encode() + np.sort(rows).tobytes())
    assert data.fingerprint == digest.hexdigest()


def test_a_large_table_is_fingerprinted_by_its_values_bits_with_the_same_invariances(monkeypatch):
    """Above _TEXT_CELLS cells the fingerprint hashes float64 bits, block by block: still
    invariant to row order and column names, 1 and 1.0 agree, -0.0 is 0.0, one NaN; a
    changed cell, a swapped pair of cells or a changed label changes it; the block size
    does not matter; and it is not the text fingerprint of the same content."""
    import metabo.data.dataset as module

    rng = np.random.default_rng(3)
    n = 50
    frame = pd.DataFrame({"a": rng.normal(size=n), "b": rng.integers(0, 5, n), "c": rng.choice(["x", "y", None], n),
                          "t": rng.choice(["p", "q"], n)})
    frame.loc[3, "a"] = np.nan
    frame.loc[4, "a"] = 0.0
    text = Dataset.from_frame(frame, "t", name="x", source="s").fingerprint
    monkeypatch.setattr(module, "_TEXT_CELLS", 10)
    monkeypatch.setattr(module, "_BIT_BLOCK_ROWS", 7)

    def fp(f):
        return Dataset.from_frame(f, "t", name="x", source="s").fingerprint

    base = fp(frame)
    assert base != text
    shuffled = frame.sample(frac=1.0, random_state=1).rename(columns={"a": "z"}).reset_index(drop=True)
    assert fp(shuffled) == base
    as_float = frame.assign(b=frame["b"].astype(float))
    negative_zero = frame.copy()
    negative_zero.loc[4, "a"] = -0.0
    assert fp(as_float) == fp(negative_zero) == base
    monkeypatch.setattr(module, "_BIT_BLOCK_ROWS", 1000)
    assert fp(frame) == base
    changed = frame.copy()
    changed.loc[0, "a"] += 1e-9
    swapped = frame.copy()
    swapped.loc[0, "a"], swapped.loc[1, "a"] = frame.loc[1, "a"], frame.loc[0, "a"]
    relabelled = frame.copy()
    relabelled.loc[0, "t"] = "q" if frame.loc[0, "t"] == "p" else "p"
    other_category = frame.copy()
    other_category.loc[0, "c"] = "w"
    assert len({base, fp(changed), fp(swapped), fp(relabelled), fp(other_category)}) == 5


def test_feature_frame_passes_a_feature_frame_through_and_converts_anything_else():
    import numpy as np
    import pandas as pd

    from metabo.data.dataset import feature_frame

    ready = pd.DataFrame({"a": [1.0, 2.0], "b": pd.Categorical(["x", "y"])}, index=[7, 9])
    out = feature_frame(ready)
    assert out is not ready and out.equals(ready) and list(out.index) == [7, 9]
    out["a"] = 0.0  # a new frame: the caller's is left alone
    assert ready["a"].tolist() == [1.0, 2.0]
    # integer columns, non-string names and an array are converted as Dataset.from_frame does
    mixed = feature_frame(pd.DataFrame({0: [1, 2], "b": [0.5, 1.5]}))
    assert mixed.columns.tolist() == ["0", "b"] and mixed.dtypes.tolist() == [np.float64, np.float64]
    assert feature_frame(np.eye(2)).columns.tolist() == ["0", "1"]

