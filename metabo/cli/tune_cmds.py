"""``metabo tune DATA``: tune a classifier on a dataset, every evaluation stored in the knowledge base."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tqdm import tqdm

from metabo.cli import watchdog
from metabo.cli._args import count, seconds
from metabo.cli.kb_cmds import add_backend_arguments, open_kb
from metabo.exceptions import InputDataError
from metabo.kb.sessions import completed_trials
from metabo.optimizer.history import TrialRecord
from metabo.strategies.names import AUTO, COLD_STRATEGIES, WARM_STRATEGIES

if TYPE_CHECKING:
    from metabo.kb import KnowledgeBase

STRATEGIES = (AUTO, *COLD_STRATEGIES, *WARM_STRATEGIES)
#: the ensembles that steer the search itself (metabo.tuning.ensemble.tune_ensemble)
SEARCHED_ENSEMBLES = ("esmbo", "eo", "divbo")


def _fmt(value: float | None) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{value:.4f}"


def _metric_name(name: str) -> str:
    """A metric of :data:`metabo.evaluation.metrics.METRICS`, ``balanced_error`` naming the
    balanced error rate."""
    from metabo.evaluation.metrics import get_metric

    name = {"balanced_error": "balanced_error_rate"}.get(name, name)
    try:
        get_metric(name)
    except InputDataError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return name


def process_start() -> float:
    """This process's start on the :func:`time.monotonic` clock (Linux: from
    ``/proc/self/stat`` and ``/proc/uptime``; elsewhere, now), so that a time budget
    counts the interpreter's start and the imports."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        age = uptime - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        age = 0.0
    return time.monotonic() - max(age, 0.0)


def _session_id(args: argparse.Namespace) -> str:
    """The session to continue (``--resume``) or name (``--session``), else a new id."""
    if args.resume and args.session and args.resume != args.session:
        raise InputDataError("--resume and --session name different sessions: give one")
    from metabo.optimizer.optimizer import new_session_id

    return args.resume or args.session or new_session_id("tune")


def _check_resume(args: argparse.Namespace, kb: KnowledgeBase) -> None:
    from metabo.optimizer.optimizer import get_session

    if args.resume and get_session(kb, args.resume) is None:
        raise InputDataError(f"no session {args.resume!r} to resume (metabo sessions lists them)")


def _hint_interrupted(kb: object, dataset_id: str | None, args: argparse.Namespace) -> None:
    """Print how to continue an interrupted session on the same dataset, if there is one
    (a new session starts over; the user may have meant to resume)."""
    from metabo.kb.sessions import list_sessions

    if dataset_id is None:
        return
    table = list_sessions(kb, dataset=dataset_id, limit=None)  # type: ignore[arg-type]
    stopped = table[table["status"] == "interrupted"]
    if len(stopped):
        row = stopped.iloc[0]
        print(f"note: session {row['session_id']} on this dataset was interrupted after {row['trials']} trials; "
              f"this is a new session (continue that one with --resume {row['session_id']})", flush=True)


def _interrupted(args: argparse.Namespace, session: str) -> int:
    print(f"interrupted: the trials told so far are stored; continue with  metabo tune {args.data} "
          f"--resume {session}" + (f" --target {args.target}" if args.target else ""), file=sys.stderr)
    return 130


