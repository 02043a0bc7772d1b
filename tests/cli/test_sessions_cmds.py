"""``metabo sessions``: a tuning of a bundled dataset listed as done, a process really
killed mid-session listed as interrupted, one resumed listed as running again, the
filters, and a store another process holds. A faked dead owner and a DataFrame
tuning: tests/cli/test_predict_and_sessions.py."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap

import pytest

from metabo.cli.main import main
from metabo.kb import KnowledgeBase
from metabo.kb.sessions import list_sessions
from metabo.optimizer import tune
from metabo.space.algorithms import default_cash_space


def _rows(out: str) -> dict[str, list[str]]:
    """The printed table's rows by session id (the first column)."""
    lines = out.strip().splitlines()
    return {line.split()[0]: line.split() for line in lines[1:] if not line.startswith("continue")}


@pytest.fixture
def tuned(tmp_path):
    kb_path = tmp_path / "kb.duckdb"
    with KnowledgeBase(kb_path) as kb:
        result = tune("sklearn:iris", budget=2, space=default_cash_space(["knn", "lda"]), strategy="random",
                      kb=kb, seed=0, session_id="iris-random", meta_features=False, refit=False)
    return kb_path, result


def test_a_finished_tuning_is_listed_done_with_its_trials_and_best(tuned, capsys):
    kb_path, result = tuned
    assert main(["sessions", "--kb", str(kb_path)]) == 0
    out = capsys.readouterr().out
    header, *_ = out.splitlines()
    assert header.split() == ["session_id", "dataset", "strategy", "metric", "trials", "failed", "best", "status",
                              "updated_at"]
    row = _rows(out)["iris-random"]
    assert row[1:8] == ["iris", "random", "error_rate", "2", "0", f"{result.validation_error:.4f}", "done"]
    assert "--resume" not in out  # nothing to continue


def test_a_killed_process_leaves_its_session_interrupted_until_resumed(tuned, capsys):
    kb_path, result = tuned
    script = textwrap.dedent(f"""
        import os, signal
        from metabo.kb import KnowledgeBase
        kb = KnowledgeBase({str(kb_path)!r})
        kb.add_session("killed", strategy="random", dataset_id={result.dataset_id!r})
        kb.close()  # committed; the process then dies without finishing the session
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -9, proc.stderr
    assert main(["sessions", "--kb", str(kb_path)]) == 0
    out = capsys.readouterr().out
    assert _rows(out)["killed"][7] == "interrupted" and _rows(out)["iris-random"][7] == "done"
    assert "metabo tune DATA --resume SESSION_ID" in out
    with KnowledgeBase(kb_path) as kb:
        kb.set_session_status("killed", "running")  # what Optimizer.resume does: this process owns it now
        by_id = list_sessions(kb).set_index("session_id")
    assert by_id.loc["killed", "status"] == "running"
    assert by_id.index[0] == "killed"  # newest first: touched last


def test_an_owner_on_another_host_cannot_be_checked_so_stays_running(tuned):
    kb_path, result = tuned
    with KnowledgeBase(kb_path) as kb:
        kb.add_session("remote", strategy="gp", dataset_id=result.dataset_id)
        kb.set_state("session-owner:remote", {"host": socket.gethostname() + "-elsewhere", "pid": 2 ** 22 + 1})
        assert list_sessions(kb).set_index("session_id").loc["remote", "status"] == "running"


def test_dataset_filter_and_limit_newest_first(tuned, capsys):
    kb_path, result = tuned
    with KnowledgeBase(kb_path) as kb:
        for name in ("s1", "s2", "s3"):
            kb.add_session(name, strategy="random", dataset_id=result.dataset_id)
        kb.add_session("no-dataset", strategy="random")
    assert main(["sessions", "--kb", str(kb_path), "--limit", "2"]) == 0
    assert list(_rows(capsys.readouterr().out)) == ["no-dataset", "s3"]
    assert main(["sessions", "--kb", str(kb_path), "--dataset", "iris"]) == 0
    assert list(_rows(capsys.readouterr().out)) == ["s3", "s2", "s1", "iris-random"]
    assert main(["sessions", "--kb", str(kb_path), "--dataset", result.dataset_id, "--limit", "1"]) == 0
    assert list(_rows(capsys.readouterr().out)) == ["s3"]
    with pytest.raises(SystemExit) as e:
        main(["sessions", "--kb", str(kb_path), "--limit", "0"])
    assert e.value.code == 2 and "argument --limit: must be an integer of at least 1" in capsys.readouterr().err


def test_a_store_another_process_holds_is_named_in_one_line(tuned, capsys):
    kb_path, _ = tuned
    script = f"import sys, time; from metabo.kb import KnowledgeBase; kb = KnowledgeBase({str(kb_path)!r}); " \
             "print('open', flush=True); sys.stdin.readline()"
    holder = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        assert main(["sessions", "--kb", str(kb_path)]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and f"in use by process {holder.pid}" in err
    finally:
        holder.communicate("\n", timeout=60)
    assert main(["sessions", "--kb", str(kb_path)]) == 0  # free again


def test_kb_build_sessions_are_not_listed_as_tunings(tuned, capsys):
    kb_path, _ = tuned
    with KnowledgeBase(kb_path) as kb:
        before = list_sessions(kb, limit=None)["session_id"].tolist()
        kb.add_session("build-x", strategy="build", settings={"datasets": 3})
        assert list_sessions(kb, limit=None)["session_id"].tolist() == before
