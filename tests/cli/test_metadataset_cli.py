"""``metabo ingest <meta-dataset>`` and ``metabo data list metadatasets`` on the cut fixtures."""

from __future__ import annotations

from pathlib import Path

from metabo.cli.main import main
from metabo.kb import KnowledgeBase
from metabo.testing.store import snapshot_file

FIXTURES = Path(__file__).parents[1] / "fixtures" / "metadatasets"


def test_list_names_every_source(capsys) -> None:
    assert main(["data", "list", "metadatasets"]) == 0
    out = capsys.readouterr().out
    for name in ("pmf", "tensor-oboe", "lcdb", "autosklearn"):
        assert name in out
    assert "deeppipe-api==0.1.1" in out


def test_ingest_then_resume_then_nothing_new(capsys, tmp_path: Path) -> None:
    kb = str(tmp_path / "kb.duckdb")
    assert main(["kb", "init", kb]) == 0  # --kb names an existing store
    base = ["ingest", "pmf", "--kb", kb, "--cache", str(FIXTURES / "deeppipe"), "--no-fetch"]
    assert main([*base, "--max-chunks", "0"]) == 0
    assert main(base) == 0
    out = capsys.readouterr().out
    assert "3 datasets" in out and "10 configurations" in out
    with KnowledgeBase(kb, read_only=True) as store:
        n = int(store.query("SELECT count(*) AS n FROM runs")["n"][0])
    assert f"{n:,} new" in out
    assert main(base) == 0
    assert "0 new" in capsys.readouterr().out
    assert main(["ingest", "lcdb", "--kb", kb, "--cache", str(FIXTURES / "lcdb"), "--no-fetch"]) == 0
    out = capsys.readouterr().out
    assert "lcdb:" in out and "already stored from another source" in out


def test_export_grid_writes_the_sources_points_for_a_build(capsys, tmp_path: Path) -> None:
    from metabo.ingest.build import read_grid
    from metabo.metadatasets.oboe import OBOE

    out = tmp_path / "grid.json"
    kb = tmp_path / "kb.duckdb"
    assert main(["kb", "init", str(kb)]) == 0
    before = snapshot_file(kb)
    assert main(["ingest", "oboe", "--kb", str(kb), "--cache", str(FIXTURES / "oboe"), "--no-fetch",
                 "--export-grid", str(out)]) == 0
    assert "--configs-from" in capsys.readouterr().out
    grid = read_grid(out)  # every exported point is valid in its algorithm's space
    configs = OBOE(FIXTURES / "oboe").configurations()
    assert sum(len(v) for v in grid.values()) == len({(a, p) for a, p in zip(configs["algorithm"], configs["params"])})
    assert set(grid) == set(configs["algorithm"])
    assert snapshot_file(kb) == before  # nothing ingested
