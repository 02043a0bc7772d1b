"""The ``metabo`` command: a thin layer over the library that opens the store and prints.

Every command takes ``--kb PATH``: an existing store (``metabo kb init PATH`` creates one;
a missing path is an error, not a new empty store), or by default the embedded DuckDB file
(see :mod:`metabo.paths`), made on first use. Library errors become one-line messages and
exit code 2.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from metabo.cli import watchdog

#: this module runs as the ``metabo`` command (not imported by a program or a test)
_COMMAND = __name__ == "__main__" or os.path.basename(sys.argv[0]) == "metabo"
if _COMMAND:
    watchdog.install_for_command(sys.argv)  # before the imports below: Ctrl-C during them ends it too

try:  # Ctrl-C while the modules load: one line and 130, as during a command
    import importlib

    from metabo import __version__
    from metabo.cli._args import count
    from metabo.exceptions import MetaboError
except KeyboardInterrupt:
    if not _COMMAND:
        raise
    print("interrupted; nothing was done", file=sys.stderr)
    raise SystemExit(130) from None

#: the modules of ``metabo.cli`` that define the commands, in the order ``--help`` lists them
COMMAND_MODULES = ("kb_cmds", "data_cmds", "ingest_cmds", "space_cmds", "tune_cmds", "predict_cmds",
                   "sessions_cmds", "transfer_cmds", "serve_cmds")
#: each top-level command's module: a command imports its own module only (``metabo predict``
#: loads no optimizer, strategy or service), the whole set only for ``--help`` and the like
_MODULE_OF = {"quickstart": "data_cmds", "kb": "kb_cmds", "data": "data_cmds", "ingest": "ingest_cmds",
              "space": "space_cmds", "tune": "tune_cmds", "predict": "predict_cmds", "sessions": "sessions_cmds",
              "suggest": "transfer_cmds", "transfer": "transfer_cmds", "serve": "serve_cmds"}


def _command_modules(argv: Sequence[str] | None) -> tuple[str, ...]:
    """The command modules ``argv`` needs: its command's, or all of them."""
    words = list(sys.argv[1:] if argv is None else argv)
    name = _MODULE_OF.get(words[0]) if words else None
    return COMMAND_MODULES if name is None else (name,)


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (the usage is in ``--help``)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser(modules: Sequence[str] = COMMAND_MODULES) -> argparse.ArgumentParser:
    """The ``metabo`` parser with the commands of ``modules`` (names of :data:`COMMAND_MODULES`)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--kb", default=None, metavar="PATH",
                        help="an existing knowledge base file (metabo kb init PATH creates one; a missing "
                             "PATH is an error, never a new empty store); default: the embedded one, "
                             "$METABO_KB or $METABO_HOME/metabo.duckdb, made with the shipped knowledge on "
                             "first use")
    common.add_argument("-v", "--verbose", action="count", default=0, help="more logging")
    parser = _Parser(
        prog="metabo", description="A meta-learning knowledge base for warm-started HPO."
    )
    parser.add_argument("--version", action="version", version=f"metabo {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    loaded = {m: importlib.import_module(f"metabo.cli.{m}") for m in COMMAND_MODULES if m in modules}
    if "data_cmds" in loaded:
        _quickstart(sub, common, loaded["data_cmds"].cmd_quickstart)
    for module in loaded.values():
        module.register(sub, common)
    for command in sub.choices.values():
        _shared_arguments(command)
    return parser


def _quickstart(sub: Any, common: argparse.ArgumentParser, func: Any) -> None:
    quick = sub.add_parser(
        "quickstart", parents=[common],
        help="build the default knowledge base from bundled and KEEL datasets and query it",
    )
    quick.add_argument("--no-keel", action="store_true", help="only scikit-learn's bundled datasets")
    quick.add_argument("--seed", type=int, default=0)
    quick.add_argument("--no-demo", action="store_true", help="skip the live warm-start vs cold-start tuning")
    quick.add_argument("--demo-budget", type=count(high=10_000), default=15,
                       help="evaluations of each tuning in the demo")
    quick.add_argument("--demo-seeds", type=count(high=1000), default=3,
                       help="seeds of the demo (--seed, --seed + 1, ...): the spread over them is shown")
    quick.set_defaults(func=func)


#: Help for arguments many commands share, where a command gives none.
_SHARED_HELP = {
    "seed": "seed of every random choice: the same seed gives the same result (default %(default)s)",
    "metric": "the metric the runs are recorded under, lower is better (default %(default)s)",
    "algorithm": "an algorithm of the CASH space (metabo space sample --help lists them)",
}


def _seed(text: str) -> int:
    """A seed: an integer from 0 to 2**32 - 1 (what numpy's generators take)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a seed is an integer, got {text!r}") from None
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"a seed is an integer from 0 to 2**32 - 1, got {value}")
    return value


def _shared_arguments(parser: argparse.ArgumentParser) -> None:
    """Give ``parser``'s (and its subcommands') shared arguments their help when missing,
    and every ``--seed`` the check of :func:`_seed`."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _shared_arguments(child)
            continue
        if action.help is None and action.dest in _SHARED_HELP:
            action.help = _SHARED_HELP[action.dest]
        if action.dest == "seed" and action.type is int:
            action.type = _seed


def main(argv: Sequence[str] | None = None) -> int:
    """The ``metabo`` command: parse ``argv`` (default: the process's), run the command, return its exit code."""
    try:
        parser = build_parser(_command_modules(argv))
    except KeyboardInterrupt:
        print("interrupted; nothing was done", file=sys.stderr)
        return 130
    args = parser.parse_args(argv)
    level = logging.WARNING - 10 * min(args.verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    logging.captureWarnings(True)  # Python warnings go through logging, so through tqdm.write below
    from tqdm.contrib.logging import logging_redirect_tqdm

    try:
        if getattr(args, "kb", None) is not None:
            from metabo.cli import kb_cmds

            if args.func is not kb_cmds.cmd_init:
                kb_cmds.check_kb_arg(args.kb)  # before any data is read: --kb names an existing store
        with logging_redirect_tqdm():  # log lines above the progress bars, not inside them
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
    except OSError as e:  # the system refused a file (a full disk, a folder where a file should be): one line
        where = f" ({e.filename})" if e.filename else ""
        print(f"error: {e.strerror or e}{where}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; what was committed is kept", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
