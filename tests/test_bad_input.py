"""Bad input a user gives, through the command line and the Python API: each gets one
clear line (the message asserted here) and leaves every table of the knowledge base as it
was (a snapshot of every row before and after). The service's bad requests are in
tests/service/test_bad_requests.py, on the same snapshot."""

from __future__ import annotations

import itertools
import json
import math
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from metabo.cli.main import main
from metabo.cli.watchdog import Watchdog
from metabo.exceptions import MetaboError
from metabo.kb import KnowledgeBase
from metabo.testing.store import snapshot, snapshot_file


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A store with iris and one finished session, a saved model, and the files the
    cases name (good ones and broken ones)."""
    root = tmp_path_factory.mktemp("bad-input")
    rng = np.random.default_rng(0)
    good = pd.DataFrame({"a": rng.normal(size=60), "b": rng.normal(size=60), "y": rng.choice(["p", "q"], 60)})
    good.to_csv(root / "good.csv", index=False)
    good.drop(columns="y").rename(columns={"b": "c"}).to_csv(root / "other-columns.csv", index=False)
    good.assign(y="x").to_csv(root / "one-class.csv", index=False)
    good.assign(y=rng.normal(size=60)).to_csv(root / "numbers.csv", index=False)
    good.head(0).to_csv(root / "header-only.csv", index=False)
    (root / "binary.csv").write_bytes(bytes(range(256)) * 20)
    (root / "empty.csv").write_bytes(b"")
    (root / "not-a-model.joblib").write_bytes(b"not a pickle at all")
    (root / "corrupt.duckdb").write_bytes(b"this is not a duckdb file" * 200)
    (root / "bad.arff").write_text("@RELATION r\n@ATTRIBUTE a NUMERIC\n@ATTRIBUTE y {p,q}\n@DATA\n1,p\nnot,a,row\n")
    kb = root / "kb.duckdb"
    assert main(["kb", "init", str(kb)]) == 0  # --kb names an existing store
    assert main(["tune", str(root / "good.csv"), "--target", "y", "--budget", "2", "--strategy", "random",
                 "--algorithms", "knn", "--session", "done", "--save-model", str(root / "m.skops"),
                 "--kb", str(kb), "--no-meta-features"]) == 0
    assert main(["kb", "export", str(root / "parquet-dir"), "--kb", str(kb)]) == 0
    (root / "parquet-dir" / "runs.parquet").write_bytes(b"PAR1 broken")  # an export whose runs file is broken
    return root, kb


# (case, argv with {root} and {kb} placeholders, words of the one-line message)
CLI_CASES = [
    ("tune: unknown algorithm", ["tune", "{root}/good.csv", "--target", "y", "--budget", "1", "--algorithms", "knn",
                                 "nope"], "unknown algorithm 'nope'"),
    ("tune: one-class target", ["tune", "{root}/one-class.csv", "--target", "y", "--budget", "1"], "has one class"),
    ("tune: regression target", ["tune", "{root}/numbers.csv", "--target", "y", "--budget", "1"],
     "a regression target"),
    ("tune: no such target column", ["tune", "{root}/good.csv", "--target", "label", "--budget", "1"],
     "no target column 'label'"),
    ("tune: a file without --target", ["tune", "{root}/good.csv", "--budget", "1"], "--target"),
    ("tune: no such file", ["tune", "{root}/missing.csv", "--target", "y", "--budget", "1"], "missing.csv"),
    ("tune: header only", ["tune", "{root}/header-only.csv", "--target", "y", "--budget", "1"], "has no rows"),
    ("tune: empty file", ["tune", "{root}/empty.csv", "--target", "y", "--budget", "1"], "empty.csv"),
    ("tune: binary garbage", ["tune", "{root}/binary.csv", "--target", "y", "--budget", "1"], "binary.csv"),
    ("tune: malformed ARFF", ["tune", "{root}/bad.arff", "--target", "y", "--budget", "1"], "bad.arff"),
    ("tune: zero budget", ["tune", "{root}/good.csv", "--target", "y", "--budget", "0"], "budget"),
    ("tune: negative time budget", ["tune", "{root}/good.csv", "--target", "y", "--time-budget", "-5"],
     "time"),
    ("tune: no budget at all", ["tune", "{root}/good.csv", "--target", "y"], "--budget"),
    ("tune: a maximized metric", ["tune", "{root}/good.csv", "--target", "y", "--budget", "1", "--metric",
                                  "accuracy"], "use 'error_rate'"),
    ("tune: unknown strategy", ["tune", "{root}/good.csv", "--target", "y", "--budget", "1", "--strategy", "magic"],
     "invalid choice: 'magic'"),
    ("tune: resume an unknown session", ["tune", "{root}/good.csv", "--target", "y", "--budget", "1", "--resume",
                                         "nosuch"], "no session 'nosuch'"),
    ("tune: negative seed", ["tune", "{root}/good.csv", "--target", "y", "--budget", "1", "--seed", "-1"], "seed"),
    ("tune: max-train of zero", ["tune", "{root}/good.csv", "--target", "y", "--budget", "1", "--max-train", "0"],
     "--max-train"),
    ("tune: a warm start from nothing", ["tune", "{root}/good.csv", "--target", "y", "--budget", "1", "--strategy",
                                         "rlgp", "--algorithms", "qda"], "nothing to warm-start from"),
    ("predict: no model file", ["predict", "{root}/nope.joblib", "{root}/good.csv"], "nope.joblib"),
    ("predict: not a model", ["predict", "{root}/not-a-model.joblib", "{root}/good.csv"], "not-a-model.joblib"),
    ("predict: other columns", ["predict", "{root}/m.skops", "{root}/other-columns.csv"], "lacks the columns ['b']"),
    ("predict: no data file", ["predict", "{root}/m.skops", "{root}/nope.csv"], "nope.csv"),
    ("predict: no folder for --out", ["predict", "{root}/m.skops", "{root}/good.csv", "--out",
                                      "{root}/no/where.csv"], "no folder"),
    ("predict: --out a folder", ["predict", "{root}/m.skops", "{root}/good.csv", "--out", "{root}"], "is a folder"),
    ("predict: header only", ["predict", "{root}/m.skops", "{root}/header-only.csv"], "no rows to predict"),
    ("predict: a pickle without --trusted", ["predict", "{root}/not-a-model.joblib", "{root}/good.csv"], "--trusted"),
    ("tune: --save-model in a missing folder", ["tune", "{root}/good.csv", "--target", "y", "--budget", "1",
                                                "--save-model", "{root}/nodir/m.skops"], "no folder"),
    ("tune: --save-model a folder", ["tune", "{root}/good.csv", "--target", "y", "--budget", "1", "--save-model",
                                     "{root}"], "is a folder"),
    ("tune: --save-model joblib without --trusted", ["tune", "{root}/good.csv", "--target", "y", "--budget", "1",
                                                     "--save-model", "{root}/m2.joblib"], "runs code when"),
    ("kb stats: a mistyped store", ["kb", "stats", "--kb", "{root}/typo.duckdb"], "no knowledge base at"),
    ("kb stats: a folder", ["kb", "stats", "--kb", "{root}"], "is a folder"),
    ("kb stats: a corrupt store", ["kb", "stats", "--kb", "{root}/corrupt.duckdb"], "restore it from a Parquet"),
    ("kb nearest: bad JSON", ["kb", "nearest", "--meta-features", "{bad"], "not valid JSON"),
    ("kb ranks: unknown algorithm", ["kb", "ranks", "nope"], "unknown algorithm"),
    ("kb runs: unknown dataset", ["kb", "runs", "--dataset", "nope"], "unknown dataset"),
    ("kb import: no folder", ["kb", "import", "{root}/no-export"], "no-export"),
    ("kb import: a broken Parquet file", ["kb", "import", "{root}/parquet-dir"], "parquet"),
    ("space validate: bad value", ["space", "validate", "knn", '{"n_neighbors": -3}'], "n_neighbors"),
    ("space validate: unknown algorithm", ["space", "validate", "nope", "{}"], "unknown algorithm"),
    ("data add: unknown scikit-learn dataset", ["data", "add", "sklearn:nope", "--no-landmarkers"], "nope"),
    ("data add: a store in a missing folder", ["data", "add", "sklearn:iris", "--kb", "{root}/no/kb.duckdb"],
     "no folder"),
    ("sessions: --limit 0", ["sessions", "--limit", "0"], "at least 1"),
    ("kb build: unknown algorithm", ["kb", "build", "sklearn:iris", "--algorithms", "knn", "nope"],
     "unknown algorithm 'nope'"),
]


@pytest.mark.slow
@pytest.mark.parametrize("case, argv, words", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_the_command_line_refuses_in_one_line_and_stores_nothing(world, capsys, case, argv, words):
    root, kb = world
    argv = [a.replace("{root}", str(root)) for a in argv]
    if "--kb" not in argv:
        argv += ["--kb", str(kb)]
    before = snapshot_file(kb)
    files = sorted(p.name for p in root.rglob("*"))
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as e:  # argparse
        code = e.code
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, (out, err)
    assert len(lines) == 1, err
    assert "error" in lines[0] and words.lower() in lines[0].lower(), lines[0]
    assert "Traceback" not in err
    assert snapshot_file(kb) == before
    assert sorted(p.name for p in root.rglob("*")) == files  # no file made either


# ---------------------------------------------------------------------------------------
# The table of bad inputs and faults (issue 33): every command and option of the command
# line, each case run through ``main`` and required to give ONE line on stderr (no
# traceback anywhere), a non-zero exit, every table of the store unchanged, and no file
# made or removed in the test's folder, which holds $METABO_HOME (so no cache download,
# no new store: a mistyped --kb is an error, never an empty store tuned cold). Numbers are
# refused when parsed; every other check runs before anything is stored or run.


def _bad_files(root: Path, good: pd.DataFrame) -> None:
    """Broken files of every supported format, folders and exports the cases below name."""
    import bz2
    import gzip
    import lzma

    csv = (root / "good.csv").read_bytes()
    arff = (b"@RELATION r\n@ATTRIBUTE a NUMERIC\n@ATTRIBUTE y {p,q}\n@DATA\n"
            + b"".join(f"{i * 1.37},{'pq'[i % 2]}\n".encode() for i in range(500)))
    half = lambda data: data[: len(data) // 2]  # noqa: E731 - a truncated download
    blobs = {
        "target-only.csv": good[["y"]].to_csv(index=False).encode(),
        "trunc.csv.gz": half(gzip.compress(csv)), "bad.csv.gz": b"not gzip" * 10,
        "trunc.csv.bz2": half(bz2.compress(csv)), "bad.csv.bz2": b"not bz2" * 10,
        "trunc.csv.xz": half(lzma.compress(csv)), "bad.csv.xz": b"not xz" * 10,
        "bad.csv.zip": b"not zip" * 10, "bad.csv.zst": b"not zstd" * 10,
        "trunc.arff.gz": half(gzip.compress(arff)), "bad.arff.bz2": b"nope" * 20, "bad.arff.xz": b"nope" * 20,
        "bad.parquet": b"PAR1 nope", "empty.parquet": b"", "latin1.csv": "a,b,y\n1,\xe9,p\n".encode("latin-1"),
        "utf16.arff": "@RELATION r\n@ATTRIBUTE a NUMERIC\n".encode("utf-16"), "data.xlsx": b"PK\x03\x04",
        "nan-target.csv": good.assign(y=np.nan).to_csv(index=False).encode(),
        "existing.txt": b"a file", "empty.duckdb": b"", "text.duckdb": b"this is not a duckdb file" * 200,
        "grid-bad.json": b"[[\"knn\", {", "grid-shape.json": b"{\"knn\": 1}",
    }
    for name, data in blobs.items():
        (root / name).write_bytes(data)
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"a": [[1.0, 2.0], [3.0]], "s": [{"x": 1}, {"x": 2}], "y": ["p", "q"]}),
                   root / "nested.parquet")
    (root / "a-folder").mkdir()
    (root / "notes-folder").mkdir()
    (root / "notes-folder" / "notes.txt").write_text("mine")


def _bad_exports(root: Path, kb: Path) -> None:
    """A good export of the store, and copies of it each broken in one way."""
    good = root / "export-good"
    assert main(["kb", "export", str(good), "--kb", str(kb)]) == 0
    manifest = json.loads((good / "manifest.json").read_text())

    def copy(name: str) -> Path:
        shutil.copytree(good, root / name)
        return root / name

    flipped = bytearray((good / "datasets.parquet").read_bytes())
    flipped[4:12] = bytes(b ^ 0xFF for b in flipped[4:12])
    (copy("export-flipped") / "datasets.parquet").write_bytes(bytes(flipped))
    old = copy("export-old-corrupt")  # an export from before the checksums, its datasets file corrupt
    (old / "datasets.parquet").write_bytes(bytes(flipped))
    (old / "manifest.json").write_text(json.dumps({k: v for k, v in manifest.items() if k != "sha256"}))
    data = (good / "runs.parquet").read_bytes()
    (copy("export-truncated") / "runs.parquet").write_bytes(data[: len(data) // 2])
    (copy("export-no-manifest") / "manifest.json").unlink()
    (copy("export-bad-manifest") / "manifest.json").write_text("{not json")
    (copy("export-rows-list") / "manifest.json").write_text(json.dumps({**manifest, "rows": [1, 2]}))
    (copy("export-future") / "manifest.json").write_text(json.dumps({**manifest, "schema_version": 999}))
    (copy("export-missing-file") / "sessions.parquet").unlink()


@pytest.fixture(scope="module")
def bad_world(world):
    """``world`` with the files above, a $METABO_HOME folder, and the store's snapshot and
    SHA-256 (a store whose bytes are unchanged holds the same rows: the snapshot is
    compared only when the bytes differ, which keeps the table fast)."""
    root, kb = world
    _bad_files(root, pd.read_csv(root / "good.csv"))
    _bad_exports(root, kb)
    (root / "home").mkdir()
    return root, kb, snapshot_file(kb), _sha256(kb)


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def _disk_full_after(n: int):
    """A fault: the (n+1)-th file an export writes finds the disk full."""
    import errno

    def install(monkeypatch):
        from metabo.kb import parquet_io

        written = []
        real = parquet_io.sha256_of

        def sha256(path):
            written.append(path)
            if len(written) > n:
                raise OSError(errno.ENOSPC, "No space left on device", str(path))
            return real(path)

        monkeypatch.setattr(parquet_io, "sha256_of", sha256)

    return install


def case(name: str, argv: list[str], words: str, *, env: dict[str, str] | None = None, fault=None):
    """One row: ``argv`` (``{root}`` the test's folder, ``--kb {root}/kb.duckdb`` added
    unless given or ``env`` is, even empty), the words of its one-line message, environment variables
    and a fault to install."""
    return pytest.param(argv, words, env, fault, id=name)


GOOD = ["{root}/good.csv", "--target", "y"]
TUNE = ["tune", *GOOD, "--budget", "1", "--strategy", "random", "--algorithms", "knn"]
TYPO = "{root}/metabo.dukdb"  # a mistyped store in an existing folder
FILE_ENV = {"METABO_HOME": "{root}/existing.txt"}  # $METABO_HOME is a file

#: Bad values of each kind of number, with their id.
BAD_NUMBERS = {
    "count": [("0", "zero"), ("-1", "negative"), ("abc", "not a number"), ("1.5", "a fraction"),
              ("99999999999", "huge")],
    "rows": [("1", "one row"), ("0", "zero"), ("-5", "negative"), ("nan", "nan")],
    "seconds": [("0", "zero"), ("-5", "negative"), ("nan", "nan"), ("inf", "inf"), ("1e9", "overflowing"),
                ("abc", "not a number")],
    "seconds-or-0": [("-5", "negative"), ("nan", "nan"), ("inf", "inf"), ("1e9", "overflowing"),
                     ("abc", "not a number")],
    "seed": [("-1", "negative"), ("4294967296", "2**32"), ("abc", "not a number"), ("1.5", "a fraction")],
    "megabytes": [("-1", "negative"), ("abc", "not a number"), ("1.5", "a fraction"),
                  ("1000000000000", "huge")],
    "count-or-0": [("-1", "negative"), ("abc", "not a number"), ("1.5", "a fraction"), ("99999999999", "huge")],
    "port": [("70000", "above 65535"), ("-1", "negative"), ("abc", "not a number"), ("80.5", "a fraction")],
    "id": [("0", "zero"), ("-3", "negative"), ("abc", "not a number")],
}

#: (command, option, kind of number) for every numeric option of the command line.
NUMERIC_OPTIONS = [
    (TUNE, "--budget", "count"), (TUNE, "--max-train", "rows"), (TUNE, "--ensemble-size", "count"),
    (TUNE, "--n-jobs", "count"), (TUNE, "--seed", "seed"), (TUNE, "--time-budget", "seconds"),
    (TUNE, "--time-limit", "seconds"),
    (["kb", "build", "sklearn:iris"], "--configs", "count"), (["kb", "build", "sklearn:iris"], "--max-train", "rows"),
    (["kb", "build", "sklearn:iris"], "--batch-size", "count"), (["kb", "build", "sklearn:iris"], "--n-jobs", "count"),
    (["kb", "build", "sklearn:iris"], "--seed", "seed"),
    (["kb", "build", "sklearn:iris"], "--memory-limit", "megabytes"),
    (["kb", "build", "sklearn:iris"], "--time-limit", "seconds-or-0"),
    (["kb", "runs"], "--limit", "count"), (["kb", "matrix", "knn"], "--limit", "count"),
    (["kb", "ranks", "knn"], "--min-tasks", "count"), (["kb", "ranks", "knn"], "-k", "count"),
    (["kb", "ranks", "knn"], "--limit", "count"), (["kb", "nearest", "--dataset", "file-good"], "-k", "count"),
    (["kb", "portfolio", "knn"], "-k", "count"), (["kb", "similar", "knn"], "--top", "count"),
    (["kb", "similar", "knn"], "--min-shared", "rows"),
    (["suggest", *GOOD], "-k", "count"), (["suggest", *GOOD], "--seed", "seed"),
    (["transfer", "knn"], "-k", "count"), (["transfer", "knn"], "--top", "count"),
    (["transfer", "knn"], "--min-tasks", "count"), (["transfer", "knn"], "--min-shared", "rows"),
    (["sessions"], "--limit", "count"),
    (["space", "sample"], "-n", "count"), (["space", "sample"], "--seed", "seed"),
    (["ingest", "openml"], "--task", "id"), (["ingest", "openml"], "--flow", "id"),
    (["ingest", "openml", "--task", "1"], "--page-size", "count"),
    (["ingest", "openml", "--task", "1"], "--max-runs", "count"),
    (["ingest", "openml", "--task", "1"], "--timeout", "seconds"),
    (["ingest", "openml", "--task", "1"], "--deadline", "seconds"),
    (["ingest", "openml", "--task", "1"], "--attempts", "count"),
    (["ingest", "pmf", "--no-fetch"], "--max-chunks", "count-or-0"),
    (["serve"], "--port", "port"), (["serve"], "--max-pending", "count"),
    (["quickstart", "--no-keel"], "--demo-budget", "count"), (["quickstart", "--no-keel"], "--demo-seeds", "count"),
    (["quickstart", "--no-keel"], "--seed", "seed"),
    (["data", "meta-features", "sklearn:iris"], "--seed", "seed"), (["data", "add", "sklearn:iris"], "--seed", "seed"),
]

def _command(argv: list[str]) -> str:
    """The command's words (``kb build``), for a case's id."""
    return " ".join(itertools.takewhile(lambda a: not a.startswith(("-", "{")), argv))


NUMBER_CASES = [
    case(f"{_command(argv)} {option} {label}", [*argv, option, value], f"argument {option}")
    for argv, option, kind in NUMERIC_OPTIONS for value, label in BAD_NUMBERS[kind]
]

#: Every command that takes --kb, each given a mistyped store: an error, never a new store.
KB_TYPO_CASES = [
    case(f"--kb typo: {_command(argv)}", [*argv, "--kb", TYPO], "no knowledge base at")
    for argv in (TUNE, ["data", "add", *GOOD], ["kb", "stats"], ["kb", "export", "{root}/typo-export"],
                 ["kb", "import", "{root}/export-good"], ["kb", "build", "sklearn:iris", "--algorithms", "knn"],
                 ["kb", "datasets"], ["kb", "runs"], ["kb", "matrix", "knn"], ["kb", "ranks", "knn"],
                 ["kb", "nearest", "--dataset", "iris"], ["kb", "portfolio", "knn"], ["kb", "similar", "knn"],
                 ["kb", "join-qualities", "--no-fetch"], ["suggest", *GOOD], ["transfer", "knn"], ["sessions"],
                 ["ingest", "openml", "--task", "1"], ["ingest", "pmf", "--no-fetch"], ["serve"],
                 ["quickstart", "--no-keel", "--no-demo"], ["data", "meta-features", *GOOD],
                 ["space", "validate", "knn", "{}"])
]

MORE_CASES = [
    # late checks that stored a dataset (and a session) before refusing
    case("tune: --time-budget 0.001", ["tune", *GOOD, "--time-budget", "0.001", "--algorithms", "knn"],
         "time budget"),
    case("tune: a CSV of only the target", ["tune", "{root}/target-only.csv", "--target", "y", "--budget", "1"],
         "no feature column"),
    case("tune: --resume another dataset's session", ["tune", "sklearn:iris", "--budget", "1", "--resume", "done",
                                                      "--no-meta-features"], "on its own dataset"),
    case("tune: --session naming another dataset's", ["tune", "sklearn:iris", "--budget", "1", "--session", "done",
                                                      "--no-meta-features"], "on its own dataset"),
    case("tune: --resume under another metric", [*TUNE, "--resume", "done", "--metric", "log_loss"],
         "on its own dataset"),
    case("data add: a one-class table", ["data", "add", "{root}/one-class.csv", "--target", "y"], "has one class"),
    case("data add: a regression table", ["data", "add", "{root}/numbers.csv", "--target", "y"],
         "a regression target"),
    case("data add: a table of only the target", ["data", "add", "{root}/target-only.csv", "--target", "y"],
         "no feature column"),
    case("data add: an all-NaN target", ["data", "add", "{root}/nan-target.csv", "--target", "y"], "nan-target"),
    case("kb build: keel:nosuch (no download)", ["kb", "build", "keel:nosuch", "--algorithms", "knn"],
         "no KEEL dataset 'nosuch'"),
    case("kb build: keel:imbalanced/nosuch", ["kb", "build", "sklearn:iris", "keel:imbalanced/nosuch"],
         "no KEEL dataset"),
    case("kb build: unknown sklearn name", ["kb", "build", "sklearn:nope", "--algorithms", "knn"],
         "unknown scikit-learn dataset"),
    case("kb build: a missing file", ["kb", "build", "sklearn:iris", "{root}/missing.csv"], "no such file"),
    case("kb build: an unknown source", ["kb", "build", "foo:bar"], "unknown dataset source"),
    case("kb build: openml:abc", ["kb", "build", "openml:abc"], "is an integer"),
    case("kb build: openml:-1", ["kb", "build", "openml:-1"], "positive"),
    case("kb build: an unknown metric", ["kb", "build", "sklearn:iris", "--metrics", "nosuch"], "nosuch"),
    case("kb build: --cv 0", ["kb", "build", "sklearn:iris", "--cv", "0"], "cv"),
    case("kb build: --cv 1", ["kb", "build", "sklearn:iris", "--cv", "1"], "cv"),
    case("kb build: --cv abc", ["kb", "build", "sklearn:iris", "--cv", "abc"], "--cv"),
    case("kb build: unknown backend", ["kb", "build", "sklearn:iris", "--backend", "spark"], "unknown backend"),
    case("kb build: a scheduler for loky", ["kb", "build", "sklearn:iris", "--scheduler", "tcp://127.0.0.1:1"],
         "dask and ray"),
    case("kb build: no datasets", ["kb", "build", "--algorithms", "knn"], "give dataset specs"),
    case("kb build: --configs-from a missing file", ["kb", "build", "sklearn:iris", "--configs-from",
                                                     "{root}/nogrid.json"], "nogrid.json"),
    case("kb build: --configs-from malformed JSON", ["kb", "build", "sklearn:iris", "--configs-from",
                                                     "{root}/grid-bad.json"], "grid-bad.json"),
    case("kb build: --configs-from not a grid", ["kb", "build", "sklearn:iris", "--configs-from",
                                                 "{root}/grid-shape.json"], "grid-shape.json"),
    case("kb build: --configs-from with --algorithms", ["kb", "build", "sklearn:iris", "--configs-from",
                                                        "{root}/grid-bad.json", "--algorithms", "knn"],
         "--configs-from"),
    case("kb build: --keel bogus", ["kb", "build", "--keel", "bogus"], "invalid choice"),
    # tracebacks before: broken files of every format
    case("tune: a Parquet file with nested columns", ["tune", "{root}/nested.parquet", "--target", "y", "--budget",
                                                      "1"], "lists or structs"),
    case("tune: a truncated .csv.gz", ["tune", "{root}/trunc.csv.gz", "--target", "y", "--budget", "1"],
         "trunc.csv.gz"),
    case("tune: not gzip", ["tune", "{root}/bad.csv.gz", "--target", "y", "--budget", "1"], "bad.csv.gz"),
    case("tune: a truncated .csv.bz2", ["tune", "{root}/trunc.csv.bz2", "--target", "y", "--budget", "1"],
         "trunc.csv.bz2"),
    case("tune: not bz2", ["tune", "{root}/bad.csv.bz2", "--target", "y", "--budget", "1"], "bad.csv.bz2"),
    case("tune: a truncated .csv.xz", ["tune", "{root}/trunc.csv.xz", "--target", "y", "--budget", "1"],
         "trunc.csv.xz"),
    case("tune: not xz", ["tune", "{root}/bad.csv.xz", "--target", "y", "--budget", "1"], "bad.csv.xz"),
    case("tune: not zip", ["tune", "{root}/bad.csv.zip", "--target", "y", "--budget", "1"], "bad.csv.zip"),
    case("tune: not zstd", ["tune", "{root}/bad.csv.zst", "--target", "y", "--budget", "1"], "bad.csv.zst"),
    case("tune: a truncated .arff.gz", ["tune", "{root}/trunc.arff.gz", "--target", "y", "--budget", "1"],
         "trunc.arff.gz"),
    case("tune: not arff.bz2", ["tune", "{root}/bad.arff.bz2", "--target", "y", "--budget", "1"], "bad.arff.bz2"),
    case("tune: not arff.xz", ["tune", "{root}/bad.arff.xz", "--target", "y", "--budget", "1"], "bad.arff.xz"),
    case("tune: UTF-16 ARFF", ["tune", "{root}/utf16.arff", "--target", "y", "--budget", "1"], "utf16.arff"),
    case("tune: not Parquet", ["tune", "{root}/bad.parquet", "--target", "y", "--budget", "1"], "bad.parquet"),
    case("tune: an empty Parquet file", ["tune", "{root}/empty.parquet", "--target", "y", "--budget", "1"],
         "empty.parquet"),
    case("tune: Latin-1 CSV", ["tune", "{root}/latin1.csv", "--target", "y", "--budget", "1"], "not UTF-8"),
    case("tune: an unknown extension", ["tune", "{root}/data.xlsx", "--target", "y", "--budget", "1"],
         "cannot tell the format"),
    case("tune: a folder as data", ["tune", "{root}/a-folder", "--target", "y", "--budget", "1"], "a-folder"),
    case("data add: a nested Parquet file", ["data", "add", "{root}/nested.parquet", "--target", "y"],
         "lists or structs"),
    case("data add: a truncated .csv.gz", ["data", "add", "{root}/trunc.csv.gz", "--target", "y"], "trunc.csv.gz"),
    case("data add: header only", ["data", "add", "{root}/header-only.csv", "--target", "y"], "has no rows"),
    case("data add: a file without --target", ["data", "add", "{root}/good.csv"], "--target"),
    case("data add: keel:nosuch", ["data", "add", "keel:nosuch"], "no KEEL dataset"),
    case("data add: openml:0", ["data", "add", "openml:0"], "positive"),
    case("data add: a store that is a folder", ["data", "add", *GOOD, "--kb", "{root}/a-folder"], "is a folder"),
    case("data add: a store that is not DuckDB", ["data", "add", *GOOD, "--kb", "{root}/text.duckdb"],
         "cannot open knowledge base"),
    case("data meta-features: a truncated .csv.xz", ["data", "meta-features", "{root}/trunc.csv.xz", "--target",
                                                     "y"], "trunc.csv.xz"),
    case("data meta-features: a missing file", ["data", "meta-features", "{root}/missing.csv", "--target", "y"],
         "missing.csv"),
    case("data fetch: an unknown collection", ["data", "fetch", "nosuch"], "invalid choice"),
    case("data list: an unknown collection", ["data", "list", "nosuch"], "invalid choice"),
    case("data list: an unknown KEEL kind", ["data", "list", "keel", "--kind", "tiny"], "invalid choice"),
    case("suggest: a bz2 file that is not", ["suggest", "{root}/bad.csv.bz2", "--target", "y"], "bad.csv.bz2"),
    case("suggest: a missing file", ["suggest", "{root}/missing.csv", "--target", "y"], "missing.csv"),
    case("suggest: a file without --target", ["suggest", "{root}/good.csv"], "--target"),
    case("suggest: an unknown method", ["suggest", *GOOD, "--method", "magic"], "invalid choice"),
    case("data meta-features: a nested Parquet file", ["data", "meta-features", "{root}/nested.parquet",
                                                       "--target", "y"], "lists or structs"),
    # kb export and import: tracebacks and half-written folders before
    case("kb export: to an existing file", ["kb", "export", "{root}/existing.txt"], "is a file"),
    case("kb export: into a folder of other files", ["kb", "export", "{root}/notes-folder"],
         "not a metabo export"),
    case("kb export: an unknown table", ["kb", "export", "{root}/new-export", "--without", "nosuch"],
         "unknown table"),
    case("kb export: a full disk", ["kb", "export", "{root}/full-export"], "no space left",
         fault=_disk_full_after(4)),
    case("kb export: a full disk over an earlier export", ["kb", "export", "{root}/export-good"], "no space left",
         fault=_disk_full_after(4)),
    case("kb import: a flipped byte", ["kb", "import", "{root}/export-flipped"], "sha-256 differs"),
    case("kb import: a corrupt file of an old export", ["kb", "import", "{root}/export-old-corrupt"],
         "nothing was imported"),
    case("kb import: a truncated file", ["kb", "import", "{root}/export-truncated"], "sha-256 differs"),
    case("kb import: no manifest", ["kb", "import", "{root}/export-no-manifest"], "not a metabo export"),
    case("kb import: a malformed manifest", ["kb", "import", "{root}/export-bad-manifest"], "is corrupt"),
    case("kb import: a manifest's rows not a table", ["kb", "import", "{root}/export-rows-list"], "is corrupt"),
    case("kb import: a newer schema", ["kb", "import", "{root}/export-future"], "schema version 999"),
    case("kb import: a missing table file", ["kb", "import", "{root}/export-missing-file"],
         "sessions.parquet is missing"),
    case("kb import: a file, not a folder", ["kb", "import", "{root}/existing.txt"], "not a metabo export"),
    # kb init and --kb
    case("kb init: a missing folder", ["kb", "init", "--kb", "{root}/no/kb.duckdb"], "no folder"),
    case("kb init PATH: a missing folder", ["kb", "init", "{root}/no/kb.duckdb", "--kb", "{root}/no/kb.duckdb"],
         "no folder"),
    case("kb init: a folder", ["kb", "init", "--kb", "{root}/a-folder"], "is a folder"),
    case("kb init: two stores", ["kb", "init", "{root}/x.duckdb", "--kb", "{root}/y.duckdb"], "names two stores"),
    case("kb init: not a DuckDB file", ["kb", "init", "--kb", "{root}/text.duckdb"], "cannot open knowledge base"),
    case("kb stats: an empty file", ["kb", "stats", "--kb", "{root}/empty.duckdb"], "not a valid DuckDB"),
    case("kb stats: --kb empty", ["kb", "stats", "--kb", ""], "is a folder"),
    # environment variables
    case("env: METABO_HOME a file, kb stats", ["kb", "stats"], "METABO_HOME", env=FILE_ENV),
    case("env: METABO_HOME a file, tune", TUNE, "METABO_HOME", env=FILE_ENV),
    case("env: METABO_HOME a file, data add", ["data", "add", "sklearn:iris"], "METABO_HOME", env=FILE_ENV),
    case("env: METABO_HOME a file, kb init", ["kb", "init"], "METABO_HOME", env=FILE_ENV),
    case("env: METABO_HOME a file, sessions", ["sessions"], "METABO_HOME", env=FILE_ENV),
    case("env: METABO_HOME a file, KEEL list", ["data", "list", "keel"], "cache folder", env=FILE_ENV),
    case("env: METABO_KB a folder", ["kb", "stats"], "is a folder", env={"METABO_KB": "{root}/a-folder"}),
    case("env: METABO_KB not DuckDB", ["kb", "stats"], "cannot open", env={"METABO_KB": "{root}/text.duckdb"}),
    case("env: METABO_KB an empty file", ["tune", *GOOD, "--budget", "1"], "cannot open",
         env={"METABO_KB": "{root}/empty.duckdb"}),
    case("env: METABO_TOKEN empty on a public host", ["serve", "--host", "0.0.0.0", "--kb", "{root}/kb.duckdb"],
         "token", env={"METABO_TOKEN": ""}),
    # every other option and argument
    case("tune: --cv 0", [*TUNE, "--cv", "0"], "cv"),
    case("tune: --cv 1", [*TUNE, "--cv", "1"], "cv"),
    case("tune: --cv -3", [*TUNE, "--cv", "-3"], "cv"),
    case("tune: --cv abc", [*TUNE, "--cv", "abc"], "--cv"),
    case("tune: --metric nosuch", [*TUNE, "--metric", "nosuch"], "argument --metric"),
    case("tune: --algorithms without names", ["tune", *GOOD, "--budget", "1", "--algorithms"], "--algorithms"),
    case("tune: an unknown --select", [*TUNE, "--select", "best"], "invalid choice"),
    case("tune: an unknown --final-rows", [*TUNE, "--final-rows", "some"], "invalid choice"),
    case("tune: an unknown --ensemble", [*TUNE, "--ensemble", "bagging"], "invalid choice"),
    case("tune: an unknown --eo-loss", [*TUNE, "--ensemble", "eo", "--eo-loss", "hinge"], "invalid choice"),
    case("tune: an unknown backend", [*TUNE, "--backend", "spark"], "unknown backend"),
    case("tune: a scheduler for loky", [*TUNE, "--scheduler", "tcp://127.0.0.1:1"], "dask and ray"),
    case("tune: --ensemble with --n-jobs", [*TUNE, "--ensemble", "eo", "--n-jobs", "2"], "one trial at a time"),
    case("tune: --ensemble with --time-budget", ["tune", *GOOD, "--time-budget", "5", "--ensemble", "eo"],
         "--time-budget"),
    case("tune: --ensemble with --reshuffle", [*TUNE, "--ensemble", "eo", "--reshuffle"], "--reshuffle"),
    case("tune: --resume and --session differ", [*TUNE, "--resume", "a", "--session", "b"], "give one"),
    case("tune: --target for a sklearn dataset", ["tune", "sklearn:iris", "--target", "y", "--budget", "1"],
         "only for files"),
    case("tune: sklearn: without a name", ["tune", "sklearn:", "--budget", "1"], "name a dataset"),
    case("tune: an unknown sklearn dataset", ["tune", "sklearn:nope", "--budget", "1"], "unknown scikit-learn"),
    case("tune: openml:abc", ["tune", "openml:abc", "--budget", "1"], "is an integer"),
    case("tune: keel:nosuch", ["tune", "keel:nosuch", "--budget", "1"], "no KEEL dataset"),
    case("tune: an unknown KEEL kind", ["tune", "keel:weird/iris", "--budget", "1"], "KEEL kind"),
    case("tune: an unknown source", ["tune", "foo:bar", "--budget", "1"], "unknown dataset source"),
    case("tune: an all-NaN target", ["tune", "{root}/nan-target.csv", "--target", "y", "--budget", "1"],
         "nan-target"),
    case("tune: no data argument", ["tune", "--budget", "1"], "required"),
    case("kb nearest: a JSON list", ["kb", "nearest", "--meta-features", "[1, 2]"], "non-empty JSON object"),
    case("kb nearest: a JSON text value", ["kb", "nearest", "--meta-features", '{"a": "x"}'], "must be numbers"),
    case("kb nearest: an empty object", ["kb", "nearest", "--meta-features", "{}"], "non-empty JSON object"),
    case("kb nearest: both targets", ["kb", "nearest", "--dataset", "x", "--meta-features", "{}"],
         "not allowed with"),
    case("kb nearest: no target", ["kb", "nearest"], "required"),
    case("kb nearest: an unknown dataset", ["kb", "nearest", "--dataset", "nosuch"], "unknown dataset"),
    case("kb ranks: --near an unknown dataset", ["kb", "ranks", "knn", "--near", "nosuch"], "unknown dataset"),
    case("kb runs: an unknown status", ["kb", "runs", "--status", "great"], "invalid choice"),
    case("kb runs: an unknown format", ["kb", "runs", "--format", "xml"], "invalid choice"),
    case("kb matrix: an unknown algorithm", ["kb", "matrix", "nope"], "unknown algorithm"),
    case("kb portfolio: an unknown algorithm", ["kb", "portfolio", "nope"], "unknown algorithm"),
    case("kb similar: an unknown algorithm", ["kb", "similar", "nope"], "unknown algorithm"),
    case("kb similar: --task unknown", ["kb", "similar", "knn", "--task", "nosuch"], "unknown dataset"),
    case("kb join-qualities: an unknown source", ["kb", "join-qualities", "--sources", "nosuch"], "invalid choice"),
    case("kb join-qualities: files not fetched", ["kb", "join-qualities", "--no-fetch", "--sources", "lcdb",
                                                  "--lcdb-cache", "{root}/nowhere"], "is missing"),
    case("kb: no subcommand", ["kb"], "required", env={}),
    case("kb: an unknown subcommand", ["kb", "frobnicate"], "invalid choice"),
    case("transfer: an unknown algorithm", ["transfer", "nope"], "unknown algorithm"),
    case("space validate: not JSON", ["space", "validate", "knn", "{n_neighbors: 3}"], "not valid JSON"),
    case("space validate: a JSON list", ["space", "validate", "knn", "[1]"], "JSON object"),
    case("space validate: an unknown hyperparameter", ["space", "validate", "knn", '{"nosuch": 1}'], "nosuch"),
    case("space validate: NaN", ["space", "validate", "knn", '{"n_neighbors": NaN}'], "n_neighbors"),
    case("space sample: an unknown algorithm", ["space", "sample", "--algorithms", "nope"], "unknown algorithm"),
    case("space show: an unknown algorithm", ["space", "show", "nope"], "unknown algorithm"),
    case("space export: into a missing folder", ["space", "export", "{root}/no/space.json"], "no/space.json"),
    case("space export: onto a folder", ["space", "export", "{root}/a-folder"], "a-folder"),
    case("ingest openml: no task or flow", ["ingest", "openml"], "--task or --flow"),
    case("ingest pmf: files not fetched", ["ingest", "pmf", "--no-fetch", "--cache", "{root}/nowhere"],
         "is missing"),
    case("ingest: an unknown source", ["ingest", "nosuch"], "invalid choice"),
    case("serve: a public host without a token", ["serve", "--host", "0.0.0.0"], "token"),
    case("sessions: --limit abc", ["sessions", "--limit", "abc"], "argument --limit"),
    case("no command", [], "required", env={}),
    case("an unknown command", ["frobnicate"], "invalid choice"),
]

TABLE = [*NUMBER_CASES, *KB_TYPO_CASES, *MORE_CASES]


@pytest.mark.parametrize("argv, words, env, fault", TABLE)
def test_the_table_of_bad_inputs_and_faults(bad_world, capsys, monkeypatch, argv, words, env, fault):
    root, kb, before, digest = bad_world
    monkeypatch.setenv("METABO_HOME", str(root / "home"))
    monkeypatch.setenv("HOME", str(root / "home"))  # nothing reaches the real ~/.metabo either
    monkeypatch.delenv("METABO_KB", raising=False)
    for name, value in (env or {}).items():
        monkeypatch.setenv(name, value.replace("{root}", str(root)))
    if fault is not None:
        fault(monkeypatch)
    # a command's clock starts with it, as in a new process; and no watchdog thread that
    # would end this process once a time budget measured from its start is spent
    monkeypatch.setattr("metabo.cli.tune_cmds.process_start", time.monotonic)
    monkeypatch.setattr("metabo.cli.watchdog.install", lambda budget_end=None: Watchdog(None))
    argv = [a.replace("{root}", str(root)) for a in argv]
    if "--kb" not in argv and env is None:
        argv += ["--kb", str(kb)]
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as e:  # argparse
        code = e.code
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in out + err and "Current transaction is aborted" not in err, err
    assert code not in (0, None), (out, err)
    assert len(lines) == 1, err
    assert "error" in lines[0] and words.lower() in lines[0].lower(), lines[0]
    assert _sha256(kb) == digest or snapshot_file(kb) == before  # every table as it was
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*")) == files  # no file made, none removed


def test_the_table_holds_at_least_250_cases():
    """The table above and the Python API's cases: at least 250, each with its own id."""
    ids = [p.id for p in TABLE] + [c[0] for c in CLI_CASES] + API_CASE_NAMES
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    assert len(ids) >= 250, len(ids)
    print(f"{len(ids)} bad inputs and faults: {len(TABLE)} in the table, {len(CLI_CASES)} earlier command-line "
          f"cases, {len(API_CASE_NAMES)} of the Python API")