def cmd_tune_ensemble(args: argparse.Namespace) -> int:
    """``metabo tune --ensemble METHOD``: an ensemble search (:func:`metabo.ensembles.tune_ensemble`)."""
    from metabo.evaluation.protocols import parse_cv
    from metabo.space.algorithms import default_cash_space
    from metabo.tuning import tune_ensemble

    if args.reshuffle or args.select != "argmin":
        raise InputDataError("--ensemble keeps one validation part and builds its own ensemble: "
                             "drop --reshuffle/--select")
    if args.n_jobs != 1 or args.backend != "loky" or args.scheduler is not None:
        raise InputDataError("--ensemble evaluates one trial at a time (its search reads each trial's predictions "
                             "before the next ask): drop --n-jobs/--backend/--scheduler")
    options = {} if args.ensemble_size is None else {"ensemble_size": args.ensemble_size}
    if args.ensemble == "eo":
        options["loss"] = args.eo_loss
    refit = args.refit or args.save_model is not None
    if args.budget is None:
        raise InputDataError("--ensemble needs --budget (a number of trials)")
    with open_kb(args) as kb, tqdm(total=args.budget, desc="trials", unit="trial") as bar:
        def progress(record: TrialRecord) -> None:
            bar.set_postfix_str(f"{record.algorithm} {record.status} {_fmt(record.value)}", refresh=False)
            bar.update(1)

        result = tune_ensemble(
            args.data, method=args.ensemble, target=args.target, budget=args.budget, strategy=args.strategy,
            space=default_cash_space(args.algorithms), kb=kb, seed=args.seed, metric=args.metric,
            time_limit=args.time_limit, session_id=_session_id(args), meta_features=not args.no_meta_features,
            refit=refit, progress=progress, cv=parse_cv(args.cv), guard=not args.no_guard, **options,
        )
    done = len(result.history.completed)
    if result.strategy_note:
        print(f"strategy: {result.strategy_note}")
    print(f"session {result.session_id}: {done} trials on {result.dataset_id} ({args.ensemble} around "
          f"{result.strategy}, seed {args.seed})")
    print("selection on " + ("the 20% validation part (60/20/20 hold-out)" if result.cv is None else
                             f"out-of-fold predictions ({result.cv}-fold cross-validation of the 80% not kept "
                             "for test)"))
    g = result.guard
    if g is not None and g.kept == "single":
        print(f"the single best configuration: the search's ensemble of {len(result.search_weights)} gains "
              f"{g.gain:+.4f} +- {g.se:.4f} over it out of sample (guard: within its noise)")
    elif len(result.weights) == 1:
        print("a single configuration: the search's ensemble has one distinct member")
    else:
        gain = "" if g is None else f"; {g.gain_text} over the single best"
        print(f"ensemble of {len(result.weights)} distinct members ({result.combine}{gain}):")
    for number, (algorithm, params, weight) in zip(result.weights, result.members):
        print(f"  {weight:.3f}  trial {number} {algorithm} {json.dumps(params, sort_keys=True)}")
    print(f"validation {result.metric}: {_fmt(result.valid_error)} (best single model {_fmt(result.best.value)})")
    print(f"test {result.metric}: {_fmt(result.test_error)} (best single model {_fmt(result.best.test_value)})")
    print(f"mean pairwise diversity of the members: {result.diversity:.4f}")
    if refit:
        print(f"test {result.metric} after refitting the members on training + validation rows: "
              f"{_fmt(result.refit_test_error)}")
    if args.save_model is not None:
        if result.model is None:
            raise InputDataError("no model to save: the members' final fit failed (see the log)")
        result.model.save(args.save_model, trusted=args.trusted)
        print(f"saved the ensemble to {args.save_model} (metabo predict {args.save_model} DATA)")
    return 0


def _print_ensemble(result) -> None:
    """What the post-hoc ensemble decided: its members and gain, or why the single
    configuration is the model."""
    choice = result.ensemble
    if choice is None:
        if result.ensemble_note:
            print(f"ensemble: {result.ensemble_note}")
        return
    d = choice.decision
    gain = f"{d.gain_text} over the best configuration"
    if choice.kept == "single":
        print(f"ensemble: not kept ({gain}, within its noise; selection over {choice.models} models)")
        return
    print(f"ensemble of {len(choice.weights)} members ({choice.combine}; {gain}; selection over {choice.models} "
          "models):")
    for number, weight in sorted(choice.weights.items(), key=lambda kv: -kv[1]):
        record = result.history[number]
        print(f"  {weight:.3f}  trial {number} {record.algorithm} {json.dumps(record.params, sort_keys=True)}")
    if result.ensemble_note:
        print(f"ensemble: {result.ensemble_note}")


def _print_rungs(result) -> None:
    """Successive halving's rungs: rows, trials evaluated, the best of each."""
    if len(result.rungs) < 2:
        return
    parts = []
    for rung in result.rungs:
        ok = {k: v for k, v in rung.values.items() if v == v}
        best = min(ok, key=lambda k: (ok[k], k)) if ok else None
        parts.append(f"{rung.rows} rows: {len(rung.values)} trial(s)" + ("" if best is None else
                     f", best trial {best} {_fmt(ok[best])}") + ("" if rung.complete else " (cut by the time budget)"))
    print("successive halving: " + "; ".join(parts))


