"""The README's Python examples name things that exist: every ``from metabo... import``
line of its python blocks imports, and every ``metabo <command>`` of its bash blocks is a
command of the CLI."""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README.read_text(), flags=re.S)


IMPORTS = sorted({(m, n.strip()) for block in _blocks("python")
                  for m, names in re.findall(r"^from (metabo[\w.]*) import (.+)$", block, flags=re.M)
                  for n in names.split(",")})


@pytest.mark.parametrize(("module", "name"), IMPORTS)
def test_readme_imports_exist(module, name):
    found = hasattr(importlib.import_module(module), name)
    if not found:  # a submodule: ``from metabo.kb import queries``
        found = importlib.util.find_spec(f"{module}.{name}") is not None
    assert found, f"README: from {module} import {name}"


def test_readme_commands_exist():
    from metabo.cli.main import build_parser

    commands = set(build_parser()._subparsers._group_actions[0].choices)
    used = {m for block in _blocks("bash") for m in re.findall(r"(?:^|&& |\| )metabo ([a-z-]+)", block, flags=re.M)}
    assert IMPORTS and used
    assert used <= commands, f"README uses unknown commands {sorted(used - commands)}"
