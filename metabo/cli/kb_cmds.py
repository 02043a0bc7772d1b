"""``metabo kb ...``: inspect, query, export and import a knowledge base."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pandas as pd

from metabo.cli._args import count, integer, seconds
from metabo.exceptions import InputDataError, KnowledgeBaseError
from metabo.kb import KnowledgeBase
from metabo.kb import queries as q
from metabo.kb import transfer as tr
from metabo.kb.datasets import dataset_names, datasets_summary
from metabo.kb.parquet_io import export_parquet, import_parquet
from metabo.paths import default_kb_path


def open_kb(args: argparse.Namespace, *, read_only: bool = False, create: bool = False) -> KnowledgeBase:
    """The store named by ``--kb`` (or the embedded default). ``--kb`` must name an existing
    store, for every command: a mistyped path is an error, not a new empty store tuned
    cold; only ``metabo kb init PATH`` (``create``) makes one. The embedded default is
    made (with the shipped knowledge base) on first use. Commands that only read open
    it ``read_only``: a read-only file can be read, and a store another process reads
    can be read too."""
    if args.kb is None:
        if read_only and not default_kb_path().exists():
            KnowledgeBase().close()
        return KnowledgeBase(None, read_only=read_only)
    check_kb_arg(args.kb, create=create)
    return KnowledgeBase(args.kb, read_only=read_only)


def check_kb_arg(path: str | Path, *, create: bool = False) -> None:
    """Refuse a ``--kb`` that names no store: a folder, a file in a missing folder, or a
    missing file (unless ``create``: ``metabo kb init PATH``)."""
    kb = Path(path).expanduser()
    if kb.is_dir():
        raise KnowledgeBaseError(f"{kb} is a folder, not a knowledge base file (give the .duckdb file in it)")
    if not kb.parent.is_dir():
        raise KnowledgeBaseError(f"no folder {kb.parent} for the knowledge base {kb.name}: check the path, or "
                                 "create the folder first")
    if not kb.exists() and not create:
        raise KnowledgeBaseError(f"no knowledge base at {kb} (check the path; metabo kb init {kb} creates one)")


def add_backend_arguments(p: argparse.ArgumentParser, *, n_jobs_help: str) -> None:
    """``--n-jobs``, ``--backend`` and ``--scheduler`` (:func:`metabo.evaluation.backends.backend_context`)."""
    from metabo.evaluation.backends import BACKENDS

    p.add_argument("--n-jobs", type=count(high=4096), default=1, help=n_jobs_help)
    p.add_argument("--backend", default="loky",
                   help=f"joblib backend: {', '.join(BACKENDS)} (dask: pip install 'metabo[dask]'; "
                        "ray: pip install 'metabo[ray]')")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="the Dask scheduler (tcp://127.0.0.1:8786) or Ray cluster to run on; "
                        "default with dask/ray: a local cluster of --n-jobs workers")


def _print_frame(df: pd.DataFrame, fmt: str) -> None:
    if fmt == "csv":
        print(df.to_csv(index=False), end="")
    elif fmt == "json":
        print(df.to_json(orient="records", indent=2))
    else:
        with pd.option_context("display.max_rows", 200, "display.max_columns", 20, "display.width", 160):
            print(df.to_string(index=False) if not df.empty else "(nothing)")


def cmd_stats(args: argparse.Namespace) -> int:
    """``metabo kb stats``: what is stored; returns the exit code."""
    with open_kb(args, read_only=True) as kb:
        stats = kb.stats()
        by_algorithm = kb.status_by_algorithm() if getattr(args, "by_algorithm", False) else None
    if by_algorithm is not None:
        stats["evaluations_by_algorithm"] = by_algorithm.set_index("algorithm").to_dict(orient="index")
    if args.json:
        print(json.dumps(stats, indent=2))
        return 0
    print(f"knowledge base {stats['path']} (schema v{stats['schema_version']})")
    for key in ("datasets", "meta_features", "algorithms", "configurations", "runs", "predictions", "sessions"):
        print(f"  {key:<15} {stats[key]:>12,}")
    print("  runs by status  " + ", ".join(f"{k}={v:,}" for k, v in stats["runs_by_status"].items()))
    if stats["runs_by_source"]:
        print("  runs by source  " + ", ".join(f"{k}={v:,}" for k, v in stats["runs_by_source"].items()))
    if stats["runs_by_protocol"]:
        print("  runs by protocol (how they were measured):")
        for protocol, n in stats["runs_by_protocol"].items():
            print(f"    {n['runs']:>12,} runs on {n['datasets']:>5,} datasets  {protocol}")
    if by_algorithm is not None:
        print("\nevaluations by algorithm (one per run of the primary metric):")
        print(by_algorithm.to_string(index=False))
    return 0


def cmd_init(args: argparse.Namespace) -> int:
    """``metabo kb init``: create a store at PATH (or --kb), or migrate it; returns the exit code."""
    if args.path is not None:
        if args.kb is not None and Path(args.kb) != Path(args.path):
            raise InputDataError(f"kb init names two stores ({args.path} and --kb {args.kb}): give one")
        args.kb = args.path
    with open_kb(args, create=True) as kb:
        print(f"knowledge base {kb.path} at schema version {kb.schema_version()}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """``metabo kb export``: write every table as Parquet into FOLDER; returns the exit code."""
    with open_kb(args, read_only=True) as kb:
        counts = export_parquet(kb, args.folder, without=tuple(args.without))
    print(f"exported to {args.folder}: " + ", ".join(f"{k}={v:,}" for k, v in counts.items()))
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    """``metabo kb import``: import a Parquet export (idempotent); returns the exit code."""
    with open_kb(args) as kb:
        added = import_parquet(kb, args.folder)
    print(f"imported from {args.folder} (new rows): " + ", ".join(f"{k}={v:,}" for k, v in added.items()))
    return 0


def cmd_datasets(args: argparse.Namespace) -> int:
    """``metabo kb datasets``: list stored datasets; returns the exit code."""
    with open_kb(args, read_only=True) as kb:
        df = datasets_summary(kb)
    _print_frame(df, args.format)
    return 0


def cmd_runs(args: argparse.Namespace) -> int:
    """``metabo kb runs``: runs of a dataset and/or algorithm; returns the exit code."""
    with open_kb(args, read_only=True) as kb:
        ds = kb.resolve_dataset(args.dataset) if args.dataset else None
        df = q.runs(kb, dataset_id=ds, algorithm=args.algorithm, metric=args.metric,
                    status=None if args.status == "any" else args.status, decode_params=False)
    cols = ["dataset_id", "algorithm", "params", "metric", "value", "fold", "status", "source"]
    _print_frame(df[cols].head(args.limit) if not df.empty else df, args.format)
    return 0


def cmd_matrix(args: argparse.Namespace) -> int:
    """``metabo kb matrix``: task x configuration matrix of an algorithm; returns the exit code."""
    with open_kb(args, read_only=True) as kb:
        m = q.performance_matrix(kb, args.algorithm, metric=args.metric)
    if args.format == "csv":
        print(m.to_csv(), end="")
    else:
        print(f"{m.shape[0]} tasks x {m.shape[1]} configurations, {m.notna().to_numpy().mean():.1%} observed")
        print(m.iloc[: args.limit, : min(8, m.shape[1])].round(4).to_string())
    return 0


def cmd_ranks(args: argparse.Namespace) -> int:
    """``metabo kb ranks``: configurations by mean rank across tasks; returns the exit code."""
    with open_kb(args, read_only=True) as kb:
        tasks = None
        if args.near:
            near = q.nearest_tasks(kb, kb.resolve_dataset(args.near), k=args.k)
            tasks = near["dataset_id"].tolist()
            print(f"ranking on the {len(tasks)} tasks nearest {args.near}: {', '.join(tasks)}")
        df = q.mean_ranks(kb, args.algorithm, metric=args.metric, min_tasks=args.min_tasks, dataset_ids=tasks)
    _print_frame(df.head(args.limit), args.format)
    return 0


def cmd_nearest(args: argparse.Namespace) -> int:
    """``metabo kb nearest``: tasks nearest a dataset by meta-features; returns the exit code."""
    with open_kb(args, read_only=True) as kb:
        if args.dataset:
            target: str | dict[str, float] = kb.resolve_dataset(args.dataset)
        else:
            target = _meta_features_arg(args.meta_features)
        df = q.nearest_tasks(kb, target, k=args.k)
        names = dataset_names(kb)
    df = df.merge(names, on="dataset_id", how="left")
    _print_frame(df[["dataset_id", "name", *[c for c in df.columns if c not in ("dataset_id", "name")]]],
                 args.format)
    return 0


def _meta_features_arg(text: str) -> dict[str, float]:
    """``--meta-features``: a JSON object of names to numbers, or one line saying what is wrong."""
    try:
        values = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputDataError(f"--meta-features is not valid JSON ({e.msg} at character {e.pos}); give an object "
                             'such as \'{"NumberOfInstances": 500}\'') from None
    if not isinstance(values, dict) or not values:
        raise InputDataError("--meta-features must be a non-empty JSON object of names to numbers")
    bad = [k for k, v in values.items() if isinstance(v, bool) or not isinstance(v, (int, float))]
    if bad:
        raise InputDataError(f"--meta-features values must be numbers; not for {bad[:5]}")
    return {str(k): float(v) for k, v in values.items()}


def cmd_portfolio(args: argparse.Namespace) -> int:
    """``metabo kb portfolio``: k configurations that together do well on most tasks (greedy, by regret); returns
    the exit code."""
    with open_kb(args, read_only=True) as kb:
        df = tr.greedy_portfolio(kb, args.algorithm, args.k, metric=args.metric, normalize=not args.no_normalize)
    if not args.json:
        print(f"greedy portfolio of {len(df)} {args.algorithm} configurations "
              f"(mean {'normalized ' if not args.no_normalize else ''}regret of the best member per task):")
    _print_frame(df.assign(mean_regret=df["mean_regret"].round(6)), "json" if args.json else "table")
    return 0


def cmd_similar(args: argparse.Namespace) -> int:
    """``metabo kb similar``: tasks that rank an algorithm's configurations alike (Kendall tau-b); returns the exit
    code."""
    with open_kb(args, read_only=True) as kb:
        if args.task:
            task = kb.resolve_dataset(args.task)
            df = tr.nearest_tasks_by_ranking(kb, args.algorithm, task, k=args.top, metric=args.metric,
                                             min_shared=args.min_shared)
            title = f"tasks ranking {args.algorithm} configurations most like {task} (Kendall tau-b):"
        else:
            df = tr.similar_task_pairs(kb, args.algorithm, top=args.top, metric=args.metric,
                                       min_shared=args.min_shared)
            title = f"task pairs ranking {args.algorithm} configurations most alike (Kendall tau-b):"
    if not args.json:
        print(title)
    _print_frame(df.assign(tau=df["tau"].round(4)), "json" if args.json else "table")
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    """``metabo kb build``: evaluate seeded configurations on datasets (resumable); returns the exit code."""
    from tqdm import tqdm

    from metabo.data.loaders import check_spec
    from metabo.evaluation.protocols import Holdout, parse_cv
    from metabo.ingest.build import BuildSettings, build_knowledge_base
    from metabo.space.algorithms import ALGORITHMS, get_algorithm

    specs = list(args.datasets)
    for spec in specs:  # a spec that cannot load is refused before anything is fetched or stored
        check_spec(spec)
    from metabo.evaluation.backends import check_backend
    from metabo.evaluation.metrics import get_metric
    from metabo.evaluation.protocols import resolve_cv

    check_backend(args.backend, address=args.scheduler, n_jobs=args.n_jobs)
    if (cv := parse_cv(args.cv)) is not None:
        resolve_cv(cv, 0)
    for name in args.metrics or ():
        get_metric(name)
    if args.keel:
        from metabo.data.keel import fetch_keel, list_keel

        fetch_keel()
        specs += [f"keel:{n}" if args.keel == "balanced" else f"keel:imbalanced/{n}" for n in list_keel(args.keel)]
    if not specs:
        raise InputDataError("give dataset specs and/or --keel balanced|imbalanced")
    grid = None
    if args.configs_from:
        from metabo.ingest.build import read_grid

        if args.algorithms != ["all"]:
            raise InputDataError("--configs-from names the algorithms itself; leave out --algorithms")
        grid = read_grid(args.configs_from)  # checked before anything is stored
        algorithms = list(grid)
    else:
        algorithms = list(ALGORITHMS) if args.algorithms == ["all"] else args.algorithms
    for name in algorithms:  # an unknown name fails before anything is shown or stored
        get_algorithm(name)
    metrics: dict[str, Any] = {} if args.metrics is None else {"metrics": tuple(args.metrics)}
    settings = BuildSettings(
        n_configs=args.configs, seed=args.seed, protocol=Holdout(max_train=args.max_train),
        time_limit=args.time_limit or None, memory_limit_mb=args.memory_limit or None,
        keep_predictions=args.predictions, cv=parse_cv(args.cv), **metrics,
    )
    with open_kb(args) as kb:
        ds_bar = tqdm(total=len(specs), desc="datasets + meta-features", unit="ds")
        bar = tqdm(desc="evaluations", unit="eval")

        def plan(todo: int, done: int) -> None:
            ds_bar.close()
            bar.total = todo
            bar.write(f"{todo:,} evaluations to run, {done:,} already stored")
            bar.refresh()

        report = build_knowledge_base(
            kb, specs, algorithms, settings, n_jobs=args.n_jobs, backend=args.backend, scheduler=args.scheduler,
            batch_size=args.batch_size,
            progress=lambda _: bar.update(), on_dataset=lambda _: ds_bar.update(), on_plan=plan,
            configurations=grid,
        )
        bar.close()
    print(f"session {report.session_id}: {report.evaluated:,} evaluated, {report.skipped_done:,} already stored, "
          f"{report.seconds:.0f} s; by status: {report.by_status}")
    for ds_id, why in report.datasets_without_runs.items():
        print(f"  no runs for {ds_id}: {why}")
    return 0


def cmd_join_qualities(args: argparse.Namespace) -> int:
    """``metabo kb join-qualities``: OpenML qualities shipped offline (LCDB, OBOE) -> meta-features of every stored
    dataset of that OpenML id; prints coverage; returns the exit code."""
    from metabo.metadatasets import get_source
    from metabo.metadatasets.qualities import coverage, join_qualities, read_qualities

    caches = {"lcdb": args.lcdb_cache, "oboe": args.oboe_cache}
    tables = {name: read_qualities(get_source(name, caches[name], fetch=not args.no_fetch))
              for name in args.sources}
    with open_kb(args) as kb:
        print(join_qualities(kb, tables))
        hist = coverage(kb, args.coverage or None)
    if hist.empty:
        print("no ingested source's datasets are stored")
        return 0
    print("\ndatasets of each source by how many of the project's meta-features they have:")
    _print_frame(hist, args.format)
    return 0


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add the ``metabo kb`` command(s) to the CLI's subparsers."""
    kb = sub.add_parser("kb", help="inspect, query, export and import the knowledge base")
    ks = kb.add_subparsers(dest="kb_command", required=True)
    fmt = argparse.ArgumentParser(add_help=False)
    fmt.add_argument("--format", choices=["table", "csv", "json"], default="table")

    p = ks.add_parser("init", parents=[common], help="create a store at PATH (or --kb), or migrate it")
    p.add_argument("path", nargs="?", help="the knowledge base file to create or migrate (default: --kb, else "
                                          "the embedded one); its folder must exist")
    p.set_defaults(func=cmd_init)
    p = ks.add_parser("stats", parents=[common], help="what is stored")
    p.add_argument("--json", action="store_true", help="machine-readable counts")
    p.add_argument("--by-algorithm", action="store_true", help="runs by status and failed fraction per algorithm")
    p.set_defaults(func=cmd_stats)
    p = ks.add_parser("export", parents=[common], help="write every table as Parquet into FOLDER")
    p.add_argument("folder")
    p.add_argument("--without", nargs="+", default=[], metavar="TABLE",
                   help="tables written empty (e.g. predictions: large, and kept in the store instead)")
    p.set_defaults(func=cmd_export)
    p = ks.add_parser("import", parents=[common], help="import a Parquet export (idempotent)")
    p.add_argument("folder")
    p.set_defaults(func=cmd_import)
    p = ks.add_parser("build", parents=[common], help="evaluate seeded configurations on datasets (resumable)")
    p.add_argument("datasets", nargs="*", help="dataset specs: keel:NAME, sklearn:NAME, openml:ID, files")
    p.add_argument("--keel", choices=["balanced", "imbalanced"], help="add every KEEL dataset of that kind")
    p.add_argument("--algorithms", nargs="+", default=["all"], help="algorithm names (default: all)")
    p.add_argument("--configs", type=count(), default=50, help="configurations per algorithm (same on every dataset)")
    p.add_argument("--configs-from", metavar="FILE",
                   help="evaluate these configurations instead (a JSON list of [algorithm, params] pairs, "
                        "e.g. a published meta-dataset's grid): a session of its own")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cv", default="auto",
                   help="how each dataset is measured: auto (as `metabo tune` does: 5-fold CV of the 80%% not "
                        "kept for test up to 3,000 rows, else a 60/20/20 hold-out), a number of folds, or none "
                        "(the 60/20/20 hold-out everywhere)")
    p.add_argument("--max-train", type=count(2), help="subsample the training part to at most this many rows")
    p.add_argument("--time-limit", type=seconds(zero="none"), default=60.0, help="seconds per fit (each fold; 0: none)")
    p.add_argument("--memory-limit", type=integer(low=0, high=10**8), default=4096, help="MB per evaluation (0: none)")
    p.add_argument("--predictions", action="store_true", help="keep validation and test probabilities")
    p.add_argument("--metrics", nargs="+", metavar="METRIC",
                   help="metrics recorded on each fold's validation and test rows (default: error_rate "
                        "balanced_error_rate log_loss one_minus_auc)")
    add_backend_arguments(p, n_jobs_help="evaluations at once (workers of a local cluster)")
    p.add_argument("--batch-size", type=count(), default=25, help="evaluations recorded per transaction")
    p.set_defaults(func=cmd_build)
    p = ks.add_parser("datasets", parents=[common, fmt], help="list stored datasets")
    p.set_defaults(func=cmd_datasets)
    p = ks.add_parser("runs", parents=[common, fmt], help="runs of a dataset and/or algorithm")
    p.add_argument("--dataset")
    p.add_argument("--algorithm")
    p.add_argument("--metric")
    p.add_argument("--status", default="ok", choices=["ok", "crash", "timeout", "memout", "any"])
    p.add_argument("--limit", type=count(), default=50)
    p.set_defaults(func=cmd_runs)
    p = ks.add_parser("matrix", parents=[common, fmt], help="task x configuration matrix of an algorithm")
    p.add_argument("algorithm")
    p.add_argument("--metric", default="error_rate")
    p.add_argument("--limit", type=count(), default=20)
    p.set_defaults(func=cmd_matrix)
    p = ks.add_parser("ranks", parents=[common, fmt], help="configurations by mean rank across tasks")
    p.add_argument("algorithm")
    p.add_argument("--metric", default="error_rate")
    p.add_argument("--min-tasks", type=count(), default=None,
                   help="list configurations ranked on at least this many tasks (default: half as many as the "
                        "best-supported one)")
    p.add_argument("--near", help="rank on the tasks nearest this dataset (by meta-features) only")
    p.add_argument("-k", type=count(), default=5, help="how many nearest tasks with --near")
    p.add_argument("--limit", type=count(), default=20)
    p.set_defaults(func=cmd_ranks)
    p = ks.add_parser("nearest", parents=[common, fmt], help="tasks nearest a dataset by meta-features")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--dataset", help="a stored dataset id, name or openml:ID")
    g.add_argument("--meta-features", help='JSON object of meta-features, e.g. \'{"NumberOfInstances": 500}\'')
    p.add_argument("-k", type=count(), default=5)
    p.set_defaults(func=cmd_nearest)
    p = ks.add_parser("join-qualities", parents=[common, fmt],
                      help="OpenML qualities shipped offline (LCDB, OBOE) -> meta-features of every "
                           "stored dataset of that OpenML id; prints coverage")
    p.add_argument("--sources", nargs="+", default=["lcdb", "oboe"], choices=["lcdb", "oboe"],
                   help="collections to read, most trusted first")
    p.add_argument("--lcdb-cache", help="folder of LCDB's files (default: the metabo cache)")
    p.add_argument("--oboe-cache", help="folder of OBOE's files (default: the metabo cache)")
    p.add_argument("--no-fetch", action="store_true", help="read the files already extracted (no download)")
    p.add_argument("--coverage", nargs="+", metavar="SOURCE",
                   help="report coverage for these ingested sources only (default: all)")
    p.set_defaults(func=cmd_join_qualities)
    p = ks.add_parser("portfolio", parents=[common],
                      help="k configurations that together do well on most tasks (greedy, by regret)")
    p.add_argument("algorithm")
    p.add_argument("-k", type=count(), default=5, help="portfolio size")
    p.add_argument("--metric", default="error_rate")
    p.add_argument("--no-normalize", action="store_true", help="raw regret instead of regret / task range")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_portfolio)
    p = ks.add_parser("similar", parents=[common],
                      help="tasks that rank an algorithm's configurations alike (Kendall tau-b)")
    p.add_argument("algorithm")
    p.add_argument("--task", help="the tasks ranking most like this dataset (default: the most similar pairs)")
    p.add_argument("--top", type=count(), default=10, help="how many tasks or pairs")
    p.add_argument("--metric", default="error_rate")
    p.add_argument("--min-shared", type=count(2), default=5, help="fewest shared configurations to compare two tasks")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_similar)
