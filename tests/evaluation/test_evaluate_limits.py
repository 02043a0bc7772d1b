"""A protocol's total time limit counts the preprocessing of each split, which runs in the
calling process, not only the fit in the worker."""

from __future__ import annotations

import sys
import time

from metabo.data.loaders import load_dataset
from metabo.evaluation.evaluate import evaluate
from metabo.evaluation.protocols import KFold
from metabo.space.algorithms import get_algorithm

evaluate_module = sys.modules["metabo.evaluation.evaluate"]  # the package exports the function by that name


def test_a_split_whose_preprocessing_spent_the_total_is_a_timeout(monkeypatch):
    real = evaluate_module.prepared_split

    def slow(spec, dataset, split):  # preprocessing that takes longer than the whole limit
        time.sleep(0.5)
        return real(spec, dataset, split)

    monkeypatch.setattr(evaluate_module, "prepared_split", slow)
    params = get_algorithm("knn").space.default_configuration()
    out = evaluate("knn", params, load_dataset("sklearn:iris"), protocol=KFold(k=3),
                   total_time_limit=0.3, metrics=("error_rate",))
    assert [ev.status for ev in out] == ["timeout"] * 3
    assert "after its preprocessing" in out[0].message  # the first split was prepared, then had nothing left
    assert "no time left for fold 1" in out[1].message  # the next ones are not even prepared
