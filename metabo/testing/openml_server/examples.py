"""Ready-made content for the fake server: two small tables and a filled server."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from metabo.testing.openml_server.dataset import FakeDataset
from metabo.testing.openml_server.model import (
    FakeRun,
    FakeSetup,
    FakeTask,
    pipeline_flow,
    sklearn_flow,
    weka_flow,
)

if TYPE_CHECKING:
    from metabo.testing.openml_server.server import FakeOpenMLServer

RF_CLASS = "sklearn.ensemble._forest.RandomForestClassifier"
SVC_CLASS = "sklearn.svm._classes.SVC"


def example_frames(seed: int = 0) -> dict[str, pd.DataFrame]:
    """Two small tables: ``toy`` (numeric + nominal, some missing) and ``blobs`` (numeric)."""
    rng = np.random.default_rng(seed)
    n = 40
    toy = pd.DataFrame({
        "width": rng.normal(size=n).round(3),
        "colour": pd.Categorical(rng.choice(["red", "green"], n), categories=["red", "green", "blue"]),
        "count": rng.integers(0, 9, n),
        "shape": pd.Categorical(rng.choice(["round", "square", "flat"], n)),
        "class": pd.Categorical(rng.choice(["yes", "no"], n), categories=["no", "yes"]),
    })
    toy.loc[[2, 5], "width"] = np.nan
    toy.loc[7, "colour"] = np.nan
    blobs = pd.DataFrame(rng.normal(size=(30, 3)).round(3), columns=["x1", "x2", "x3"])
    blobs["target"] = pd.Categorical(rng.choice(["a", "b", "c"], 30))
    return {"toy": toy, "blobs": blobs}


def add_example_content(server: FakeOpenMLServer, *, runs_per_setup: int = 1) -> dict[str, Any]:
    """Fill ``server`` with two datasets, two tasks, five flows, five setups and runs.

    Datasets 61 (``toy``) and 62 (``blobs``); tasks 1 and 2 on them; flows: 10 random
    forest, 20 ``weka.J48``, 30 Pipeline(imputer, SVC), 40 Pipeline(imputer, an unknown
    estimator), 50 SVC; setups 100 (RF n_estimators=500, max_features="sqrt"), 101 (J48
    C=0.1), 102 (pipeline SVC C=10 poly), 103 (unknown final step), 104 (SVC C=2 rbf).
    Each setup runs ``runs_per_setup`` times on each task, run ids from 1000 up, with
    ``predictive_accuracy`` and ``area_under_roc_curve``. Returns the ids used.
    """
    frames = example_frames()
    server.add_dataset(FakeDataset.from_frame(61, "toy", frames["toy"], target="class",
                                              qualities={"ClassEntropy": 0.99, "Dimensionality": 0.1}))
    server.add_dataset(FakeDataset.from_frame(62, "blobs", frames["blobs"], target="target"))
    server.add_task(FakeTask(1, 61))
    server.add_task(FakeTask(2, 62))
    imputer = "sklearn.impute._base.SimpleImputer"
    server.add_flow(sklearn_flow(10, RF_CLASS, {
        "n_estimators": 100, "max_features": "sqrt", "min_samples_leaf": 1, "max_depth": None,
        "n_jobs": None,
    }))
    server.add_flow(weka_flow(20, "weka.J48", {"C": "0.25", "M": "2"}))
    server.add_flow(pipeline_flow(30, {
        "imputer": sklearn_flow(31, imputer, {"strategy": "mean"}),
        "svc": sklearn_flow(32, SVC_CLASS, {"C": 1.0, "gamma": "scale", "kernel": "rbf"}),
    }))
    server.add_flow(pipeline_flow(40, {
        "imputer": sklearn_flow(41, imputer, {"strategy": "median"}),
        "model": sklearn_flow(42, "mylib.models.FancyClassifier", {"alpha": 0.5}),
    }))
    server.add_flow(sklearn_flow(50, SVC_CLASS, {"C": 1.0, "gamma": "scale", "kernel": "rbf"}))
    server.add_setup(FakeSetup(100, 10, {"n_estimators": 500}))
    server.add_setup(FakeSetup(101, 20, {"C": "0.1"}))
    server.add_setup(FakeSetup(102, 30, {"svc__C": 10.0, "svc__kernel": "poly"}))
    server.add_setup(FakeSetup(103, 40, {"model__alpha": 0.25}))
    server.add_setup(FakeSetup(104, 50, {"C": 2.0}))
    rid = 1000
    for _ in range(runs_per_setup):
        for tid in (1, 2):
            for sid in (100, 101, 102, 103, 104):
                acc = round(0.5 + ((rid * 37) % 47) / 100, 4)
                server.add_run(FakeRun(rid, tid, sid, {"predictive_accuracy": acc,
                                                       "area_under_roc_curve": min(acc + 0.05, 1.0)}))
                rid += 1
    return {"datasets": [61, 62], "tasks": [1, 2], "flows": [10, 20, 30, 40, 50],
            "setups": [100, 101, 102, 103, 104], "runs": list(range(1000, rid))}