def _api_cases(root: Path):
    """name -> (prepare(kb) -> what the bad call needs, the bad call, words of its message);
    what ``prepare`` stores (an optimizer's session) is in the snapshot taken before the call."""
    from metabo.data.files import load_file
    from metabo.ensembles.model import EnsembleModel
    from metabo.optimizer import Optimizer, tune
    from metabo.space.algorithms import default_cash_space
    from metabo.strategies import make_strategy

    def good():
        return pd.read_csv(root / "good.csv")

    def asked(kb):
        dataset_id = kb.query("SELECT dataset_id FROM datasets")["dataset_id"][0]
        opt = Optimizer(default_cash_space(["knn"]), make_strategy("random", seed=0), kb=kb, dataset_id=dataset_id,
                        seed=0)
        return opt, opt.ask()

    def run(algorithm, value):
        return lambda kb: kb.add_runs([{
            "dataset_id": kb.query("SELECT dataset_id FROM datasets")["dataset_id"][0], "algorithm": algorithm,
            "params": {"n_neighbors": 3} if algorithm == "knn" else {}, "metric": "error_rate", "value": value,
            "source": "s"}])

    def same(kb):
        return kb

    return {
        "tune: a DataFrame without target=": (same, lambda kb: tune(good(), kb=kb, budget=1), "needs target="),
        "tune: a DataFrame whose target is missing": (same, lambda kb: tune(good(), target="label", kb=kb, budget=1),
                                                      "label"),
        "tune: an unknown metric": (same, lambda kb: tune(good(), target="y", kb=kb, budget=1, metric="nosuch"),
                                    "unknown metric 'nosuch'"),
        "tune: a budget of no trials": (same, lambda kb: tune(good(), target="y", kb=kb, budget=0), "budget"),
        "tune: an unknown strategy": (same, lambda kb: tune(good(), target="y", kb=kb, budget=1, strategy="magic"),
                                      "magic"),
        "tell: NaN with status ok": (asked, lambda ot: ot[0].tell(ot[1], math.nan), "finite value"),
        "tell: an unknown status": (asked, lambda ot: ot[0].tell(ot[1], 0.1, status="great"), "status"),
        "tell: a trial never asked": (asked, lambda ot: ot[0].tell(7, 0.1), "no trial 7"),
        "add_runs: an unknown algorithm": (same, run("nope", 0.1), "nope"),
        "add_runs: a NaN value of a successful run": (same, run("knn", float("nan")), "value"),
        "load_file: a malformed ARFF": (same, lambda kb: load_file(root / "bad.arff", "y"), "bad.arff"),
        "EnsembleModel.load: not a model": (same, lambda kb: EnsembleModel.load(root / "not-a-model.joblib"),
                                            "not-a-model.joblib"),
        "KnowledgeBase: a corrupt file": (same, lambda kb: KnowledgeBase(root / "corrupt.duckdb"), "corrupt"),
    }


API_CASE_NAMES = list(_api_cases(Path(".")))


@pytest.mark.parametrize("case", API_CASE_NAMES)
def test_the_python_api_raises_a_metabo_error_and_stores_nothing(world, tmp_path, case):
    root, kb_path = world
    copy = tmp_path / "kb.duckdb"
    shutil.copyfile(kb_path, copy)
    prepare, call, words = _api_cases(root)[case]
    with KnowledgeBase(copy) as kb:
        needs = prepare(kb)
        before = snapshot(kb)
        with pytest.raises(MetaboError) as e:
            call(needs)
        after = snapshot(kb)
    message = str(e.value)
    assert words.lower() in message.lower() and "\n" not in message.strip(), message
    assert after == before


def test_the_table_is_what_the_closing_note_lists():
    """Each case has a distinct name (the closing note's table is generated from these)."""
    names = [c[0] for c in CLI_CASES] + API_CASE_NAMES
    assert len(names) == len(set(names)) and len(names) >= 45
    json.dumps(names)