def cmd_tune(args: argparse.Namespace) -> int:
    """``metabo tune``: tune a classifier on a dataset (random search, GP-BO, or warm-started from the knowledge
    base), an ensemble when one beats the best configuration; returns the exit code."""
    from metabo.evaluation.protocols import parse_cv
    from metabo.optimizer.budget import TimeBudget
    from metabo.tuning import tune

    if args.budget is None and args.time_budget is None:
        raise InputDataError("give --budget N (trials) or --time-budget SECONDS, or both")
    # the model file's writer (skops, about a second to import) is loaded once the session
    # starts: after the opening trial's first model, still inside the time budget
    writer = False
    if args.save_model is not None:  # before any search: a model that cannot be saved is lost
        from metabo.ensembles.model import check_model_path, is_pickle_path

        check_model_path(args.save_model, trusted=args.trusted)
        writer = not is_pickle_path(args.save_model)
    # the clock starts with the command, so that loading the libraries counts too
    clock = None if args.time_budget is None else TimeBudget(args.time_budget, start=args.started)
    if clock is not None and clock.trial_limit() is None:  # spent before anything is loaded or stored
        raise InputDataError(f"the time budget of {clock.seconds:g} s is spent before the data are loaded (starting "
                             f"took {clock.elapsed():.1f} s): give a larger --time-budget")
    session = _session_id(args)
    searched = args.ensemble in SEARCHED_ENSEMBLES
    if searched and clock is not None:
        raise InputDataError(f"--ensemble {args.ensemble} runs --budget trials; --time-budget takes the default "
                             "--ensemble posthoc (or none)")
    if args.ensemble_size is not None and args.ensemble == "none":
        raise InputDataError("--ensemble-size applies to an ensemble: drop it with --ensemble none")
    if args.no_guard and not searched:
        raise InputDataError("--no-guard applies to --ensemble esmbo, eo or divbo; the post-hoc ensemble is kept only "
                             "when it beats the best configuration (--ensemble none: never)")
    from metabo.space.algorithms import default_cash_space

    space = default_cash_space(args.algorithms)  # an unknown name is refused before the watchdog starts
    # Ctrl-C and the time budget end the command even inside a long compiled call
    guard = watchdog.watch_budget(None if clock is None else clock.start + clock.seconds)
    if searched:
        return cmd_tune_ensemble(args)
    bar: tqdm | None = None
    try:
        with open_kb(args) as kb:
            _check_resume(args, kb)
            done_before = completed_trials(kb, session) if args.resume or args.session else 0

            def started(name: str, note: str, dataset_id: str | None) -> None:
                # the data are loaded and checked: the session exists from here on
                nonlocal bar
                if writer:
                    import skops.io  # noqa: F401
                print(f"session {session}" + ("" if args.resume else " (resume it with --resume if interrupted)"),
                      flush=True)
                if not (args.resume or args.session):
                    _hint_interrupted(kb, dataset_id, args)
                print(f"strategy: {note or name}", flush=True)
                bar = tqdm(total=args.budget, initial=min(done_before, args.budget or done_before), desc="trials",
                           unit="trial")

            def progress(record: TrialRecord) -> None:
                took = "" if record.fit_seconds is None else f" {record.fit_seconds:.1f}s"
                if bar is not None:
                    bar.set_postfix_str(f"{record.algorithm} {record.status} {_fmt(record.value)}{took}",
                                        refresh=False)
                    bar.update(1)

            try:
                tune_started = time.monotonic()
                result = tune(
                    args.data, target=args.target, budget=args.budget, time_budget=clock, space=space,
                    strategy=args.strategy, kb=kb, seed=args.seed, reshuffle=args.reshuffle,
                    select=args.select.replace("-", "_"), metric=args.metric, time_limit=args.time_limit,
                    session_id=session, meta_features=not args.no_meta_features, progress=progress,
                    n_jobs=args.n_jobs, backend=args.backend, scheduler=args.scheduler, max_train=args.max_train,
                    on_strategy=started, final_rows=args.final_rows, cv=parse_cv(args.cv), ensemble=args.ensemble,
                    halving=args.halving, opening=None if args.opening == "auto" else False,
                    save_model=args.save_model, trusted=args.trusted,
                    **({} if args.ensemble_size is None else {"ensemble_size": args.ensemble_size}),
                )
            finally:
                guard.budget_done()
                if bar is not None:
                    bar.close()
    except KeyboardInterrupt:
        if bar is None:
            print("interrupted before the first trial: nothing was tuned", file=sys.stderr)
            return watchdog.exit_now(130)
        return watchdog.exit_now(_interrupted(args, session))
    done = len(result.history.completed)
    failed = sum(not r.ok for r in result.history.completed)
    print(f"session {result.session_id}: {done} trials on {result.dataset_id} ({result.strategy}, seed {args.seed})"
          + (f", {failed} failed" if failed else ""))
    params = json.dumps(result.params, sort_keys=True)
    print(f"best ({args.select}): trial {result.best.number} {result.algorithm} {params}")
    print(f"validation {result.metric}: {_fmt(result.validation_error)}"
          + (" (20% hold-out)" if result.cv is None else f" (mean over {result.cv}-fold cross-validation of the 80% "
                                                         "not kept for test)"))
    print(f"test {result.metric}: {_fmt(result.test_error)}")
    _print_rungs(result)
    if result.rounds is not None:
        print(f"boosting rounds: {result.rounds.describe()}" + (": the model has them" if result.rounds.gained
                                                               else ": its own kept"))
    if result.refit_test_error is not None:
        part = "a stratified part of the " if result.model_rows == "subsample" else ""
        print(f"refitted on {part}training + validation rows, test {result.metric}: "
              f"{_fmt(result.refit_test_error)}")
    _print_ensemble(result)
    if result.model is not None:
        rows = {"all": "every row", "subsample": "a stratified part of the training + validation rows"}.get(
            result.model_rows or "", "training + validation rows")
        cut = ""
        if result.model_rows == "subsample":
            cut = " (no fit on all of them fits in the time budget: see the log)"
        elif result.model_rows != args.final_rows:
            cut = " (its fit on every row failed, diverged or ran out of time: see the log)"
        what = "the selection" if len(result.model.members_) == 1 else \
            f"the ensemble of {len(result.model.members_)} members"
        print(f"model: {what} fitted on {rows}{cut}")
    # the first model on the command's clock (loading the libraries included), as "in all":
    # the result counts from its time budget's start (the process's) or else from the call
    first = None if result.time_to_first_model is None else (
        result.time_to_first_model + (result.started if result.started is not None else tune_started)
        - args.started)
    print(f"time: {result.total_seconds:.1f} s in tune (final fit {result.refit_seconds or 0.0:.1f} s), "
          f"{time.monotonic() - args.started:.1f} s in all" + ("" if first is None else
                                                             f"; first model after {first:.1f} s"))
    if args.save_model is not None:
        if result.model_path is None:
            raise InputDataError("no model to save: no trial succeeded or the final fit failed (see the log)")
        print(f"saved the model to {result.model_path}, written in {result.write_seconds or 0.0:.1f} s "
              f"(metabo predict {result.model_path} DATA)")
    # the command ends here: the interpreter's teardown of the search's heap (0.7 s after a
    # 30 s search, on the time budget's clock) is skipped, the store closed and the file written
    return watchdog.exit_now(0)


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add the ``metabo tune`` command(s) to the CLI's subparsers."""
    p = sub.add_parser("tune", parents=[common], help="tune a classifier on a dataset (random search, GP-BO, or "
                                                      "warm-started from the knowledge base), an ensemble when "
                                                      "one beats the best configuration")
    p.add_argument("data", help="a CSV/TSV/Parquet/ARFF path (with --target) or a spec: sklearn:iris, keel:..., "
                   "openml:ID")
    p.add_argument("--target", help="the target column of a file")
    p.add_argument("--budget", type=count(), help="number of evaluated configurations (or give --time-budget)")
    p.add_argument("--time-budget", type=seconds(), metavar="SECONDS",
                   help="wall-clock seconds for the whole command, the final model's fit and the --save-model "
                        "file's write included: no trial starts without time for them, a trial still running at "
                        "the end is cut (timeout)")
    p.add_argument("--halving", choices=("auto", "none"), default="auto",
                   help="auto: on a table whose hold-out trains on 12,000 rows or more, search on 2,000 of them "
                        "and evaluate the best trials again on 3, 9, ... times as many (successive halving); "
                        "none: every trial on every training row")
    p.add_argument("--opening", choices=("auto", "none"), default="auto",
                   help="auto: under --time-budget a new session's first trial is a small LightGBM, evaluated as "
                        "soon as the data are loaded, before the knowledge base is read; none: the strategy's "
                        "first pick is the first trial")
    p.add_argument("--max-train", type=count(2), metavar="ROWS",
                   help="search on a stratified subsample of at most ROWS training rows (the final model "
                        "trains on all of them)")
    p.add_argument("--strategy", choices=STRATEGIES, default=AUTO,
                   help="auto (default): the warm start 'warm' when the knowledge base holds other tasks' runs "
                        "on the space's algorithms, else cold GP-BO (it says which and why); cold: random, gp, "
                        "gp-dense, gp-per-algorithm; warm-started from the knowledge base's other tasks: warm, "
                        "knn, rgpe, rlgp, scot")
    p.add_argument("--algorithms", nargs="+", metavar="NAME", help="the CASH space's algorithms (default: all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--reshuffle", action="store_true",
                   help="redraw the train/validation split at every trial (thesis 3.2.1)")
    p.add_argument("--select", choices=("argmin", "posterior-mean"), default="argmin",
                   help="final selection: lowest validation error or lowest GP posterior mean (thesis 3.4)")
    p.add_argument("--metric", default="error_rate", type=_metric_name,
                   help="the objective (lower is better): error_rate, balanced_error_rate (or balanced_error: "
                        "for imbalanced classes), log_loss, one_minus_auc")
    p.add_argument("--time-limit", type=seconds(), help="seconds per evaluation (default: a limit from the "
                   "table's size and the fit times recorded for the algorithm, at least 30 s; a fit past it "
                   "is recorded as timeout)")
    p.add_argument("--session", help="continue this session (or name a new one)")
    p.add_argument("--resume", metavar="SESSION", help="continue this stored session (metabo sessions lists them)")
    p.add_argument("--refit", action="store_true",
                   help="with --ensemble esmbo/eo/divbo: refit the ensemble's members on training + validation "
                        "rows and report its test error (implied by --save-model; tune's own search always "
                        "refits its selection)")
    p.add_argument("--final-rows", choices=("all", "train+valid"), default="all",
                   help="the rows the returned model is fitted on: all (default; the test part too, after the "
                        "selection's fit on training + validation rows is scored on it) or train+valid (that "
                        "scored fit)")
    p.add_argument("--no-meta-features", action="store_true", help="store the dataset without meta-features")
    add_backend_arguments(p, n_jobs_help="trials evaluated at once, in synchronous batches (1: sequential)")
    p.add_argument("--ensemble", choices=("posthoc", "none", *SEARCHED_ENSEMBLES), default="posthoc",
                   help="the model returned: posthoc (default) is the bagged ensemble selection over the trials' "
                        "out-of-fold predictions when its cross-validated gain over the best configuration is beyond "
                        "its noise, that configuration otherwise; none: always that configuration alone; esmbo, eo, "
                        "divbo: an ensemble search around --strategy (with --budget)")
    p.add_argument("--ensemble-size", type=count(),
                   help="post-hoc selection's size limit (50), EO's slots m (12), DivBO's size limit (25)")
    p.add_argument("--eo-loss", choices=("squared_margin", "c_bound", "sigmoid"), default="squared_margin",
                   help="EO's ensemble loss (thesis sec. 4.3)")
    p.add_argument("--cv", default="auto", metavar="auto|none|K",
                   help="score each trial by K-fold cross-validation of the 80%% of the rows not kept for test (with "
                        "--ensemble: select on its out-of-fold predictions); auto: 5 folds up to 3,000 rows, a "
                        "60/20/20 hold-out above; none: the hold-out")
    p.add_argument("--no-guard", action="store_true",
                   help="with --ensemble esmbo, eo or divbo: keep the search's ensemble even when its "
                        "cross-validated gain over the single best configuration is within its noise")
    p.add_argument("--save-model", type=Path, metavar="PATH",
                   help="save the model (the selection, or the ensemble, refitted on training + validation rows) "
                        "for metabo predict: a skops file (e.g. model.skops), safe to load; a .joblib/.pkl "
                        "name writes a pickle, which runs code when loaded, and needs --trusted. The path is "
                        "checked before the search")
    p.add_argument("--trusted", action="store_true",
                   help="allow --save-model to write a joblib/pickle file (loading one executes code: "
                        "metabo predict reads it only with --trusted too)")
    p.set_defaults(func=cmd_tune, started=process_start())
