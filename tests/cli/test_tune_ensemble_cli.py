"""``metabo tune --ensemble``: prints the ensemble found, stores the session's runs, saves a
loadable EnsembleModel; EO with another loss; flags that make no sense with an ensemble."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_iris

from metabo.cli.main import main
from metabo.ensembles import EnsembleModel
from metabo.kb import KnowledgeBase

ALGORITHMS = ["gaussian_nb", "lda", "knn"]


def test_searched_ensemble_saved_and_loaded(tmp_path, capsys):
    kb_path, model_path = str(tmp_path / "kb.duckdb"), tmp_path / "m.skops"
    assert main(["kb", "init", kb_path]) == 0  # --kb names an existing store
    code = main(["tune", "sklearn:iris", "--budget", "6", "--ensemble", "eo", "--kb", kb_path,
                 "--save-model", str(model_path), "--algorithms", "gaussian_nb", "knn", "decision_tree",
                 "--session", "ens", "--seed", "1",
                 "--cv", "none", "--no-guard"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "session ens: 6 trials" in out and "(eo around gp, seed 1)" in out
    assert "selection on the 20% validation part" in out
    assert "ensemble of " in out and "distinct members (" in out
    assert "validation error_rate: 0." in out and "test error_rate: 0." in out
    assert "test error_rate after refitting the members on training + validation rows: " in out
    assert "mean pairwise diversity of the members: 0." in out
    assert f"saved the ensemble to {model_path}" in out
    assert model_path.is_file()

    model = EnsembleModel.load(model_path)
    n_members = int(out.split("ensemble of ")[1].split()[0])
    assert len(model.configurations) <= n_members  # identical configurations are merged
    assert {c["algorithm"] for c in model.configurations} <= {"gaussian_nb", "knn", "decision_tree"}
    assert sum(c["weight"] for c in model.configurations) == pytest.approx(1.0)
    X = load_iris(as_frame=True).data
    P = model.predict_proba(X)
    assert P.shape == (150, 3)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert np.mean(model.predict_codes(X) == load_iris().target) > 0.8

    with KnowledgeBase(kb_path) as kb:
        runs = kb.query("SELECT algorithm, source FROM runs WHERE metric = 'error_rate'")
        n_predictions = kb.stats()["predictions"]
    assert len(runs) == 6 and set(runs["source"]) == {"session:ens"}
    assert set(runs["algorithm"]) <= {"gaussian_nb", "knn", "decision_tree"}
    assert n_predictions == 12  # valid + test of each trial


def test_eo_with_the_c_bound(tmp_path, capsys):
    assert main(["kb", "init", str(tmp_path / "kb.duckdb")]) == 0  # --kb names an existing store
    code = main(["tune", "sklearn:iris", "--budget", "6", "--ensemble", "eo", "--eo-loss", "c_bound",
                 "--ensemble-size", "3", "--algorithms", *ALGORITHMS, "--kb", str(tmp_path / "kb.duckdb"),
                 "--no-guard"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "(eo around gp, seed 0)" in out and "distinct members (vote)" in out
    assert "test error_rate: 0." in out and "after refitting" not in out


def test_ensemble_refuses_a_reshuffled_protocol_and_a_used_session(tmp_path, capsys):
    kb_path = str(tmp_path / "kb.duckdb")
    assert main(["kb", "init", kb_path]) == 0
    assert main(["tune", "sklearn:iris", "--budget", "4", "--ensemble", "esmbo", "--reshuffle", "--kb", kb_path]) == 2
    assert "reshuffle" in capsys.readouterr().err
    args = ["tune", "sklearn:iris", "--budget", "2", "--ensemble", "esmbo", "--algorithms", "knn",
            "--session", "s", "--kb", kb_path]
    assert main(args) == 0
    capsys.readouterr()
    assert main(args) == 2
    assert "session 's' exists" in capsys.readouterr().err


@pytest.mark.slow
def test_the_default_model_says_what_the_post_hoc_ensemble_kept(tmp_path, capsys):
    """By default iris (150 rows) is searched on 5-fold out-of-fold predictions, and what
    the post-hoc ensemble kept is printed: its members with their cross-validated gain, or
    the best configuration and why; the model saved is the one printed."""
    kb_path, model_path = str(tmp_path / "kb.duckdb"), tmp_path / "m.skops"
    assert main(["kb", "init", kb_path]) == 0
    code = main(["tune", "sklearn:iris", "--budget", "5", "--algorithms", *ALGORITHMS, "--kb", kb_path,
                 "--save-model", str(model_path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "(mean over 5-fold cross-validation" in out
    model = EnsembleModel.load(model_path)
    if "ensemble: not kept (cross-validated gain" in out:
        assert "model: the selection fitted on every row" in out and len(model.configurations) == 1
    else:
        n = int(out.split("ensemble of ")[1].split()[0])
        assert "cross-validated gain" in out and "model: the ensemble of " in out and "fitted on every row" in out
        assert 1 < len(model.configurations) <= n  # identical configurations are merged
    with KnowledgeBase(kb_path) as kb:
        runs = kb.query("SELECT fold FROM runs WHERE metric = 'error_rate'")
    assert sorted(set(runs["fold"])) == [0, 1, 2, 3, 4] and len(runs) == 25
    assert main(["tune", "sklearn:iris", "--budget", "2", "--cv", "x"]) == 2
    assert "--cv" in capsys.readouterr().err
    assert main(["tune", "sklearn:iris", "--budget", "2", "--no-guard", "--kb", kb_path]) == 2
    assert "--no-guard applies to --ensemble esmbo" in capsys.readouterr().err
