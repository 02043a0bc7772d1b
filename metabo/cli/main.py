"""The ``metabo`` command: a thin layer over the library that opens the store and prints.

Every command takes ``--kb PATH`` (default: the embedded DuckDB file, see
:mod:`metabo.paths`). Library errors become one-line messages and exit code 2.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from metabo.cli import (
    data_cmds,
    ingest_cmds,
    kb_cmds,
    predict_cmds,
    serve_cmds,
    sessions_cmds,
    space_cmds,
    transfer_cmds,
    tune_cmds,
)
from metabo.exceptions import MetaboError


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (the usage is in ``--help``)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--kb", default=None, help="knowledge base file (default: the embedded one)")
    common.add_argument("-v", "--verbose", action="count", default=0, help="more logging")
    parser = _Parser(
        prog="metabo", description="A meta-learning knowledge base for warm-started HPO."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    quick = sub.add_parser(
        "quickstart", parents=[common],
        help="build the default knowledge base from bundled and KEEL datasets and query it",
    )
    quick.add_argument("--no-keel", action="store_true", help="only scikit-learn's bundled datasets")
    quick.add_argument("--seed", type=int, default=0)
    quick.add_argument("--no-demo", action="store_true", help="skip the live warm-start vs cold-start tuning")
    quick.add_argument("--demo-budget", type=int, default=15, help="evaluations of each tuning in the demo")
    quick.add_argument("--demo-seeds", type=int, default=3,
                       help="seeds of the demo (--seed, --seed + 1, ...): the spread over them is shown")
    quick.set_defaults(func=data_cmds.cmd_quickstart)
    kb_cmds.register(sub, common)
    data_cmds.register(sub, common)
    ingest_cmds.register(sub, common)
    space_cmds.register(sub, common)
    tune_cmds.register(sub, common)
    predict_cmds.register(sub, common)
    sessions_cmds.register(sub, common)
    transfer_cmds.register(sub, common)
    serve_cmds.register(sub, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.WARNING - 10 * min(args.verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:  # the reader went away (metabo kb datasets | head): stop quietly
        try:  # and let Python's final flush of stdout write nowhere rather than fail again
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 141
    except MetaboError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; what was committed is kept", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
