"""``metabo tune`` on a CSV file: prints the selection and its errors, stores the runs."""

from __future__ import annotations

from sklearn.datasets import load_iris

from metabo.cli.main import main
from metabo.kb import KnowledgeBase


def test_tune_csv_random_search(tmp_path, capsys):
    csv = tmp_path / "iris.csv"
    load_iris(as_frame=True).frame.to_csv(csv, index=False)
    kb_path = str(tmp_path / "kb.duckdb")
    code = main(["tune", str(csv), "--target", "target", "--budget", "4", "--strategy", "random",
                 "--algorithms", "knn", "decision_tree", "--seed", "1", "--session", "cli", "--kb", kb_path,
                 "--refit"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "session cli: 4 trials" in out
    assert "validation error_rate: 0." in out and "test error_rate: 0." in out
    assert "model (refitted on training + validation rows) test error_rate: 0." in out
    with KnowledgeBase(kb_path) as kb:
        runs = kb.query("SELECT algorithm, metric, source FROM runs WHERE metric = 'error_rate'")
        n_meta = kb.stats()["meta_features"]
    assert len(runs) == 4 and set(runs["source"]) == {"session:cli"}
    assert set(runs["algorithm"]) <= {"knn", "decision_tree"} and n_meta > 0

    code = main(["tune", str(csv), "--target", "target", "--budget", "2", "--strategy", "random",
                 "--algorithms", "knn", "--session", "cli", "--kb", kb_path])
    _, err = capsys.readouterr()
    assert code == 2 and "another search space" in err
