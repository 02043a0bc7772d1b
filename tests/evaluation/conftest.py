"""Small datasets for the evaluation tests.

``mixed``: 240 rows, binary target, a numeric column with missing values, a nominal
column with missing values, and a noise column; ``three_class``: 150 rows, 3 balanced
classes plus a class of one row (the singleton stresses stratification and alignment).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from metabo.data.dataset import Dataset


def mixed_dataset(n: int = 240, seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    b = rng.choice(["x", "y", "z"], size=n)
    noise = rng.normal(size=n)
    target = np.where(a + 1.5 * (b == "x") + 0.3 * rng.normal(size=n) > 0.5, "pos", "neg")
    frame = pd.DataFrame({"a": a, "b": b, "noise": noise, "t": target})
    frame.loc[::7, "a"] = np.nan
    frame.loc[3::11, "b"] = None
    return Dataset.from_frame(frame, "t", name="mixed", source="test")


def three_class_dataset(n_per_class: int = 50, seed: int = 1) -> Dataset:
    rng = np.random.default_rng(seed)
    centers = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 3.0]])
    X = np.vstack([c + rng.normal(size=(n_per_class, 2)) for c in centers] + [[[6.0, 6.0]]])
    y = np.repeat(["a", "b", "c"], n_per_class).tolist() + ["lonely"]
    frame = pd.DataFrame({"x1": X[:, 0], "x2": X[:, 1], "y": y})
    return Dataset.from_frame(frame, "y", name="three", source="test")


@pytest.fixture
def mixed() -> Dataset:
    return mixed_dataset()


@pytest.fixture
def three_class() -> Dataset:
    return three_class_dataset()
