"""The signed local copy of checked model files (metabo.ensembles.model_cache): a load after
a save or a checked load reads the copy, not skops; a copy that does not verify under the
key (changed, planted, or signed with another key) is never unpickled."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.datasets import make_classification

from metabo.ensembles import model_cache
from metabo.ensembles.model import EnsembleModel
from metabo.space.algorithms import default_cash_space

SPACE = default_cash_space()


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("METABO_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture
def saved(home, tmp_path) -> tuple[Path, EnsembleModel, pd.DataFrame]:
    X, y = make_classification(n_samples=80, n_features=4, random_state=0)
    X = pd.DataFrame(X, columns=list("abcd"))
    model = EnsembleModel([SPACE.default_configuration("gaussian_nb"), SPACE.default_configuration("lda")]).fit(X, y)
    path = tmp_path / "m.skops"
    model.save(path)
    return path, model, X


def _no_skops(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("skops was asked to load")
    monkeypatch.setattr(sio, "load", refuse)


def test_a_saved_file_loads_from_its_signed_copy(saved, home, monkeypatch):
    path, model, X = saved
    digest = model_cache.file_digest(path)
    assert (home / "cache" / "models" / f"{digest}.tag").is_file()
    assert (home / "cache" / "models" / "key").stat().st_mode & 0o077 == 0  # the key is the user's alone
    _no_skops(monkeypatch)
    np.testing.assert_array_equal(EnsembleModel.load(path).predict_proba(X), model.predict_proba(X))


def test_a_checked_load_keeps_a_copy_for_the_next(saved, home, monkeypatch):
    path, model, X = saved
    for f in (home / "cache" / "models").iterdir():
        f.unlink()
    EnsembleModel.load(path)  # through skops: checked, then kept
    _no_skops(monkeypatch)
    np.testing.assert_array_equal(EnsembleModel.load(path).predict(X), model.predict(X))


class _Payload:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


@pytest.mark.parametrize("how", ["changed", "planted", "other key"])
def test_a_copy_that_does_not_verify_is_never_unpickled(saved, home, tmp_path, how):
    path, model, X = saved
    folder = home / "cache" / "models"
    digest = model_cache.file_digest(path)
    marker = tmp_path / "ran"
    crafted = pickle.dumps(_Payload(str(marker)))
    if how == "changed":  # the copy replaced, its tag kept
        (folder / f"{digest}.pickle").write_bytes(crafted)
    elif how == "planted":  # a copy and a tag made up without the key
        (folder / f"{digest}.pickle").write_bytes(crafted)
        (folder / f"{digest}.tag").write_bytes(b"\0" * 32)
    else:  # a copy signed properly, under a key that is not this home's
        (folder / f"{digest}.pickle").write_bytes(crafted)
        (folder / f"{digest}.tag").write_bytes(model_cache._tag(b"k" * 32, digest, crafted))
    loaded = EnsembleModel.load(path)  # falls back to skops
    assert not marker.exists()
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))


def test_at_most_max_entries_are_kept(home, monkeypatch):
    monkeypatch.setattr(model_cache, "MAX_ENTRIES", 3)
    folder = home / "cache" / "models"
    model_cache.keep_payload("f" * 64, {"first": True})  # makes the folder and its key
    os.utime(folder / f"{'f' * 64}.tag", (1, 1))  # the order of use, whatever the clock's resolution
    (folder / f"{'e' * 64}.joblib").write_bytes(b"an earlier version's copy")
    (folder / f"{'d' * 64}.pickle").write_bytes(b"a pickle whose tag was lost")
    (folder / ".abc.tmp").write_bytes(b"a write in progress")
    for i in range(5):
        model_cache.keep_payload(f"{i:064x}", {"i": i})
        os.utime(folder / f"{i:064x}.tag", (2 + i, 2 + i))
    kept = sorted(p.stem for p in folder.glob("*.tag"))
    assert kept == [f"{i:064x}" for i in (2, 3, 4)]
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [".abc.tmp", "key", *(f"{k}.pickle" for k in kept), *(f"{k}.tag" for k in kept)])
    assert model_cache.cached_payload(kept[-1]) == {"i": 4}


def test_an_unwritable_home_costs_only_the_speed(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("METABO_HOME", str(blocker))  # a file: nothing can be made under it
    model_cache.keep_payload("0" * 64, {"x": 1})
    assert model_cache.cached_payload("0" * 64) is None


def test_metabo_predict_keeps_the_copy_only_when_it_succeeds(saved, home, tmp_path):
    from metabo.cli.main import main

    path, model, X = saved
    folder = home / "cache" / "models"
    for f in folder.iterdir():
        f.unlink()
    X.drop(columns="b").to_csv(tmp_path / "other.csv", index=False)
    assert main(["predict", str(path), str(tmp_path / "other.csv")]) == 2  # refused: a column missing
    assert list(folder.iterdir()) == []  # the failed command left the home as it was
    X.to_csv(tmp_path / "new.csv", index=False)
    assert main(["predict", str(path), str(tmp_path / "new.csv"), "--out", str(tmp_path / "p.csv")]) == 0
    assert (folder / f"{model_cache.file_digest(path)}.tag").is_file()
