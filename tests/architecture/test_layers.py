"""The packages of ``metabo`` form layers; none imports one above it (issue 34, item 1).

The order, lowest first; a package may import packages of its own level or below:

1. ``exceptions``, ``_typing``, ``paths``, ``_lazy`` (modules)
2. ``data``
3. ``space``
4. ``evaluation``
5. ``kb``
6. ``ingest``, ``metadatasets``, ``surrogates``, ``acquisition``
7. ``optimizer``
8. ``strategies``
9. ``ensembles``
10. ``tuning``
11. ``integrations``, ``service``, ``cli``

``testing`` (helpers for the tests) is outside the order: it may import anything, and
nothing in the order may import it; the benchmarks are not in the package at all
(``benchmarks/`` beside ``scripts/``). Every ``import`` / ``from ... import`` statement
of every module under ``metabo/`` counts, inside functions too; only those under
``if TYPE_CHECKING:`` are allowed to point upwards (annotations, no import at run
time). A package missing from the order is reported as well, so a new one gets a place.

Names kept for existing imports across the order (``metabo.optimizer.tune``,
``metabo.ensembles.tune_ensemble``) are looked up by name when first used
(``importlib``), so no statement points upwards.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import metabo

PACKAGE = Path(metabo.__file__).resolve().parent

#: lowest first; a package may import its own level and the levels below
LEVELS: list[set[str]] = [
    {"exceptions", "_typing", "paths", "_lazy"},
    {"data"},
    {"space"},
    {"evaluation"},
    {"kb"},
    {"ingest", "metadatasets", "surrogates", "acquisition"},
    {"optimizer"},
    {"strategies"},
    {"ensembles"},
    {"tuning"},
    {"integrations", "service", "cli"},
]
#: may import anything; nothing in LEVELS may import them
OUTSIDE = {"testing"}
RANK = {name: level for level, names in enumerate(LEVELS) for name in names}


class Violation(NamedTuple):
    source: str
    target: str
    where: str  # metabo/<path>:<line>
    imported: str

    def __str__(self) -> str:
        return (f"{self.where}: {self.source} (level {_level(self.source)}) imports {self.imported} "
                f"({self.target}, level {_level(self.target)})")


def _level(package: str) -> str:
    return str(RANK[package] + 1) if package in RANK else "none"


def _is_type_checking(test: ast.expr) -> bool:
    return ((isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
            or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _imports(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements under ``node``, without those in the body of ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for other in child.orelse:
                yield from _imports_of(other)
            continue
        yield from _imports_of(child)


def _imports_of(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
    else:
        yield from _imports(node)


def _targets(statement: ast.Import | ast.ImportFrom, package: list[str]) -> list[str]:
    """The absolute dotted names ``statement`` imports; ``package``: the dotted parts of
    the package the module is in (for relative imports)."""
    if isinstance(statement, ast.Import):
        return [alias.name for alias in statement.names]
    if statement.level:
        base = package[:len(package) - statement.level + 1]
        module = ".".join(base + ([statement.module] if statement.module else []))
    else:
        module = statement.module or ""
    if module == "metabo" or not statement.module:  # from metabo import x / from . import x
        return [f"{module}.{alias.name}" for alias in statement.names]
    return [module]


def _subpackage(name: str) -> str | None:
    """``X`` of ``metabo.X...`` when it is a module or package of metabo (not ``metabo.__version__``)."""
    parts = name.split(".")
    if len(parts) < 2 or parts[0] != "metabo":
        return None
    if (PACKAGE / parts[1]).is_dir() or (PACKAGE / f"{parts[1]}.py").is_file():
        return parts[1]
    return None


def imports_between_packages() -> list[Violation]:
    """Every import from one package of ``metabo`` to another, in file order (a
    :class:`Violation` record whether or not the order allows it)."""
    found: list[Violation] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        source = relative.parts[0].removesuffix(".py")
        if relative == Path("__init__.py"):
            continue
        package = ["metabo", *relative.parts[:-1]]  # the package the module is in
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for statement in _imports(tree):
            for name in _targets(statement, package):
                target = _subpackage(name)
                if target is not None and target != source:
                    found.append(Violation(source, target, f"metabo/{relative.as_posix()}:{statement.lineno}", name))
    return found


def violations() -> list[Violation]:
    """Every import of a package above (or outside) the importing package's level."""
    return [v for v in imports_between_packages() if v.source not in OUTSIDE
            and (v.source not in RANK or v.target not in RANK or RANK[v.target] > RANK[v.source])]


def _report(found: list[Violation]) -> str:
    return "\n".join(str(v) for v in found)


def test_every_package_imports_nothing_above_it() -> None:
    found = violations()
    assert not found, "imports from a package to one above it (or outside the order):\n" + _report(found)


def test_no_circle_between_packages() -> None:
    """Packages of one level do not import each other both ways (the order alone allows it)."""
    edges = {(v.source, v.target) for v in imports_between_packages()}
    both = sorted((a, b) for a, b in edges if a < b and (b, a) in edges)
    assert not both, f"packages that import each other: {both}"


def test_the_scan_sees_imports() -> None:
    """The scan itself: relative, ``from metabo import``, function-level and TYPE_CHECKING imports."""
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "from metabo import kb\n"
        "from ..evaluation import evaluate\n"
        "if TYPE_CHECKING:\n"
        "    from metabo.cli import main\n"
        "else:\n"
        "    import metabo.service\n"
        "def f():\n"
        "    from metabo.strategies.base import Strategy\n")
    names = [n for s in _imports(tree) for n in _targets(s, ["metabo", "space"])]
    assert names == ["typing", "metabo.kb", "metabo.evaluation", "metabo.service", "metabo.strategies.base"]
    assert [_subpackage(n) for n in names] == [None, "kb", "evaluation", "service", "strategies"]
    assert _subpackage("metabo.__version__") is None
