"""Every public function and method of the package API says what it does: a docstring on
each module-level function and each method (properties included, dunders not) of each
public class whose name does not start with ``_``, in ``metabo/`` except ``metabo/testing/``.
Docstrings keep no figures or issue numbers: those live in ``reports/``."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import metabo

PACKAGE = Path(metabo.__file__).resolve().parent


def _modules() -> Iterator[Path]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] != "testing":
            yield path


def _undocumented(node: ast.AST, prefix: str) -> Iterator[str]:
    """The public functions under ``node`` without a docstring (not inside functions)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if not child.name.startswith("_") and ast.get_docstring(child) is None:
                yield f"{prefix}{child.name} (line {child.lineno})"
        elif isinstance(child, ast.ClassDef):
            if not child.name.startswith("_"):
                yield from _undocumented(child, f"{prefix}{child.name}.")
        elif isinstance(child, (ast.If, ast.Try, ast.With)):
            yield from _undocumented(child, prefix)


def test_every_public_function_and_method_has_a_docstring() -> None:
    missing = [f"{path.relative_to(PACKAGE.parent)}: {name}"
               for path in _modules()
               for name in _undocumented(ast.parse(path.read_text(encoding="utf-8")), "")]
    assert not missing, f"{len(missing)} public functions without a docstring:\n" + "\n".join(missing)


def test_no_issue_number_in_the_package() -> None:
    pattern = re.compile(r"\(issue|issue \d+|\d(\.\d+)?x faster")
    hits = [f"{path.relative_to(PACKAGE.parent)}:{i}: {line.strip()}"
            for path in _modules()
            for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if pattern.search(line)]
    assert not hits, "issue numbers or speed-ups in the package (they belong in reports/):\n" + "\n".join(hits)
