"""No package imports another's private names (issue 34, item 4): where packages meet,
the seam is public (``metabo.evaluation.evaluate.class_probabilities``, say)."""

from __future__ import annotations

import ast
from pathlib import Path

import metabo

PACKAGE = Path(metabo.__file__).resolve().parent


def private_imports_across_packages() -> list[str]:
    """``path:line name`` of every ``from metabo.X... import _name`` (or of a module
    ``_name`` of ``metabo.X``) in a module outside package ``X``."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("metabo."):
                parts = node.module.split(".")
                if parts[1] == source:
                    continue
                names = [*(p for p in parts[2:] if p.startswith("_")), *(a.name for a in node.names)]
                found += [f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {n}" for n in names
                          if n.startswith("_") and not n.startswith("__")]
    return found


def test_no_private_name_is_imported_from_another_package() -> None:
    found = private_imports_across_packages()
    assert not found, "private names imported across packages:\n" + "\n".join(found)
