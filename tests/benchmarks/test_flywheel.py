"""The flywheel benchmark's bookkeeping: families, the task order, regret and the summary."""

from __future__ import annotations

import math

import pytest

from benchmarks.flywheel import (
    add_regret,
    choose_tasks,
    family,
    predecessor_incumbents,
    similar_before,
    summarize,
)
from metabo.exceptions import InputDataError


@pytest.mark.parametrize("name, fam", [
    ("ecoli-0-1_vs_5", "ecoli"), ("ecoli3", "ecoli"), ("keel:imbalanced/yeast-2_vs_4", "yeast"),
    ("new-thyroid1", "new-thyroid"), ("kr-vs-k-zero_vs_eight", "kr-vs-k"), ("glass-0-1-6_vs_2", "glass"),
    ("winequality-red-4", "winequality-red"), ("abalone19", "abalone"), ("page-blocks0", "page-blocks"),
    ("car-vgood", "car"), ("shuttle-c0-vs-c4", "shuttle"), ("kddcup-land_vs_satan", "kddcup"),
])
def test_family_is_the_name_before_the_variant(name, fam):
    assert family(name) == fam


def test_task_order_is_seeded_with_whole_families():
    names = [f"ecoli{i}" for i in range(4)] + [f"yeast{i}" for i in range(3)] + ["zoo-3", "glass0", "glass1"]
    a = choose_tasks(names, n=4, per_family=2, seed=3)
    assert a == choose_tasks(names, n=4, per_family=2, seed=3) and len(set(a)) == 4
    fams = [family(x) for x in a]
    assert all(fams.count(f) == 2 for f in fams) and "zoo" not in fams
    assert sum(similar_before(a)) == 2  # the second of each family
    with pytest.raises(InputDataError, match="families"):
        choose_tasks(names, n=8, per_family=2, seed=0)


def _record(arm, spec, values, *, seed=0, similar=False, test=0.1):
    return {"arm": arm, "spec": spec, "seed": seed, "values": values, "similar_before": similar, "test_error": test}


def test_regret_is_normalized_by_both_arms_range_and_failures_count_as_the_worst():
    records = [_record("shipped", "a", [0.4, 0.2, 0.3]), _record("flywheel", "a", [0.1, math.nan, 0.5])]
    add_regret(records)
    assert records[0]["regret"] == pytest.approx([0.75, 0.25, 0.25])  # (b - 0.1) / (0.5 - 0.1)
    assert records[1]["regret"] == pytest.approx([0.0, 0.0, 0.0])


def test_summary_splits_tasks_by_a_similar_predecessor_and_counts_wins():
    records = [
        _record("shipped", "a", [0.5, 0.1]), _record("flywheel", "a", [0.5, 0.1]),
        _record("shipped", "b", [0.5, 0.1], similar=True), _record("flywheel", "b", [0.1, 0.1], similar=True),
        _record("shipped", "c", [0.5, 0.2]),  # one arm only: left out
    ]
    summary, text = summarize(records, budget=3)
    assert summary["tasks"] == ["a", "b"]
    sim = summary["groups"]["preceded by a similar task"]["at"][1]
    assert sim["shipped"] == pytest.approx(1.0) and sim["flywheel"] == pytest.approx(0.0)
    assert summary["groups"]["all tasks"]["at"][1]["flywheel_better"] == 1
    assert summary["groups"]["all tasks"]["at"][1]["flywheel_worse"] == 0
    assert "preceded by a similar task (1 tasks)" in text


def test_the_incumbent_carried_over_is_the_latest_family_members_best_of_the_same_seed():
    def fly(spec, position, values, configs, *, seed=0, similar=False):
        return {**_record("flywheel", spec, values, seed=seed, similar=similar), "position": position,
                "family": family(spec), "configs": configs}

    a, b, c = ["knn", {"k": 1}], ["knn", {"k": 2}], ["svm", {"C": 1.0}]
    records = [
        fly("ecoli1", 0, [0.3, 0.1], [a, b]),
        fly("yeast1", 1, [0.2, math.nan], [c, a]),
        fly("ecoli2", 2, [0.05, 0.2], [c, a], similar=True),
        fly("ecoli3", 3, [0.4], [a], similar=True),
        fly("ecoli4", 0, [0.4], [a], seed=1, similar=True),  # another seed's sequence: nothing before it
        _record("shipped", "ecoli2", [0.1]),
    ]
    got = predecessor_incumbents(records)
    assert [(g["spec"], g["from"], g["config"]) for g in got] == [("ecoli2", "ecoli1", b), ("ecoli3", "ecoli2", c)]


def test_measured_option_names_the_protocols_of_the_old_and_the_new_knowledge():
    from benchmarks.warm_bench import measured_of, measured_protocols

    assert measured_of("warm@measured=kb@beta=2") == ("warm@beta=2", "kb")
    assert measured_of("gp") == ("gp", None)
    assert measured_protocols("kb") == ["Holdout(train=0.6, valid=0.2, test=0.2, stratified=True, max_train=2000)"]
    assert sorted(measured_protocols("tune")) == [
        "Holdout(train=0.6, valid=0.2, test=0.2, stratified=True, max_train=None)",
        "KFold(k=5, stratified=True, test=0.2, max_train=None)"]
    with pytest.raises(InputDataError, match="measured"):
        measured_protocols("other")
