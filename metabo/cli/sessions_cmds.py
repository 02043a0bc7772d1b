"""``metabo sessions``: the tuning sessions of the knowledge base, to find one again."""

from __future__ import annotations

import argparse
import math

from metabo.cli._args import count
from metabo.cli.kb_cmds import open_kb


def cmd_sessions(args: argparse.Namespace) -> int:
    """``metabo sessions``: list the tuning sessions, newest first; returns the exit code."""
    from metabo.kb.sessions import list_sessions

    kb = open_kb(args, read_only=True)  # a store another process holds: one line naming it
    with kb:
        table = list_sessions(kb, dataset=args.dataset, limit=args.limit)
    if table.empty:
        print("no tuning session" + (f" on {args.dataset}" if args.dataset else ""))
        return 0
    table["best"] = [("n/a" if b is None or not math.isfinite(b) else f"{b:.4f}") for b in table["best"]]
    table["updated_at"] = [str(t)[:19] for t in table["updated_at"]]
    print(table.to_string(index=False))
    if (table["status"] == "interrupted").any():
        print("continue an interrupted session with: metabo tune DATA --resume SESSION_ID")
    return 0


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add the ``metabo sessions`` command(s) to the CLI's subparsers."""
    p = sub.add_parser("sessions", parents=[common], help="list the tuning sessions, newest first")
    p.add_argument("--dataset", help="only the sessions on this dataset (name or id)")
    p.add_argument("--limit", type=count(), default=20, help="at most this many (default 20)")
    p.set_defaults(func=cmd_sessions)
