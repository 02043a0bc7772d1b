"""Tensor-OBOE's pipelines as points of the project's pipeline spaces
(metabo.space.algorithms.pipelines, metabo.metadatasets.deeppipe.tensor_oboe_to_project):
every pipeline of the real grid maps, each step option builds and fits, the reducers keep
the share of features they name."""

from __future__ import annotations

import itertools
import json
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from metabo.data.dataset import Dataset
from metabo.evaluation import evaluate
from metabo.evaluation.factories import registry_factory
from metabo.evaluation.protocols import Holdout
from metabo.exceptions import InputDataError
from metabo.metadatasets.deeppipe import enumerate_pipelines, tensor_oboe_to_project
from metabo.space.algorithms import ALGORITHMS, PIPELINES, default_cash_space, get_algorithm, pipeline_cash_space
from metabo.space.algorithms.pipelines import STEP_HYPERPARAMETERS, ShareKBest, SharePCA

GRID = Path(__file__).parents[1] / "fixtures" / "metadatasets" / "tensor_oboe" / "classification.json"


@pytest.fixture(scope="module")
def mapped() -> list[tuple[dict, tuple[str, dict]]]:
    pipes = enumerate_pipelines(json.loads(GRID.read_text()))
    return [(p, tensor_oboe_to_project(p)) for p in pipes]


def mixed(n: int = 150, seed: int = 0) -> Dataset:
    """Three numeric columns (one with missing values, one constant) and a nominal one
    with missing values; a 3-class target that both kinds of column carry."""
    rng = np.random.default_rng(seed)
    a, c = rng.normal(size=n), rng.choice(["x", "y", "z"], size=n)
    score = a + 1.5 * (c == "x") + 0.3 * rng.normal(size=n)
    frame = pd.DataFrame({"a": a, "b": rng.normal(size=n), "flat": 1.0, "c": c,
                          "t": np.digitize(score, np.quantile(score, [1 / 3, 2 / 3])).astype(str)})
    frame.loc[::7, "a"] = np.nan
    frame.loc[3::11, "c"] = None
    return Dataset.from_frame(frame, "t", name="mixed", source="test")


def fits(algorithm: str, params: dict, data: Dataset) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings of sgd on 100 rows
        (ev,) = evaluate(algorithm, params, data, protocol=Holdout(), keep_predictions=False)
    assert ev.status == "ok", (algorithm, params, ev.message)
    return ev.valid["error_rate"]


def test_every_pipeline_of_the_real_grid_is_a_point_of_a_pipeline_space(mapped):
    assert len(mapped) == 23_424
    points = {json.dumps(point, sort_keys=True) for _, point in mapped}
    assert len(points) == 23_424 - 2_048  # Logit's saga and liblinear pipelines are one model
    counts = Counter(a for _, (a, _) in mapped)
    assert set(counts) == set(PIPELINES)
    assert counts["pipeline_knn"] == 16 * 128 and counts["pipeline_gaussian_nb"] == 128
    for _, (algorithm, params) in mapped[::997]:
        assert params == get_algorithm(algorithm).space.normalize(params)


def test_the_mapping_reads_each_step_as_tensor_oboe_named_it(mapped):
    pipe = {"imputer": "SimpleImputer", "imputer:strategy": "most_frequent", "encoder": None,
            "standardizer": "StandardScaler", "dim_reducer": "PCA", "dim_reducer:n_components": "75%",
            "estimator": "KNN", "estimator:n_neighbors": 7, "estimator:p": 1}
    assert tensor_oboe_to_project(pipe) == ("pipeline_knn", {
        "n_neighbors": 7, "weights": "uniform", "p": 1, "imputer": "most_frequent", "encoder": "ordinal",
        "standardizer": "standard", "dim_reducer": "pca_75"})
    reducers = Counter(params["dim_reducer"] for _, (_, params) in mapped)
    assert set(reducers) == set(STEP_HYPERPARAMETERS[-1].choices) and len(set(reducers.values())) == 1
    with pytest.raises(InputDataError, match="not a Tensor-OBOE pipeline"):
        tensor_oboe_to_project({"estimator": "KNN"})
    with pytest.raises(InputDataError):
        tensor_oboe_to_project({**pipe, "estimator": "XGB"})


def test_pipelines_stay_out_of_the_default_space_and_are_known_by_name():
    assert not set(PIPELINES) & set(default_cash_space().algorithms)
    assert set(pipeline_cash_space().algorithms) == set(PIPELINES) and len(PIPELINES) == 12
    assert get_algorithm("pipeline_gradient_boosting") is PIPELINES["pipeline_gradient_boosting"]
    assert all(get_algorithm(a) is ALGORITHMS[a] for a in ALGORITHMS)


def test_the_encoder_step_chooses_the_column_transformers_encoding():
    space = pipeline_cash_space()
    data = mixed()
    widths = {}
    for encoder in ("onehot", "ordinal"):
        params = {**space["pipeline_gaussian_nb"].default_configuration(), "encoder": encoder}
        needs, _ = registry_factory("pipeline_gaussian_nb", params, 0)
        assert needs.encoding == encoder and needs.handles_missing and not needs.needs_scaling
        from metabo.evaluation.preprocessing import make_preprocessor

        widths[encoder] = make_preprocessor(needs, data).fit_transform(data.X).shape[1]
    assert widths == {"ordinal": 4, "onehot": 3 + 4}  # x, y, z and the missing category


def test_every_step_option_builds_and_fits():
    """Each imputer x encoder x standardizer, then each reducer, before one estimator."""
    data = mixed()
    base = pipeline_cash_space()["pipeline_gaussian_nb"].default_configuration()
    imputers, encoders, scalers, reducers = (h.choices for h in STEP_HYPERPARAMETERS)
    for imputer, encoder, scaler in itertools.product(imputers, encoders, scalers):
        fits("pipeline_gaussian_nb", {**base, "imputer": imputer, "encoder": encoder, "standardizer": scaler}, data)
    for reducer in reducers:
        fits("pipeline_gaussian_nb", {**base, "dim_reducer": reducer}, data)


def test_a_sample_of_the_real_grid_fits_with_every_estimator(mapped):
    rng = np.random.default_rng(0)
    data = mixed()
    by_algorithm: dict[str, list[dict]] = {}
    for _, (algorithm, params) in mapped:
        by_algorithm.setdefault(algorithm, []).append(params)
    for algorithm, points in sorted(by_algorithm.items()):
        for i in rng.choice(len(points), size=2, replace=False):
            assert 0.0 <= fits(algorithm, points[int(i)], data) <= 1.0


@pytest.mark.parametrize(("share", "p", "kept"), [(0.25, 8, 2), (0.5, 7, 3), (0.75, 4, 3), (0.25, 3, 1)])
def test_the_reducers_keep_the_share_of_features_they_name(share, p, kept):
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(30, p)), np.arange(30) % 2
    assert SharePCA(share, random_state=0).fit(X).transform(X).shape == (30, kept)
    assert ShareKBest(share).fit(X, y).transform(X).shape == (30, kept)
    assert SharePCA(0.75).fit(X[:2]).transform(X).shape[1] == min(max(1, int(0.75 * p)), 2)  # no more than the rows
