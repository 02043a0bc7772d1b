"""``metabo kb portfolio`` and ``metabo kb similar`` on a small --kb file."""

from __future__ import annotations

import json

import numpy as np
import pytest

from metabo.cli.main import main
from metabo.kb import KnowledgeBase
from metabo.kb.canonical import config_id


@pytest.fixture
def kb_path(tmp_path):
    path = str(tmp_path / "transfer.duckdb")
    rng = np.random.default_rng(0)
    values = rng.random((4, 6))
    values[3] = 2 * values[0] + 1  # t3 ranks like t0
    with KnowledgeBase(path) as kb:
        kb.add_algorithms(["knn"])
        for t in range(4):
            kb.register_dataset(name=f"t{t}", source="test")
        kb.add_runs([dict(dataset_id=f"test-t{t}", algorithm="knn", params={"n_neighbors": k + 1},
                          metric="error_rate", value=float(values[t, k]), source="s")
                     for t in range(4) for k in range(6)])
    return path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_portfolio(capsys, kb_path):
    code, out, _ = run(capsys, "kb", "portfolio", "knn", "-k", "2", "--kb", kb_path, "--json")
    rows = json.loads(out)
    assert code == 0 and len(rows) == 2
    assert rows[0]["config_id"] == config_id("knn", rows[0]["params"])
    assert rows[1]["mean_regret"] <= rows[0]["mean_regret"] and rows[1]["n_tasks_covered"] == 4
    code, out, _ = run(capsys, "kb", "portfolio", "knn", "--kb", kb_path, "--metric", "error_rate")
    assert code == 0 and "greedy portfolio of 5 knn configurations" in out


def test_similar_pairs_and_task(capsys, kb_path):
    code, out, _ = run(capsys, "kb", "similar", "knn", "--top", "2", "--kb", kb_path, "--json")
    pairs = json.loads(out)
    assert code == 0 and len(pairs) == 2
    assert (pairs[0]["dataset_a"], pairs[0]["dataset_b"], pairs[0]["tau"]) == ("test-t0", "test-t3", 1.0)
    code, out, _ = run(capsys, "kb", "similar", "knn", "--task", "test-t3", "--kb", kb_path, "--json")
    near = json.loads(out)
    assert code == 0 and near[0]["dataset_id"] == "test-t0" and near[0]["n_shared"] == 6
    assert "test-t3" not in {r["dataset_id"] for r in near}
    code, out, _ = run(capsys, "kb", "similar", "knn", "--task", "test-t3", "--kb", kb_path)
    assert code == 0 and out.startswith("tasks ranking knn configurations most like test-t3")


def test_errors_exit_2(capsys, kb_path):
    code, _, err = run(capsys, "kb", "portfolio", "nope", "--kb", kb_path)
    assert code == 2 and err.startswith("error: unknown algorithm")
    code, _, err = run(capsys, "kb", "similar", "knn", "--task", "missing", "--kb", kb_path)
    assert code == 2 and "unknown dataset" in err
    with pytest.raises(SystemExit) as e:  # refused when parsed
        main(["kb", "portfolio", "knn", "-k", "0", "--kb", kb_path])
    assert e.value.code == 2 and "argument -k: must be an integer of at least 1" in capsys.readouterr().err
