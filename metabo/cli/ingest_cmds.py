"""``metabo ingest openml``: runs from an OpenML server into the knowledge base."""

from __future__ import annotations

import argparse

from tqdm import tqdm

from metabo.cli.kb_cmds import open_kb


def cmd_openml(args: argparse.Namespace) -> int:
    from metabo.ingest.openml import ingest_openml

    if not args.task and not args.flow:
        raise SystemExit("give at least one --task or --flow")
    with open_kb(args) as kb, tqdm(desc="OpenML runs", unit="run") as bar:
        report = ingest_openml(
            kb, task_ids=args.task, flow_ids=args.flow, metric=args.metric, server=args.server,
            cache_dir=args.cache_dir, page_size=args.page_size, max_runs=args.max_runs,
            progress=bar.update,
        )
    print(report)
    return 0


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    ing = sub.add_parser("ingest", help="ingest runs from external sources")
    isub = ing.add_subparsers(dest="ingest_command", required=True)
    p = isub.add_parser("openml", parents=[common], help="evaluations of OpenML tasks/flows")
    p.add_argument("--task", type=int, action="append", default=[], help="task id (repeatable)")
    p.add_argument("--flow", type=int, action="append", default=[], help="flow id (repeatable)")
    p.add_argument("--metric", default="predictive_accuracy", help="OpenML evaluation measure")
    p.add_argument("--server", help="OpenML server URL, e.g. a mirror or the test server")
    p.add_argument("--cache-dir", help="the openml client's cache folder")
    p.add_argument("--page-size", type=int, default=1000)
    p.add_argument("--max-runs", type=int)
    p.set_defaults(func=cmd_openml)
