"""``metabo tune DATA``: tune a classifier on a dataset, every evaluation stored in the knowledge base."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from tqdm import tqdm

from metabo.cli.kb_cmds import add_backend_arguments, open_kb
from metabo.exceptions import InputDataError
from metabo.optimizer.history import TrialRecord
from metabo.strategies.names import COLD_STRATEGIES
from metabo.strategies.warm import AUTO, WARM_STRATEGIES

STRATEGIES = (AUTO, *COLD_STRATEGIES, *WARM_STRATEGIES)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{value:.4f}"


def cmd_tune_ensemble(args: argparse.Namespace) -> int:
    """``metabo tune --ensemble METHOD``: an ensemble search (:func:`metabo.ensembles.tune_ensemble`)."""
    from metabo.ensembles import tune_ensemble
    from metabo.space.algorithms import default_cash_space

    if args.reshuffle or args.select != "argmin":
        raise SystemExit("--ensemble keeps one validation part and builds its own ensemble: drop --reshuffle/--select")
    if args.n_jobs != 1 or args.backend != "loky" or args.scheduler is not None:
        raise InputDataError("--ensemble evaluates one trial at a time (its search reads each trial's predictions "
                             "before the next ask): drop --n-jobs/--backend/--scheduler")
    options = {} if args.ensemble_size is None else {"ensemble_size": args.ensemble_size}
    if args.ensemble == "eo":
        options["loss"] = args.eo_loss
    refit = args.refit or args.save_model is not None
    with open_kb(args) as kb, tqdm(total=args.budget, desc="trials", unit="trial") as bar:
        def progress(record: TrialRecord) -> None:
            bar.set_postfix_str(f"{record.algorithm} {record.status} {_fmt(record.value)}", refresh=False)
            bar.update(1)

        result = tune_ensemble(
            args.data, method=args.ensemble, target=args.target, budget=args.budget, strategy=args.strategy,
            space=default_cash_space(args.algorithms), kb=kb, seed=args.seed, metric=args.metric,
            time_limit=args.time_limit, session_id=args.session, meta_features=not args.no_meta_features,
            refit=refit, progress=progress, **options,
        )
    done = len(result.history.completed)
    if result.strategy_note:
        print(f"strategy: {result.strategy_note}")
    print(f"session {result.session_id}: {done} trials on {result.dataset_id} ({args.ensemble} around "
          f"{result.strategy}, seed {args.seed})")
    print(f"ensemble of {len(result.weights)} distinct members ({result.combine}):")
    for number, (algorithm, params, weight) in zip(result.weights, result.members):
        print(f"  {weight:.3f}  trial {number} {algorithm} {json.dumps(params, sort_keys=True)}")
    print(f"validation {result.metric}: {_fmt(result.valid_error)} (best single model {_fmt(result.best.value)})")
    print(f"test {result.metric}: {_fmt(result.test_error)} (best single model {_fmt(result.best.test_value)})")
    print(f"mean pairwise diversity of the members: {result.diversity:.4f}")
    if refit:
        print(f"test {result.metric} after refitting the members on training + validation rows: "
              f"{_fmt(result.refit_test_error)}")
    if args.save_model is not None and result.model is not None:
        result.model.save(args.save_model)
        print(f"saved the ensemble to {args.save_model} (metabo.ensembles.EnsembleModel.load)")
    return 0


def cmd_tune(args: argparse.Namespace) -> int:
    from metabo.optimizer import tune

    if args.ensemble is not None:
        return cmd_tune_ensemble(args)
    from metabo.space.algorithms import default_cash_space

    space = default_cash_space(args.algorithms)
    with open_kb(args) as kb, tqdm(total=args.budget, desc="trials", unit="trial") as bar:
        def progress(record: TrialRecord) -> None:
            bar.set_postfix_str(f"{record.algorithm} {record.status} {_fmt(record.value)}", refresh=False)
            bar.update(1)

        result = tune(
            args.data, target=args.target, budget=args.budget, space=space, strategy=args.strategy, kb=kb,
            seed=args.seed, reshuffle=args.reshuffle, select=args.select.replace("-", "_"), metric=args.metric,
            time_limit=args.time_limit, session_id=args.session, meta_features=not args.no_meta_features,
            progress=progress, refit=args.refit, n_jobs=args.n_jobs, backend=args.backend, scheduler=args.scheduler,
        )
    done = len(result.history.completed)
    failed = sum(not r.ok for r in result.history.completed)
    if result.strategy_note:
        print(f"strategy: {result.strategy_note}")
    print(f"session {result.session_id}: {done} trials on {result.dataset_id} ({result.strategy}, seed {args.seed})"
          + (f", {failed} failed" if failed else ""))
    params = json.dumps(result.params, sort_keys=True)
    print(f"best ({args.select}): trial {result.best.number} {result.algorithm} {params}")
    print(f"validation {result.metric}: {_fmt(result.validation_error)}")
    print(f"test {result.metric}: {_fmt(result.test_error)}")
    if args.refit:
        print(f"test {result.metric} after refitting on training + validation rows: {_fmt(result.refit_test_error)}")
    return 0


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("tune", parents=[common], help="tune a classifier on a dataset (random search, GP-BO, or warm-started from the knowledge base)")
    p.add_argument("data", help="a CSV/Parquet/ARFF path (with --target) or a spec: sklearn:iris, keel:..., openml:ID")
    p.add_argument("--target", help="the target column of a file")
    p.add_argument("--budget", type=int, required=True, help="number of evaluated configurations")
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
    p.add_argument("--metric", default="error_rate", help="the objective (lower is better)")
    p.add_argument("--time-limit", type=float, help="seconds per evaluation (default: none)")
    p.add_argument("--session", help="continue this session (or name a new one)")
    p.add_argument("--refit", action="store_true",
                   help="also train the selected configuration on training + validation rows and report its test error")
    p.add_argument("--no-meta-features", action="store_true", help="store the dataset without meta-features")
    add_backend_arguments(p, n_jobs_help="trials evaluated at once, in synchronous batches (1: sequential)")
    p.add_argument("--ensemble", choices=("esmbo", "eo", "divbo", "posthoc"),
                   help="build an ensemble: ESMBO, EO, DivBO, or post-hoc ensemble selection, around --strategy")
    p.add_argument("--ensemble-size", type=int,
                   help="EO's slots m (12), DivBO's and post-hoc selection's size limit (25, 50)")
    p.add_argument("--eo-loss", choices=("squared_margin", "c_bound", "sigmoid"), default="squared_margin",
                   help="EO's ensemble loss (thesis sec. 4.3)")
    p.add_argument("--save-model", type=Path, metavar="PATH",
                   help="refit the ensemble's members on training + validation rows and save it (joblib)")
    p.set_defaults(func=cmd_tune)
