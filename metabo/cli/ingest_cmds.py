"""``metabo ingest openml|pmf|tensor-oboe|lcdb|autosklearn``: external runs into the knowledge base."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tqdm import tqdm

from metabo.cli._args import count, integer, seconds
from metabo.cli.kb_cmds import open_kb
from metabo.exceptions import InputDataError
from metabo.metadatasets import SOURCES

#: Exit status of ``metabo ingest openml`` when the listing ended early (what was stored is kept).
LISTING_INCOMPLETE = 3


def cmd_openml(args: argparse.Namespace) -> int:
    """``metabo ingest openml``: evaluations of OpenML tasks/flows; returns the exit code."""
    if not args.task and not args.flow:  # before the openml client is imported (it makes its cache folders)
        raise InputDataError("give at least one --task or --flow")
    from metabo.ingest.openml import ingest_openml
    from metabo.ingest.openml_client import RetryPolicy

    retry = RetryPolicy(attempts=args.attempts, timeout=args.timeout, deadline=args.deadline)
    with open_kb(args) as kb, tqdm(desc="OpenML runs", unit="run") as bar:
        report = ingest_openml(
            kb, task_ids=args.task, flow_ids=args.flow, metric=args.metric, server=args.server,
            cache_dir=args.cache_dir, page_size=args.page_size, max_runs=args.max_runs,
            progress=bar.update, retry=retry,
        )
    print(report)
    missing = [f"setups OpenML did not return: {list(report.missing_setups)}"] if report.missing_setups else []
    if report.missing_datasets:
        missing.append(f"datasets OpenML does not know: {list(report.missing_datasets)}")
    if missing:
        print(f"warning: {report.runs_unavailable} runs not stored: {'; '.join(missing)}", file=sys.stderr)
    if report.wrong_flow_setups:
        print(f"warning: {report.runs_wrong_flow} runs not stored: setups whose parameters are another "
              f"flow's: {list(report.wrong_flow_setups)}", file=sys.stderr)
    if report.listing_incomplete is not None:
        print(f"warning: the listing ended early ({report.listing_incomplete}); {report.runs_new} new runs "
              "stored and kept: run the same command again for the rest", file=sys.stderr)
        return LISTING_INCOMPLETE
    return 0


def cmd_metadataset(args: argparse.Namespace) -> int:
    """``metabo ingest pmf|tensor-oboe|lcdb|autosklearn|oboe``: a published meta-dataset, fetched first; returns
    the exit code."""
    from metabo.metadatasets import get_source
    from metabo.metadatasets.ingest import ingest_metadataset, state_key

    source = get_source(args.ingest_command, args.cache, fetch=not args.no_fetch)
    if args.export_grid:
        import json
        from pathlib import Path

        from metabo.kb.canonical import canonical_json

        configs = source.configurations()
        points: dict[tuple[str, str], list[Any]] = {}
        for algorithm, text in zip(configs["algorithm"], configs["params"]):
            params = json.loads(text)
            points.setdefault((algorithm, canonical_json(params)), [algorithm, params])
        Path(args.export_grid).write_text(json.dumps(list(points.values()), indent=0))
        print(f"{len(points):,} distinct configurations of {source.name} ({len(configs):,} columns) "
              f"written to {args.export_grid}: metabo kb build --configs-from {args.export_grid} evaluates them")
        return 0
    with open_kb(args) as kb:
        state = kb.get_state(state_key(source), {}) or {}
        first = 0 if args.force else int(state.get("next_chunk", 0))
        total = source.n_chunks()
        with tqdm(desc=f"{source.name} chunks", unit="chunk", total=total, initial=first) as bar:
            report = ingest_metadataset(
                kb, source, force=args.force, max_chunks=args.max_chunks,
                progress=lambda n: (bar.update(1), bar.set_postfix(runs=n)),
            )
        print(report)
        complete = (kb.get_state(state_key(source), {}) or {}).get("complete")
        if report.runs_added and complete and not args.no_optimize:
            print(f"runs re-ordered by algorithm for fast queries in {kb.optimize():.1f} s")
    return 0


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add the ``metabo ingest`` command(s) to the CLI's subparsers."""
    ing = sub.add_parser("ingest", help="ingest runs from external sources")
    isub = ing.add_subparsers(dest="ingest_command", required=True)
    p = isub.add_parser(
        "openml", parents=[common], help="evaluations of OpenML tasks/flows",
        epilog=f"exit status: 0 done, 2 error (what was stored is kept), {LISTING_INCOMPLETE} the "
               "listing ended early (what was stored is kept; run again for the rest)",
    )
    p.add_argument("--task", type=integer(low=1), action="append", default=[], help="task id (repeatable)")
    p.add_argument("--flow", type=integer(low=1), action="append", default=[], help="flow id (repeatable)")
    p.add_argument("--metric", default="predictive_accuracy", help="OpenML evaluation measure")
    p.add_argument("--server", help="OpenML server URL, e.g. a mirror or the test server")
    p.add_argument("--cache-dir", help="the openml client's cache folder")
    p.add_argument("--page-size", type=count(high=10_000), default=1000)
    p.add_argument("--max-runs", type=count())
    p.add_argument("--timeout", type=seconds(), default=60.0, metavar="SECONDS",
                   help="seconds each request waits to connect and for each read of its answer "
                        "(default %(default)s)")
    p.add_argument("--deadline", type=seconds(), default=300.0, metavar="SECONDS",
                   help="seconds all tries of one request take together, waits included: a server "
                        "that stops answering ends the command by then (default %(default)s)")
    p.add_argument("--attempts", type=count(high=100), default=4,
                   help="tries of a request that fails transiently (default %(default)s)")
    p.set_defaults(func=cmd_openml)
    for name in SOURCES:
        p = isub.add_parser(name, parents=[common], help=f"the published {name} meta-dataset (fetched first)")
        p.add_argument("--cache", help="folder of the source's files (default: the metabo cache)")
        p.add_argument("--no-fetch", action="store_true",
                       help="read the files already extracted in --cache (no download)")
        p.add_argument("--force", action="store_true",
                       help="read every chunk again (stores only what is missing)")
        p.add_argument("--max-chunks", type=count(0), help="stop after this many chunks (resume later)")
        p.add_argument("--export-grid", metavar="FILE",
                       help="write the source's configurations as the project's points (a JSON list of "
                            "[algorithm, params] for metabo kb build --configs-from) instead of ingesting")
        p.add_argument("--no-optimize", action="store_true",
                       help="do not re-order the runs by algorithm afterwards (see KnowledgeBase.optimize)")
        p.set_defaults(func=cmd_metadataset)
