"""``metabo space ...``: inspect, sample, validate and export the search spaces."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from metabo.cli._args import count


def _cash(names: list[str] | None):
    from metabo.space.algorithms import default_cash_space

    return default_cash_space(names or None)


def cmd_show(args: argparse.Namespace) -> int:
    """``metabo space show``: the hyperparameters of algorithms; returns the exit code."""
    from metabo.space.algorithms import ALGORITHMS, get_algorithm

    for name in args.algorithms or list(ALGORITHMS):
        spec = get_algorithm(name)
        print(f"{name}  (scaling: {spec.needs_scaling}, nominal encoding: {spec.encoding}, "
              f"native missing values: {spec.handles_missing})")
        for hp in spec.space.hyperparameters:
            print(f"    {hp}")
        for cond in spec.space.conditions:
            print(f"    if {cond}")
    return 0


def cmd_sample(args: argparse.Namespace) -> int:
    """``metabo space sample``: seeded random CASH configurations (JSON lines); returns the exit code."""
    for algorithm, params in _cash(args.algorithms).sample(args.seed, n=args.n):
        print(json.dumps({"algorithm": algorithm, "params": params}, sort_keys=True))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    """``metabo space validate``: check a configuration against its space; returns the exit code."""
    from metabo.kb.canonical import parse_params

    _cash(None).validate(args.algorithm, parse_params(args.params))
    print("valid")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """``metabo space export``: write the CASH space as ConfigSpace JSON; returns the exit code."""
    Path(args.file).write_text(_cash(args.algorithms).to_json())
    print(f"ConfigSpace JSON of the CASH space written to {args.file}")
    return 0


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add the ``metabo space`` command(s) to the CLI's subparsers."""
    space = sub.add_parser("space", help="inspect, sample, validate and export search spaces")
    ss = space.add_subparsers(dest="space_command", required=True)
    p = ss.add_parser("show", parents=[common], help="the hyperparameters of algorithms")
    p.add_argument("algorithms", nargs="*")
    p.set_defaults(func=cmd_show)
    p = ss.add_parser("sample", parents=[common], help="seeded random CASH configurations (JSON lines)")
    p.add_argument("-n", type=count(high=100_000), default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--algorithms", nargs="+")
    p.set_defaults(func=cmd_sample)
    p = ss.add_parser("validate", parents=[common], help="check a configuration against its space")
    p.add_argument("algorithm")
    p.add_argument("params", help='JSON object, e.g. \'{"n_neighbors": 5}\'')
    p.set_defaults(func=cmd_validate)
    p = ss.add_parser("export", parents=[common], help="write the CASH space as ConfigSpace JSON")
    p.add_argument("file")
    p.add_argument("--algorithms", nargs="+")
    p.set_defaults(func=cmd_export)
