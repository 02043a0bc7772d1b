"""Small modules with one job each (issue 34): none of ``metabo/`` over 600 lines, and the
installed package holds no benchmark (``benchmarks/`` stands beside ``scripts/``)."""

from __future__ import annotations

from pathlib import Path

import metabo

PACKAGE = Path(metabo.__file__).resolve().parent
MAX_LINES = 600


def test_no_module_is_over_600_lines() -> None:
    sizes = {str(p.relative_to(PACKAGE.parent)): len(p.read_text(encoding="utf-8").splitlines())
             for p in PACKAGE.rglob("*.py")}
    over = {p: n for p, n in sizes.items() if n > MAX_LINES}
    assert not over, f"modules over {MAX_LINES} lines: {over}"


def test_the_package_holds_no_benchmark_module() -> None:
    assert not (PACKAGE / "benchmarks").exists()
