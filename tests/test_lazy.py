"""Lazy package attributes (metabo._lazy): looked up on first use, then kept."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from metabo._lazy import lazy_getattr


def test_a_lazy_name_is_the_modules_object_and_stays_in_the_package():
    package = importlib.import_module("metabo.optimizer")
    getter = lazy_getattr("metabo.optimizer", {"quadratic_problem": "metabo.testing.problems"})
    from metabo.testing.problems import quadratic_problem

    try:
        assert getter("quadratic_problem") is quadratic_problem
        assert package.__dict__["quadratic_problem"] is quadratic_problem
    finally:
        delattr(package, "quadratic_problem")
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        getter("nothing")


def test_importing_metabo_imports_none_of_its_heavy_packages():
    code = ("import sys, metabo; heavy = [m for m in ('metabo.tuning', 'metabo.strategies', 'sklearn') "
            "if m in sys.modules]; print(heavy); assert metabo.tune.__module__ == 'metabo.tuning.tune'")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
