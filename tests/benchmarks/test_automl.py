"""The AutoML benchmark's held-out knowledge base, split, resumption keys and summary."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from metabo.benchmarks import automl
from metabo.data.dataset import Dataset
from metabo.kb import KnowledgeBase


def _dataset(name: str, shift: float) -> Dataset:
    frame = pd.DataFrame({"a": np.arange(10.0) + shift, "y": ["p", "q"] * 5})
    return Dataset.from_frame(frame, "y", name=name, source="test")


def test_the_held_out_copy_drops_the_task_and_its_same_content_twins_only(tmp_path):
    src = tmp_path / "kb.duckdb"
    with KnowledgeBase(src) as kb:
        kb.add_algorithms(["knn"])
        a, other = (kb.add_dataset(d) for d in (_dataset("a", 0), _dataset("b", 1)))
        twin = "twin-of-a"  # the same content stored under another id (another source, say)
        kb.connection.execute("INSERT INTO datasets BY NAME SELECT * REPLACE (? AS dataset_id) FROM datasets "
                              "WHERE dataset_id = ?", [twin, a])
        for did in (a, twin, other):
            kb.add_runs([{"dataset_id": did, "algorithm": "knn", "params": {"n_neighbors": 3}, "metric": "error_rate",
                          "value": 0.1, "source": "test", "status": "ok"}])
    assert a != twin
    removed = automl.held_out_kb(src, tmp_path / "copy.duckdb", a)
    assert removed == sorted({a, twin})
    with KnowledgeBase(tmp_path / "copy.duckdb") as kb:
        left = set(kb.query("SELECT dataset_id FROM runs")["dataset_id"])
    with KnowledgeBase(src) as kb:
        assert len(kb.query("SELECT * FROM runs")) == 3  # the source is untouched
    assert left == {other}


def test_the_outer_split_is_stratified_seeded_and_a_partition():
    y = np.array(["a"] * 80 + ["b"] * 20)
    train, test = automl.outer_split(y, 0)
    assert len(test) == 25 and sorted(np.concatenate([train, test]).tolist()) == list(range(100))
    assert (y[test] == "b").sum() == 5
    assert all((p == q).all() for p, q in zip(automl.outer_split(y, 0), (train, test)))


def test_summary_ranks_wins_and_overruns_on_a_known_table(tmp_path):
    rows = []
    errors = {"d1": {"metabo": 0.1, "flaml": 0.2}, "d2": {"metabo": 0.3, "flaml": 0.3}, "d3": {"metabo": 0.2, "flaml": 0.1}}
    for d, by_tool in errors.items():
        for tool, e in by_tool.items():
            rows.append({"dataset": d, "seed": 0, "budget": 30.0, "tool": tool, "test_error": e,
                         "seconds": 40.0 if (tool, d) == ("flaml", "d1") else 30.0, "trials": 5, "first_model": 1.0})
    text = automl.summarize(rows)
    assert "metabo vs flaml: 1 wins, 1 ties, 1 losses" in text
    assert "flaml      test error 0.2000  rank 1.50  overrun>5% 33%" in text
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert ("d1", 0, 30.0, "flaml") in automl.done_keys(path) and len(automl.done_keys(path)) == 6
