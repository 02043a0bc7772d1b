"""The command line: every command on a --kb file, JSON stats, errors as exit code 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from metabo.cli.main import main
from metabo.kb import KnowledgeBase


@pytest.fixture
def kb_path(tmp_path):
    return str(tmp_path / "cli.duckdb")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_stats_json_on_empty_store(capsys, kb_path):
    code, out, err = run(capsys, "kb", "stats", "--kb", kb_path, "--json")  # a mistyped --kb: no new empty store
    assert code == 2 and err.strip() == f"error: no knowledge base at {kb_path} (check the path; metabo kb init " \
                                         f"{kb_path} creates one)"
    assert not os.path.exists(kb_path)
    assert run(capsys, "kb", "init", "--kb", kb_path)[0] == 0
    code, out, _ = run(capsys, "kb", "stats", "--kb", kb_path, "--json")
    assert code == 0
    stats = json.loads(out)
    assert stats["datasets"] == stats["runs"] == 0
    assert stats["runs_by_status"] == {"ok": 0, "crash": 0, "timeout": 0, "memout": 0}


def test_query_commands_open_the_store_read_only_and_a_missing_folder_is_not_made(capsys, kb_path, tmp_path):
    assert run(capsys, "kb", "init", kb_path)[0] == 0  # --kb names an existing store
    assert run(capsys, "data", "add", "sklearn:iris", "--kb", kb_path, "--no-landmarkers")[0] == 0
    # another process reads the store: DuckDB lets other readers in, never a writer, so the
    # query commands get through only because they open it read-only
    script = f"from metabo.kb import KnowledgeBase; kb = KnowledgeBase({kb_path!r}, read_only=True); " \
             "print('open', flush=True); input()"
    reader = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout.readline().strip() == "open"
        code, out, _ = run(capsys, "kb", "stats", "--kb", kb_path, "--json")
        assert code == 0 and json.loads(out)["datasets"] == 1
        assert run(capsys, "kb", "datasets", "--kb", kb_path)[0] == 0
        code, _, err = run(capsys, "data", "add", "sklearn:wine", "--kb", kb_path, "--no-landmarkers")
        assert code == 2 and f"is in use by process {reader.pid}" in err and len(err.strip().splitlines()) == 1
    finally:
        reader.communicate("\n", timeout=60)
    typo = tmp_path / "no-such-folder" / "kb.duckdb"
    code, _, err = run(capsys, "data", "add", "sklearn:iris", "--kb", str(typo), "--no-landmarkers")
    assert code == 2 and "no folder" in err and len(err.strip().splitlines()) == 1
    assert not typo.parent.exists()
    code, _, err = run(capsys, "kb", "stats", "--kb", str(tmp_path))
    assert code == 2 and "is a folder, not a knowledge base file" in err


def test_add_datasets_query_export_import(capsys, kb_path, tmp_path):
    assert run(capsys, "kb", "init", kb_path)[0] == 0
    code, out, _ = run(capsys, "data", "add", "sklearn:iris", "sklearn:wine", "sklearn:breast_cancer",
                       "--kb", kb_path, "--no-landmarkers")
    assert code == 0 and "stored 3" in out
    code, out, _ = run(capsys, "data", "add", "sklearn:iris", "--kb", kb_path, "--no-landmarkers")
    assert "already there 1" in out
    with KnowledgeBase(kb_path) as kb:
        kb.add_algorithms(["knn"])
        kb.add_runs([{"dataset_id": d, "algorithm": "knn", "params": {"n_neighbors": k}, "metric": "error_rate",
                      "value": v, "source": "test"}
                     for d in kb.dataset_ids() for k, v in ((1, 0.2), (5, 0.1))])
    code, out, _ = run(capsys, "kb", "stats", "--kb", kb_path, "--json")
    stats = json.loads(out)
    assert (stats["datasets"], stats["runs"], stats["configurations"]) == (3, 6, 2)
    code, out, _ = run(capsys, "kb", "ranks", "knn", "--kb", kb_path, "--format", "json")
    ranks = json.loads(out)
    assert ranks[0]["mean_rank"] == 1.0 and ranks[0]["params"] == {"n_neighbors": 5}
    code, out, _ = run(capsys, "kb", "ranks", "knn", "--near", "openml-61", "-k", "1", "--kb", kb_path)
    assert code == 0 and "ranking on the 1 tasks nearest openml-61" in out
    code, out, _ = run(capsys, "kb", "nearest", "--dataset", "openml-61", "-k", "2", "--kb", kb_path)
    assert code == 0 and "openml-61" not in out.split("\n", 1)[1]
    code, out, _ = run(capsys, "kb", "matrix", "knn", "--kb", kb_path)
    assert "3 tasks x 2 configurations" in out
    code, out, _ = run(capsys, "kb", "runs", "--dataset", "openml-187", "--kb", kb_path, "--format", "csv")
    assert out.count("\n") == 3  # header + 2 runs
    export = tmp_path / "export"
    assert run(capsys, "kb", "export", str(export), "--kb", kb_path)[0] == 0
    other = str(tmp_path / "other.duckdb")
    code, _, err = run(capsys, "kb", "import", str(export), "--kb", other)  # a mistyped store is not made
    assert code == 2 and "metabo kb init" in err and not os.path.exists(other)
    assert run(capsys, "kb", "init", other)[0] == 0
    assert run(capsys, "kb", "import", str(export), "--kb", other)[0] == 0
    code, out, _ = run(capsys, "kb", "stats", "--kb", other, "--json")
    assert json.loads(out)["runs"] == 6


def test_errors_are_one_line_and_exit_2(capsys, kb_path):
    assert run(capsys, "kb", "init", "--kb", kb_path)[0] == 0
    code, _, err = run(capsys, "kb", "matrix", "nope", "--kb", kb_path)
    assert code == 2 and err.startswith("error: unknown algorithm")
    code, _, err = run(capsys, "kb", "nearest", "--dataset", "missing", "--kb", kb_path)
    assert code == 2 and "unknown dataset" in err
    code, _, err = run(capsys, "data", "meta-features", "sklearn:nope", "--kb", kb_path)
    assert code == 2 and "error:" in err


def test_space_commands(capsys, tmp_path):
    code, out, _ = run(capsys, "space", "sample", "-n", "3", "--seed", "1", "--algorithms", "knn", "qda")
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(lines) == 3 and {c["algorithm"] for c in lines} <= {"knn", "qda"}
    assert run(capsys, "space", "sample", "-n", "3", "--seed", "1", "--algorithms", "knn", "qda")[1] == out
    code, _, err = run(capsys, "space", "validate", "knn", '{"n_neighbors": 50, "weights": "uniform", "p": 2}')
    assert code == 2 and "n_neighbors" in err
    code, _, err = run(capsys, "space", "validate", "knn", "{not json")
    assert code == 2 and "JSON" in err
    target = tmp_path / "cash.json"
    assert run(capsys, "space", "export", str(target), "--algorithms", "knn", "svm_rbf")[0] == 0
    from metabo.space.cash import CASHSpace

    assert sorted(CASHSpace.from_json(target.read_text()).spaces) == ["knn", "svm_rbf"]


def test_bad_meta_features_json_and_a_closed_pipe_end_without_a_traceback(capsys, kb_path, monkeypatch):
    assert run(capsys, "kb", "init", "--kb", kb_path)[0] == 0
    for text, words in (("{bad", "is not valid JSON"), ("[1, 2]", "non-empty JSON object"),
                        ('{"a": "x"}', "must be numbers")):
        code, _, err = run(capsys, "kb", "nearest", "--meta-features", text, "--kb", kb_path)
        assert code == 2 and words in err and len(err.strip().splitlines()) == 1

    class ClosedPipe:
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            pass

    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert main(["kb", "datasets", "--kb", kb_path]) == 141  # as `metabo kb datasets | head` ends


def test_version_and_every_argument_has_help(capsys):
    from metabo import __version__
    from metabo.cli.main import build_parser

    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"metabo {__version__}"
    missing = []

    def walk(parser, path):
        for action in parser._actions:
            if hasattr(action, "choices") and isinstance(action.choices, dict):
                for name, child in action.choices.items():
                    walk(child, f"{path} {name}")
            elif not action.help and action.dest not in ("help", "version"):
                missing.append(f"{path} {action.dest}")

    walk(build_parser(), "metabo")
    assert [m for m in missing if m.rsplit(" ", 1)[1] in ("seed", "metric", "algorithm")] == []


def test_transfer_heatmap_labels_are_unique_names():
    from metabo.cli.transfer_cmds import _labels

    labels = _labels(["keel-a", "openml-1", "openml-2"], {"keel-a": "iris", "openml-1": "iris", "openml-2": "wine"})
    assert labels == {"keel-a": "iris (keel-a)", "openml-1": "iris (openml-1)", "openml-2": "wine"}
