"""The ensemble benchmark's run: every output of a search is scored as the model it would
deploy (its members refitted on the 80% searched, scored on the 20% test part); the warm
search transfers from a past without the benchmarked task and its copies."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.ensembles import SEARCHES, outputs_of, refitted_test_probas, run_search, table
from metabo.data.loaders import load_dataset
from metabo.ensembles.search import combined_error
from metabo.evaluation.protocols import class_codes
from metabo.space.algorithms import default_cash_space

SPACE = default_cash_space(["gaussian_nb", "lda", "knn", "decision_tree"])


def test_outputs_of_every_search_hold_its_single_best_and_its_guarded_ensemble():
    for search in SEARCHES:
        names = outputs_of(search)
        assert f"{search}-best" in names and f"{search}-guarded" in names and len(set(names)) == len(names)


def test_table_means_seeds_and_never_mixes_protocols():
    def run(task, seed, a, b=None):
        outputs = {"bo-best": {"test_error": 0.9, "refit_test_error": a}}
        outputs["bo-post"] = {"test_error": 0.9} if b is None else {"test_error": 0.9, "refit_test_error": b}
        return {"task": task, "seed": seed, "outputs": outputs}

    runs = [run("t1", 0, 0.2, 0.1), run("t1", 1, 0.4, 0.3), run("t2", 0, 0.5)]  # t2: bo-post of the old protocol
    E, done = table(runs, ["bo-best", "bo-post"], ["t1", "t2"])
    assert done == ["t1"]
    np.testing.assert_allclose(E, [[0.3], [0.2]])
    E, done = table(runs, ["bo-best"], ["t1", "t2"])
    assert done == ["t1", "t2"] and E[0, 1] == 0.5


def test_run_search_scores_the_deployed_model_of_each_output():
    record = run_search("bo", "sklearn:iris", "iris-task", 1, 5, None, {"space": SPACE})
    assert record["cv"] == 5 and set(record["outputs"]) == set(outputs_of("bo"))
    assert record["guard"]["kept"] in ("ensemble", "single")
    for out in record["outputs"].values():
        weights = {int(k): w for k, w in out["members"].items()}
        assert sum(weights.values()) == pytest.approx(1.0)
        assert 0.0 <= out["refit_test_error"] <= 1.0 and 0.0 <= out["valid_error"] <= 1.0
    # the single best, refitted by hand on every non-test row
    (number,) = [int(k) for k in record["outputs"]["bo-best"]["members"]]
    assert record["values"][number] == pytest.approx(min(v for v in record["values"] if np.isfinite(v)))
    assert len(record["algorithms"]) == 5


def test_refitted_probabilities_are_the_configuration_trained_on_the_non_test_rows():
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    data = load_dataset("sklearn:iris")
    test = np.arange(0, 150, 5)
    P = refitted_test_probas(data, {3: ("lda", {"solver": "svd"})}, test, seed=0)[3]
    rows = np.setdiff1d(np.arange(150), test)
    ref = LinearDiscriminantAnalysis().fit(data.X.iloc[rows].to_numpy(), class_codes(data)[rows])
    assert P.shape == (30, 3)
    assert combined_error({3: 1.0}, {3: P}, class_codes(data)[test], combine="average", metric="error_rate",
                          n_classes=3) == pytest.approx(np.mean(ref.predict(data.X.iloc[test].to_numpy())
                                                                 != class_codes(data)[test]))
