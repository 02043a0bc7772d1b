"""A full disk while ``metabo tune --save-model`` or ``metabo predict --out`` writes: one
line, exit 2, no half-written file, and what was stored before (the session, an older
file at the path) kept whole."""

from __future__ import annotations

import errno
import resource
import signal
import subprocess

import numpy as np
import pandas as pd

from metabo.cli.main import main
from metabo.ensembles.model import EnsembleModel
from metabo.kb import KnowledgeBase
from metabo.testing.service import serve_command


def _table(tmp_path, n=80):
    rng = np.random.default_rng(0)
    table = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n)})
    table["y"] = np.where(table["a"] > 0, "p", "q")
    table.to_csv(path := tmp_path / "data.csv", index=False)
    return table, path


def test_a_full_disk_while_saving_the_model_is_one_line_and_keeps_the_session(tmp_path, monkeypatch, capsys):
    import metabo.ensembles.model as model_module

    _, data = _table(tmp_path)
    models = tmp_path / "models"
    models.mkdir()

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(model_module.os, "fsync", full)
    kb = tmp_path / "kb.duckdb"
    KnowledgeBase(kb).close()  # a store made beforehand
    code = main(["tune", str(data), "--target", "y", "--budget", "2", "--strategy", "random", "--algorithms", "knn",
                 "--session", "s", "--kb", str(kb), "--no-meta-features", "--save-model", str(models / "m.skops")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1].startswith("error: cannot write the model to ")
    assert "No space left on device" in err[-1] and "Traceback" not in "\n".join(err)
    assert list(models.iterdir()) == []  # neither the model nor a temporary
    with KnowledgeBase(kb, read_only=True) as store:
        trials = store.query("SELECT count(*) FROM runs WHERE source = 'session:s' AND fold = 0 "
                             "AND metric = 'error_rate'").iloc[0, 0]
    assert trials == 2  # the session is stored


def _limit_file_size() -> None:
    """In the child: files may not grow beyond 4 kB, and exceeding it is an error (EFBIG),
    not a SIGXFSZ kill: a disk that fills up mid-write."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


def test_a_full_disk_while_writing_predictions_is_one_line_and_keeps_the_old_file(tmp_path):
    table, data = _table(tmp_path, n=400)  # 400 rows with probabilities: well beyond 4 kB
    model = EnsembleModel([("lda", {"solver": "svd"})]).fit(table[["a", "b"]], table["y"])
    model.save(path := tmp_path / "m.skops")
    out = tmp_path / "p.csv"
    out.write_text("old predictions\n")
    done = subprocess.run([*serve_command(), "predict", str(path), str(data), "--target", "y", "--proba",
                           "--out", str(out)], capture_output=True, text=True, preexec_fn=_limit_file_size,
                          timeout=300)
    err = done.stderr.strip()
    assert done.returncode == 2, err
    assert err.startswith("error: cannot write the predictions to ") and "\n" not in err, err
    assert out.read_text() == "old predictions\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv", "m.skops", "p.csv"]  # no temporary left
