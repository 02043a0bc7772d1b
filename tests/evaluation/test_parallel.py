"""evaluate_many: the same results with 1 and 2 workers, streamed, failures reported."""

from __future__ import annotations

import dataclasses

import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

from metabo.evaluation.factories import EstimatorFactory
from metabo.evaluation.parallel import EvalTask, TaskResult, evaluate_many, run_task
from metabo.evaluation.preprocessing import PreprocessingSpec
from metabo.evaluation.protocols import KFold

LOGREG = EstimatorFactory(LogisticRegression, PreprocessingSpec(needs_scaling=True))
TREE = EstimatorFactory(DecisionTreeClassifier, PreprocessingSpec(encoding="ordinal"))


def _tasks(mixed):
    tasks = [
        EvalTask("test-mixed", mixed, "logreg", {"C": c}, seed=1, factory=LOGREG) for c in (0.01, 0.1, 1.0)
    ]
    tasks += [
        EvalTask("test-mixed", mixed, "tree", {"max_depth": d}, protocol=KFold(k=3), factory=TREE, time_limit=20.0)
        for d in (2, 4)
    ]
    tasks.append(EvalTask("sklearn-iris", "sklearn:iris", "tree", {"min_samples_leaf": 3}, factory=TREE))
    return tasks


def _key(result: TaskResult):
    t = result.task
    return (t.dataset_id, t.algorithm, tuple(sorted(t.params.items())))


def _values(results):
    return {
        _key(r): [(e.fold, e.status, e.valid, e.test, e.valid_proba.round(12).tolist()) for e in r.evaluations]
        for r in results
    }


@pytest.mark.slow
def test_two_workers_give_the_same_results_as_one(mixed):
    tasks = _tasks(mixed)
    seen = []
    one = list(evaluate_many(tasks, n_jobs=1, progress=seen.append))
    two = list(evaluate_many(iter(tasks), n_jobs=2))  # a generator works too
    assert len(one) == len(two) == len(tasks) and len(seen) == len(tasks)
    assert all(r.ok and all(e.ok for e in r.evaluations) for r in one + two)
    assert _values(one) == _values(two)
    iris = next(r for r in two if r.task.dataset_id == "sklearn-iris")
    assert iris.evaluations[0].valid_proba.shape == (30, 3)


def test_a_task_that_cannot_run_is_reported_not_raised(mixed):
    flagged = dataclasses.replace(mixed, flags={"lost_decimals": ("a",)})
    tasks = [
        EvalTask("bad", flagged, "logreg", {}, factory=LOGREG),
        EvalTask("nope", "sklearn:no_such_dataset", "logreg", {}, factory=LOGREG),
        EvalTask("test-mixed", mixed, "logreg", {"no_such": 1}, factory=LOGREG),
        EvalTask("test-mixed", mixed, "logreg", {}, factory=LOGREG),
    ]
    results = {r.task.dataset_id + str(dict(r.task.params)): r for r in evaluate_many(tasks)}
    assert "DataQualityError" in results["bad{}"].error and not results["bad{}"].evaluations
    assert results["nope{}"].error is not None
    invalid = results["test-mixed{'no_such': 1}"]
    assert invalid.ok and invalid.evaluations[0].status == "crash"
    assert "InvalidConfigurationError" in invalid.evaluations[0].message
    assert results["test-mixed{}"].evaluations[0].ok


def test_run_task_loads_a_dataset_spec_once_per_worker():
    task = EvalTask("sklearn-iris", "sklearn:iris", "tree", {}, factory=TREE, keep_predictions=False)
    first, second = run_task(task), run_task(task)
    assert first.evaluations[0].valid == second.evaluations[0].valid
    assert first.evaluations[0].valid_proba is None


def test_a_backend_without_generators_streams_chunk_by_chunk(mixed):
    """joblib's multiprocessing backend (like Ray's) cannot return a generator: results come
    by chunks of 2 n_jobs tasks, the same as one worker's."""
    tasks = [EvalTask("test-mixed", mixed, "logreg", {"C": c}, seed=1, factory=LOGREG, tag=i)
             for i, c in enumerate((0.01, 0.03, 0.1, 0.3, 1.0))]
    chunked = list(evaluate_many(iter(tasks), n_jobs=2, backend="multiprocessing"))
    assert sorted(r.task.tag for r in chunked) == [0, 1, 2, 3, 4]
    assert _values(chunked) == _values(evaluate_many(tasks, backend="sequential"))
