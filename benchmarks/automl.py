"""From a table to a fitted model under one wall-clock budget: ``metabo tune`` against
FLAML and Optuna.

Protocol (issue 17): for each dataset (a task of the shipped knowledge base) and seed, a
seeded stratified 75/25 outer split (:func:`outer_split`); every tool gets the 75% as a
CSV (target column ``y``) and ``T`` seconds of wall-clock time, returns a model, and is
scored by the test error rate of that model's predictions on the 25%. Each tool runs as
its own process: its ``seconds`` are the whole command's (interpreter start, imports,
search and final fit), one thread each (``OMP_NUM_THREADS=1`` and the tools'
``n_jobs=1``), so a crash or an overrun stays inside the run and is timed. A run
overruns when ``seconds > (1 + OVERRUN) T``.

Held out (:func:`held_out_kb`): metabo's tools run on a copy of the knowledge base from
which the dataset, and every dataset of the same content (``datasets.fingerprint``), is
deleted with all it owns (runs and their predictions, meta-features, sessions, cached
surrogates, source ids); otherwise the 75% file, whose content differs, would transfer
from its own full-data runs.

Tools (:data:`TOOLS`):

- ``metabo``: ``metabo tune TRAIN --target y --time-budget T --save-model M`` with the
  default strategy, then ``metabo predict M TEST`` (timed apart, ``predict_seconds``: the
  budget is the tune command's).
- ``metabo-gp``: the same with ``--strategy gp`` (cold GP-BO).
- ``metabo-gp-single``: ``--strategy gp --ensemble none``: cold GP-BO and the best
  configuration alone, the tool without the knowledge base in either the search or the model.
- ``metabo-single``: the default with ``--ensemble none`` (the best configuration alone,
  never the post-hoc ensemble).
- ``metabo-no-opening``: the default with ``--opening none`` (no opening LightGBM: the
  strategy's first pick is the first trial).
- ``metabo-baseline``: the default run from another checkout of the repository (``baseline``,
  first on ``PYTHONPATH``): a change measured against the code before it in the same run,
  on the same cells and clock.
- ``flaml``: ``AutoML.fit(time_budget=T, starting_points="data", n_jobs=1)``, FLAML's
  zero-shot (meta-learned) start, in its own virtual environment: its pins differ from
  this project's (``scripts/automl_runners/flaml_runner.py``).
- ``autogluon``: ``TabularPredictor(eval_metric="accuracy").fit(time_limit=T, num_cpus=1)``
  with AutoGluon's default preset (``medium_quality``), in its own virtual environment
  (``scripts/automl_runners/autogluon_runner.py``); ``autogluon-best``: the same with
  ``presets="best_quality"`` (bagging and stacking).
- ``optuna``: Optuna's TPE, define-by-run over metabo's CASH space
  (:class:`benchmarks.peers.OptunaSuggester`), each trial evaluated as metabo
  evaluates one (:func:`optuna_tpe`), then the best refitted on the whole 75% inside the
  budget (``scripts/automl_runners/optuna_runner.py``).

Summary (:func:`summarize`), per budget over the (dataset, seed) cells every tool
finished: mean test error, average rank (ties share the mean of their ranks),
wins/ties/losses of ``metabo`` against each other tool with the Wilcoxon signed-rank p,
mean time to the first model (and how many runs had one within 10% of the budget), peak
memory (:func:`_run`), overrun rate and failures; the mean balanced error rate of the
same cells; Friedman's test over the tools and the Nemenyi critical difference of their
average ranks (:func:`friedman_nemenyi`).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from metabo.exceptions import InputDataError

if TYPE_CHECKING:
    from metabo.data.dataset import Dataset
    from metabo.ensembles.model import EnsembleModel
    from metabo.optimizer.budget import TimeBudget

logger = logging.getLogger(__name__)

TOOLS = ("metabo", "metabo-gp", "metabo-gp-single", "metabo-single", "metabo-no-opening", "metabo-baseline", "flaml",
         "autogluon", "autogluon-best", "optuna")
#: the tools that run ``metabo tune``
METABO_TOOLS = ("metabo", "metabo-gp", "metabo-gp-single", "metabo-single", "metabo-no-opening", "metabo-baseline")
#: The tools that run in a virtual environment of their own: what pip installs there (FLAML's
#: zero-shot start imports ``packaging``, which flaml[automl] does not require) and the
#: import that says it is installed.
PEERS: dict[str, tuple[str, str]] = {"flaml": ("flaml[automl] packaging", "flaml.automl, packaging"),
                                     "autogluon": ("autogluon.tabular[all]", "autogluon.tabular")}
#: Each peer tool: the virtual environment it runs in (a :data:`PEERS` key), its runner
#: script and the runner's extra arguments.
PEER_TOOLS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "flaml": ("flaml", "flaml_runner.py", ()),
    "autogluon": ("autogluon", "autogluon_runner.py", ("medium_quality",)),
    "autogluon-best": ("autogluon", "autogluon_runner.py", ("best_quality",)),
}
#: The tool every other is compared with, head to head.
REFERENCE = "metabo"
#: A run overruns its budget T when it takes more than (1 + OVERRUN) T seconds.
OVERRUN = 0.05
#: The target column of the files handed to the tools.
TARGET = "y"
RUNNERS = Path(__file__).resolve().parents[1] / "scripts" / "automl_runners"
#: Tables whose rows belong to one dataset, by the column naming it.
_DATASET_COLUMNS = {"meta_features": "dataset_id", "sessions": "dataset_id", "surrogate_bank": "task",
                    "datasets": "dataset_id"}


def one_thread_env(first: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """This process's environment with every BLAS / OpenMP pool limited to one thread,
    and the folder of the ``metabo`` package this process runs first on ``PYTHONPATH``, so
    that a tool run (``python -m metabo.cli.main``, started in its own work folder) runs the
    same code as the benchmark, a frozen copy say, whatever is installed or edited elsewhere.
    The folder of this ``benchmarks`` package (the repository's root: not installed) comes
    next, for the runners that import it (``scripts/automl_runners/optuna_runner.py``).
    ``first``: a checkout whose ``metabo`` comes before both (``metabo-baseline``)."""
    import metabo

    env = dict(os.environ)
    for key in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
                "NUMEXPR_NUM_THREADS"):
        env[key] = "1"
    roots = list(dict.fromkeys(str(Path(f).resolve().parents[1]) for f in (metabo.__file__, __file__)))
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p not in roots]
    env["PYTHONPATH"] = os.pathsep.join([*([os.path.abspath(first)] if first is not None else []), *roots, *rest])
    return env


# ----------------------------------------------------------------- data
def held_out_kb(source: str | os.PathLike[str], dest: str | os.PathLike[str], task: str) -> list[str]:
    """Copy the knowledge base ``source`` to ``dest`` without ``task`` and the tasks of the
    same content (fingerprint), and without everything they own: their runs and those
    runs' predictions, meta-features, sessions, cached surrogates and source ids. Returns
    the tasks removed (sorted); every other row is kept."""
    from metabo.kb import KnowledgeBase
    from metabo.kb.datasets import same_content_dataset_ids

    with KnowledgeBase(source, read_only=True) as kb:
        kb.get_dataset(task)  # UnknownDatasetError naming the fix
    shutil.copyfile(source, dest)
    with KnowledgeBase(dest) as kb:
        same = same_content_dataset_ids(kb, task)
        drop = sorted({task, *same})
        tables = set(kb.query("SELECT table_name FROM information_schema.tables")["table_name"])
        ids = "(SELECT unnest(?::VARCHAR[]))"
        with kb.transaction() as tx:
            tx.execute(f"DELETE FROM predictions WHERE run_id IN (SELECT run_id FROM runs WHERE dataset_id IN {ids})",
                       [drop])
            tx.execute(f"DELETE FROM runs WHERE dataset_id IN {ids}", [drop])
            if "source_ids" in tables:
                tx.execute(f"DELETE FROM source_ids WHERE kind = 'dataset' AND local_id IN {ids}", [drop])
            for table, column in _DATASET_COLUMNS.items():
                if table in tables:
                    tx.execute(f"DELETE FROM {table} WHERE {column} IN {ids}", [drop])
    return drop


def outer_split(y: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Stratified 75/25 row indices (sorted), seeded; unstratified if a class has one row."""
    from sklearn.model_selection import train_test_split

    rows = np.arange(len(y))
    counts = pd.Series(y).value_counts()
    strat = y if counts.min() >= 2 else None
    return tuple(np.sort(p) for p in train_test_split(rows, test_size=0.25, random_state=seed, stratify=strat))


def write_cell(dataset: Dataset, seed: int, folder: Path) -> np.ndarray:
    """Write ``train.csv`` (the 75%, with the target as :data:`TARGET`) and ``test.csv``
    (the 25%, without it) of ``dataset``'s outer split under ``seed`` to ``folder``;
    return the test labels (as text).

    A nominal column whose categories are all numbers (codes: InstEval's students) is
    written with each value prefixed by ``c``, so that every tool reading the file takes it
    as nominal, as the dataset says it is, rather than as a number. A feature named as the
    target column (diamonds' ``y``, a width in mm) is written as ``y_``."""
    y = dataset.y.astype(str).to_numpy()
    train, test = outer_split(y, seed)
    frame = dataset.X.copy()
    if TARGET in frame.columns:
        renamed = TARGET + "_"
        while renamed in frame.columns:
            renamed += "_"
        frame = frame.rename(columns={TARGET: renamed})
    for column in frame.columns:
        values = frame[column]
        if isinstance(values.dtype, pd.CategoricalDtype) and len(values.cat.categories) and \
                pd.to_numeric(pd.Series(values.cat.categories.astype(str)), errors="coerce").notna().all():
            frame[column] = values.cat.rename_categories([f"c{c}" for c in values.cat.categories])
    frame[TARGET] = y
    folder.mkdir(parents=True, exist_ok=True)
    frame.iloc[train].to_csv(folder / "train.csv", index=False)
    frame.iloc[test].drop(columns=TARGET).to_csv(folder / "test.csv", index=False)
    return y[test]


# ----------------------------------------------------------------- one tool run
def _run(cmd: Sequence[str], *, timeout: float, cwd: Path, first: str | os.PathLike[str] | None = None
         ) -> tuple[float, int, str, float | None]:
    """(seconds, return code, stdout + the tail of stderr, peak resident megabytes) of ``cmd``
    on one thread, in the folder ``cwd`` (``python -m`` puts it first on the path: never
    the folder the benchmark was started from). It runs under :data:`PEAK_MEMORY` (the
    largest process of its tree that was waited for) in a process group of its own; a
    command still running after ``timeout`` seconds is killed with its whole group (code
    -9, no peak). ``first``: see :func:`one_thread_env`."""
    import signal

    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", PEAK_MEMORY, *cmd], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=one_thread_env(first), cwd=cwd,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return time.monotonic() - start, -9, f"killed after {timeout:.0f} s", None
    seconds = time.monotonic() - start
    peak = None
    lines = err.rstrip().splitlines()
    if lines and lines[-1].startswith(PEAK_PREFIX):
        peak = float(lines[-1][len(PEAK_PREFIX):])
        err = "\n".join(lines[:-1])
    # all of stdout: metabo's session line comes before an ensemble's member list, which can
    # run to many kilobytes (a tail of stdout lost the trial count of 3 runs in automl-v15)
    return seconds, proc.returncode, out + err[-2000:], peak


#: how :data:`PEAK_MEMORY` reports
PEAK_PREFIX = "peak-memory-mb: "
#: ``python -c PEAK_MEMORY CMD [ARG ...]``: run the command (this process's standard streams,
#: its exit code), then write the largest resident set of any process of its tree that was
#: waited for (``getrusage(RUSAGE_CHILDREN).ru_maxrss``, kilobytes on Linux) as the last line
#: of standard error. Inline, so that it runs from an installed package as from the repository.
PEAK_MEMORY = (
    "import resource, subprocess, sys\n"
    "code = subprocess.call(sys.argv[1:])\n"
    "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
    f"print(f'{PEAK_PREFIX}{{peak:.1f}}', file=sys.stderr, flush=True)\n"
    "sys.exit(code)\n"
)


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def parse_metabo_log(log: str) -> dict[str, Any]:
    """Trials, strategy, seconds to the first model and the model's members from ``metabo
    tune``'s output (``session S: N trials on D (STRATEGY, seed K)``, ``...; first model
    after X s``, ``model: the ensemble of N members ...`` or ``model: the selection ...``),
    wherever they stand on a line (after a progress bar's carriage returns or cursor moves)."""
    out: dict[str, Any] = {"trials": None, "strategy": None, "first_model": None, "members": None}
    for line in log.replace("\r", "\n").splitlines():
        if m := re.search(r"model: the ensemble of (\d+) members", line):
            out["members"] = int(m.group(1))
        elif "model: the selection " in line:
            out["members"] = 1
        elif m := re.search(r"session \S+: (\d+) trials on \S+ \(([^,()]+)", line):
            out["trials"], out["strategy"] = int(m.group(1)), m.group(2)
        elif m := re.search(r"first model after ([0-9.]+) s", line):
            out["first_model"] = float(m.group(1))
    return out


def _json_line(log: str) -> dict[str, Any]:
    """The last line of ``log`` that is a JSON object (a runner's report), or {}."""
    for line in reversed(log.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    return {}


def run_tool(tool: str, train: Path, test: Path, work: Path, *, budget: float, seed: int, kb: Path | None,
             peer_python: Mapping[str, str] | None = None, baseline: str | os.PathLike[str] | None = None
             ) -> dict[str, Any]:
    """Run ``tool`` on ``train`` (target column :data:`TARGET`) for ``budget`` seconds,
    its predictions for ``test`` written to ``work/pred.csv``. Returns ``seconds`` (the
    whole tuning command), ``code`` (0 when it succeeded), ``trials``,
    ``first_model`` (seconds, where the tool reports it), ``predict_seconds``,
    ``version`` and the log's tail when it failed. ``kb`` is the held-out knowledge base
    of the metabo tools, which write their session to it; ``peer_python``: the python of
    each :data:`PEERS` tool's virtual environment; ``baseline``: the checkout ``metabo-baseline``
    runs."""
    # absolute paths: each tool runs in ``work`` (abspath, not resolve: a venv's python is a symlink)
    train, test, work = (Path(os.path.abspath(p)) for p in (train, test, work))
    kb = None if kb is None else Path(os.path.abspath(kb))
    pred = work / "pred.csv"
    hard = 3 * budget + 60  # a hung tool is killed; its run counts as failed and overrun
    info: dict[str, Any] = {"trials": None, "first_model": None, "predict_seconds": None, "version": None}
    if tool in METABO_TOOLS:
        if kb is None:
            raise InputDataError(f"{tool} needs the held-out knowledge base (kb=)")
        if tool == "metabo-baseline" and baseline is None:
            raise InputDataError("metabo-baseline needs the checkout it runs (baseline=, --baseline-src)")
        first = baseline if tool == "metabo-baseline" else None
        model = work / "model.skops"
        cmd = [sys.executable, "-m", "metabo.cli.main", "tune", str(train), "--target", TARGET, "--time-budget",
               str(budget), "--save-model", str(model), "--kb", str(kb), "--seed", str(seed)]
        if tool in ("metabo-gp", "metabo-gp-single"):
            cmd += ["--strategy", "gp"]
        if tool in ("metabo-single", "metabo-gp-single"):
            cmd += ["--ensemble", "none"]
        if tool == "metabo-no-opening":
            cmd += ["--opening", "none"]
        seconds, code, log, peak = _run(cmd, timeout=hard, cwd=work, first=first)
        info.update(parse_metabo_log(log), version=_version("metabo"))
        if code == 0:
            info["predict_seconds"], pcode, plog, _ = _run(
                [sys.executable, "-m", "metabo.cli.main", "predict", str(model), str(test), "--out", str(pred)],
                timeout=600, cwd=work, first=first)
            if pcode != 0:
                code, log = pcode, plog
    elif tool in (*PEER_TOOLS, "optuna"):
        cmd = peer_command(tool, train, test, pred, budget=budget, seed=seed, peer_python=peer_python)
        seconds, code, log, peak = _run(cmd, timeout=hard, cwd=work)
        report = _json_line(log)
        info.update({k: report.get(k) for k in ("trials", "first_model", "predict_seconds", "version")})
    else:
        raise InputDataError(f"unknown tool {tool!r}; choose from {TOOLS}")
    # a failure keeps its log; so does a metabo run whose trial count could not be read (to see why)
    unread = tool in METABO_TOOLS and info["trials"] is None
    return {"seconds": seconds, "code": code, "overrun": seconds > (1 + OVERRUN) * budget, "peak_mb": peak, **info,
            "log": log if code != 0 or unread else ""}


def peer_command(tool: str, train: Path, test: Path, pred: Path, *, budget: float, seed: int,
                 peer_python: Mapping[str, str] | None = None) -> list[str]:
    """The command line of a peer ``tool`` (:data:`PEER_TOOLS`, or ``optuna`` in this
    environment): its runner, in its virtual environment's python (``peer_python``, by
    :data:`PEERS` key), on the cell's files, with the runner's own arguments last."""
    if tool == "optuna":
        python, runner, extra = sys.executable, "optuna_runner.py", ()
    elif tool in PEER_TOOLS:
        venv, runner, extra = PEER_TOOLS[tool]
        if venv not in (peer_python or {}):
            raise InputDataError(f"{tool} needs the python of the {venv} virtual environment (peer_python=); "
                                 "scripts/bench_automl.py makes it")
        python = os.path.abspath(peer_python[venv])  # type: ignore[index]
    else:
        raise InputDataError(f"{tool!r} is not a peer tool; choose from {', '.join([*PEER_TOOLS, 'optuna'])}")
    return [python, str(RUNNERS / runner), str(train), str(test), str(pred), str(budget), str(seed), *extra]


def error_rate(pred: Path, y_test: np.ndarray) -> float | None:
    """The share of ``pred``'s ``prediction`` column that differs from ``y_test`` (as text);
    None without a file of the right length."""
    if not pred.is_file():
        return None
    got = pd.read_csv(pred, dtype={"prediction": str})["prediction"].to_numpy()
    return float(np.mean(got != y_test.astype(str))) if len(got) == len(y_test) else None


def balanced_error_rate(pred: Path, y_test: np.ndarray) -> float | None:
    """The mean over ``y_test``'s classes of the share of that class's rows that ``pred``
    gets wrong (labels as text); None without a file of the right length."""
    if not pred.is_file():
        return None
    got = pd.read_csv(pred, dtype={"prediction": str})["prediction"].to_numpy()
    truth = y_test.astype(str)
    if len(got) != len(truth):
        return None
    return float(np.mean([np.mean(got[truth == c] != c) for c in np.unique(truth)]))


# ----------------------------------------------------------------- Optuna, the peer in this venv
@dataclass(frozen=True)
class SearchResult:
    """A finished search: the model refitted on every row, and what the search did."""

    model: EnsembleModel
    algorithm: str
    params: Mapping[str, Any]
    valid_error: float
    trials: int
    failed: int
    first_model: float | None  # seconds from the budget's start to the first successful trial


def optuna_tpe(dataset: Dataset, *, budget: TimeBudget, seed: int) -> SearchResult:
    """Optuna's TPE over metabo's CASH space on ``dataset`` within ``budget``, then the best
    configuration refitted on all of ``dataset``.

    Each trial is evaluated as ``metabo tune`` evaluates one: the same stratified
    :class:`~metabo.evaluation.protocols.Holdout` 60/20/20 under the same seed (so the
    same training and validation rows), validation error rate as the objective, a forked
    worker killed at the trial's time limit. The budget is shared as ``metabo tune``
    shares it (:mod:`metabo.optimizer.budget`): a trial starts only with time left for the
    final fit (reserved from the best trial's fit seconds), and may run at most what is
    left. A failed or cut trial is told to Optuna as failed. The final fit is on every
    row (the 75% file), not only training + validation as ``metabo tune``'s.
    """
    import optuna

    from benchmarks.peers import OptunaSuggester
    from metabo.ensembles.model import EnsembleModel
    from metabo.evaluation.evaluate import evaluate
    from metabo.evaluation.protocols import Holdout
    from metabo.optimizer.budget import final_fit_seconds
    from metabo.optimizer.history import TrialRecord
    from metabo.space.algorithms import default_cash_space

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    protocol = Holdout(0.6, 0.2, 0.2)
    n_train = protocol.splits(dataset, seed)[0].n_train
    suggester = OptunaSuggester(default_cash_space(), seed, "tpe")
    best: TrialRecord | None = None
    trials = failed = 0
    first = None
    while (limit := budget.trial_limit(final_fit_seconds(best, train_rows=n_train,
                                                           final_rows=dataset.n_instances))) is not None:
        algorithm, params = suggester.ask()
        [ev] = evaluate(algorithm, params, dataset, protocol=protocol, seed=seed, metrics=("error_rate",),
                        time_limit=limit, keep_predictions=False)
        trials += 1
        if not ev.ok:
            failed += 1
            suggester.discard()
            continue
        value = ev.valid["error_rate"]
        suggester.tell(value)
        first = budget.elapsed() if first is None else first
        if best is None or value < best.value:
            best = TrialRecord(trials - 1, algorithm, params, config_id="", state="complete", value=value,
                               status="ok", fit_seconds=ev.fit_seconds, predict_seconds=ev.predict_seconds)
    if best is None:
        raise InputDataError(f"no Optuna trial succeeded on {dataset.name} in {budget.seconds:g} s")
    model = EnsembleModel([(best.algorithm, dict(best.params))], seed=seed).fit_dataset(dataset)
    return SearchResult(model, best.algorithm, dict(best.params), best.value, trials, failed, first)


# ----------------------------------------------------------------- results
def result_key(row: Mapping[str, Any]) -> tuple[str, int, float, str]:
    """The identity of a result line: (dataset, seed, budget, tool)."""
    return row["dataset"], int(row["seed"]), float(row["budget"]), row["tool"]


def read_results(path: Path) -> list[dict[str, Any]]:
    """The result lines of ``path`` (none if it is missing; a torn last line is skipped)."""
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            logger.warning("skipping a torn line of %s: %.60s", path, line)
    return rows


def done_keys(path: Path) -> set[tuple[str, int, float, str]]:
    """The keys (:func:`result_key`) already in the results file ``path``."""
    return {result_key(r) for r in read_results(path)}


def pending(jobs: Sequence[Mapping[str, Any]], done: set[tuple[str, int, float, str]]) -> list[Mapping[str, Any]]:
    """The jobs (mappings with a result key's fields) whose key is not ``done``."""
    return [j for j in jobs if result_key(j) not in done]


def error_table(rows: Sequence[Mapping[str, Any]], budget: float, column: str = "test_error") -> pd.DataFrame:
    """(dataset, seed) x tool values of ``column`` (the test error rate, or
    ``balanced_error``) at ``budget``, the cells every tool finished; the tools are those
    of every budget in ``rows``, so a tool with no run at ``budget`` yet leaves no cell
    finished."""
    tools = sorted({r["tool"] for r in rows})
    frame = pd.DataFrame([{**r, column: r.get(column)} for r in rows if float(r["budget"]) == float(budget)])
    table = frame.pivot_table(index=["dataset", "seed"], columns="tool", values=column, dropna=False)
    return table.reindex(columns=tools).dropna()


def friedman_nemenyi(table: pd.DataFrame, alpha: float = 0.05) -> tuple[float, float]:
    """Friedman's test over ``table``'s rows (cells) and columns (tools): its p, and the
    Nemenyi critical difference of average ranks at ``alpha``,
    ``CD = q_alpha sqrt(k (k + 1) / (6 N))`` with ``q_alpha`` the studentized range's
    ``1 - alpha`` quantile for ``k`` groups over ``sqrt 2`` (Demsar 2006, "Statistical
    comparisons of classifiers over multiple data sets", sec. 3.2.2); two tools whose
    average ranks differ by more than ``CD`` differ significantly. NaN for fewer than
    three tools or two cells."""
    from scipy.stats import friedmanchisquare, studentized_range

    n, k = table.shape
    if k < 3 or n < 2:
        return float("nan"), float("nan")
    values = table.to_numpy()
    p = 1.0 if np.all(values == values[:, :1]) else float(friedmanchisquare(*values.T).pvalue)
    q = float(studentized_range.ppf(1 - alpha, k, np.inf)) / np.sqrt(2)
    return p, q * float(np.sqrt(k * (k + 1) / (6.0 * n)))


def first_model_share(rows: Sequence[Mapping[str, Any]], share: float = 0.1) -> tuple[int, int]:
    """(runs whose first model came within ``share`` of their budget, runs that report a
    first model)."""
    timed = [r for r in rows if r.get("first_model") is not None]
    return sum(float(r["first_model"]) <= share * float(r["budget"]) for r in timed), len(timed)


def average_ranks(table: pd.DataFrame) -> pd.Series:
    """Each tool's rank per row of ``table`` (1 = lowest error, ties share their mean
    rank), averaged over the rows."""
    from scipy.stats import rankdata

    return pd.DataFrame(rankdata(table.to_numpy(), axis=1), columns=table.columns, index=table.index).mean()


def head_to_head(table: pd.DataFrame, a: str, b: str) -> tuple[int, int, int, float]:
    """Wins, ties and losses of tool ``a`` against ``b`` (lower error wins) and the
    two-sided Wilcoxon signed-rank p of their paired errors (1 when all tie)."""
    from scipy.stats import wilcoxon

    d = (table[a] - table[b]).to_numpy()
    p = float(wilcoxon(d).pvalue) if np.any(d != 0) else 1.0
    return int((d < 0).sum()), int((d == 0).sum()), int((d > 0).sum()), p


def by_dataset(table: pd.DataFrame) -> pd.DataFrame:
    """``table``'s cells averaged over their seeds: one row per dataset, so a head to head
    over it counts each dataset once (its seeds' splits are not independent tasks)."""
    return table.groupby(level="dataset").mean()


def overrun_rate(rows: Sequence[Mapping[str, Any]]) -> float:
    """The share of ``rows`` whose ``seconds`` exceed ``(1 + OVERRUN) budget``."""
    return float(np.mean([r["seconds"] > (1 + OVERRUN) * float(r["budget"]) for r in rows])) if rows else float("nan")


def _mean(values: Sequence[Any]) -> float:
    v = [x for x in values if x is not None and not (isinstance(x, float) and np.isnan(x))]
    return float(np.mean(v)) if v else float("nan")


def summarize(rows: Sequence[Mapping[str, Any]], reference: str = REFERENCE) -> str:
    """Per budget: mean test error and average rank over the (dataset, seed) cells every
    tool finished; per tool over all its runs, the overrun rate, mean seconds, time to the
    first model, trials and failures; ``reference`` against each other tool head to head."""
    out = []
    versions = {r["tool"]: r.get("version") for r in rows if r.get("version")}
    if versions:
        out.append("versions: " + ", ".join(f"{t} {v}" for t, v in sorted(versions.items())))
    for budget in sorted({float(r["budget"]) for r in rows}):
        table = error_table(rows, budget)
        runs = [r for r in rows if float(r["budget"]) == budget]
        cells = {(r["dataset"], r["seed"]) for r in runs}
        out.append(f"budget {budget:g} s: {len(table)} of {len(cells)} cells (dataset x seed) every tool finished")
        ranks = average_ranks(table) if len(table) else pd.Series(dtype=float)
        balanced = error_table(runs, budget, "balanced_error")
        for tool in sorted({r["tool"] for r in runs}):
            mine = [r for r in runs if r["tool"] == tool]
            failed = sum(r.get("test_error") is None for r in mine)
            error = table[tool].mean() if tool in table else float("nan")
            berror = balanced[tool].mean() if tool in balanced else float("nan")
            soon, timed = first_model_share(mine)
            peaks = [r.get("peak_mb") for r in mine if r.get("peak_mb") is not None]
            out.append(
                f"  {tool:14s} test error {error:.4f}  balanced {berror:.4f}  "
                f"rank {ranks.get(tool, float('nan')):.2f}  "
                f"overrun>{OVERRUN:.0%} {overrun_rate(mine):.0%}  "
                f"mean seconds {_mean([r['seconds'] for r in mine]):.1f}  "
                f"first model {_mean([r.get('first_model') for r in mine]):.1f} s "
                f"(within 10% of the budget {soon}/{timed})  "
                f"peak {max(peaks) if peaks else float('nan'):.0f} MB  "
                f"trials {_mean([r.get('trials') for r in mine]):.0f}  failed {failed}/{len(mine)}")
        p, cd = friedman_nemenyi(table)
        if p == p:
            out.append(f"  Friedman p {p:.3g} over {len(table)} cells; Nemenyi critical difference of average "
                       f"ranks {cd:.2f} (alpha .05)")
        if reference in table:
            datasets = by_dataset(table)
            for tool in table.columns:
                if tool != reference:
                    w, t, lo, p = head_to_head(table, reference, tool)
                    dw, dt, dlo, dp = head_to_head(datasets, reference, tool)
                    out.append(f"  {reference} vs {tool}: {w} wins, {t} ties, {lo} losses, Wilcoxon p {p:.3g}; "
                               f"over {len(datasets)} datasets (mean of seeds) {dw}/{dt}/{dlo}, p {dp:.3g}")
    return "\n".join(out)


def plot(rows: Sequence[Mapping[str, Any]], path: Path) -> None:
    """Box plots of the test errors per tool, one panel per budget, saved to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    budgets = sorted({float(r["budget"]) for r in rows})
    fig, axes = plt.subplots(1, len(budgets), figsize=(1.4 * len(TOOLS) + 2 * len(budgets) + 2, 4), squeeze=False)
    for ax, budget in zip(axes[0], budgets):
        table = error_table(rows, budget)
        if table.empty:  # no cell every tool finished yet (a run under way)
            ax.text(0.5, 0.5, "no cell that every tool finished", ha="center", va="center", transform=ax.transAxes)
        else:
            ranks = average_ranks(table)
            ax.boxplot([table[t] for t in table.columns],
                       tick_labels=[f"{t}\nrank {ranks[t]:.2f}" for t in table.columns])
        ax.set_title(f"test error at {budget:g} s ({len(table)} cells)")
        ax.set_ylabel("test error rate")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


__all__ = ["OVERRUN", "PEERS", "PEER_TOOLS", "REFERENCE", "TARGET", "TOOLS", "SearchResult", "average_ranks",
           "balanced_error_rate", "by_dataset", "done_keys", "error_rate", "error_table", "first_model_share",
           "friedman_nemenyi", "peer_command", "head_to_head", "held_out_kb", "one_thread_env", "optuna_tpe",
           "outer_split", "overrun_rate", "parse_metabo_log", "pending", "plot", "read_results", "result_key",
           "run_tool", "summarize", "write_cell"]
