"""``metabo data ...`` and ``metabo quickstart``: get datasets and store their meta-features."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from tqdm import tqdm

from metabo.cli.kb_cmds import cmd_stats, open_kb
from metabo.metadatasets import SOURCES

if TYPE_CHECKING:
    from metabo.data.dataset import Dataset


def cmd_fetch(args: argparse.Namespace) -> int:
    """``metabo data fetch``: download a dataset collection (keel, rdata) or a published meta-dataset (pmf,
    tensor-oboe, lcdb, autosklearn, oboe); returns the exit code."""
    if args.name in SOURCES:
        from metabo.metadatasets import get_source

        source = get_source(args.name, args.cache, force=args.force)
        print(f"{source.name}: {source.summary or source.artifact.requirement}; files in {source.root}")
        return 0
    if args.name == "rdata":
        from metabo.data.rdatasets import TASKS, fetch_rdata

        folder = fetch_rdata(cache=args.cache, force=args.force)
        print(f"R tables in {folder}: {len(TASKS)} classification tasks ({', '.join(sorted(TASKS))})")
        return 0
    from metabo.data.keel import fetch_keel, list_keel

    folder = fetch_keel(force=args.force)
    print(f"KEEL collection in {folder}: {len(list_keel('balanced'))} balanced, "
          f"{len(list_keel('imbalanced'))} imbalanced datasets")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    """``metabo data list``: list loadable dataset specs; returns the exit code."""
    if args.name == "metadatasets":
        from metabo.metadatasets import source_class

        for name in SOURCES:
            cls = source_class(name)
            print(f"{name:12s} {cls.artifact.requirement:24s} {cls.summary}")
        return 0
    if args.name == "sklearn":
        from metabo.data.bundled import list_sklearn

        names = [f"sklearn:{n}" for n in list_sklearn()]
    elif args.name == "rdata":
        from metabo.data.rdatasets import list_rdata

        names = [f"rdata:{n}" for n in list_rdata()]
    else:
        from metabo.data.keel import list_keel

        names = [f"keel:{n}" if args.kind == "balanced" else f"keel:imbalanced/{n}" for n in list_keel(args.kind)]
    print("\n".join(names))
    return 0


def cmd_meta_features(args: argparse.Namespace) -> int:
    """``metabo data meta-features``: print a dataset's meta-features; returns the exit code."""
    from metabo.data.loaders import load_dataset
    from metabo.data.meta_features import compute_meta_features

    ds = load_dataset(args.spec, target=args.target)
    values = compute_meta_features(ds, seed=args.seed, landmarkers=not args.no_landmarkers)
    print(json.dumps({"dataset": repr(ds), "meta_features": values}, indent=2, default=str))
    return 0


def _ingest(args: argparse.Namespace, specs: list[str], *, keel_policy: str = "flag",
            loaded: Dataset | None = None) -> int:
    from metabo.ingest.datasets import ingest_datasets

    with open_kb(args) as kb, tqdm(total=len(specs), desc="datasets", unit="ds") as bar:
        report = ingest_datasets(
            kb, specs, seed=args.seed, landmarkers=not getattr(args, "no_landmarkers", False),
            load=(lambda _: loaded) if loaded is not None else _loader(getattr(args, "target", None), keel_policy),
            progress=lambda spec: (bar.set_postfix_str(spec), bar.update()),
        )
    distinct = len(set(report.stored))
    print(f"stored {len(report.stored)} ({distinct} distinct datasets: the same data from two sources "
          f"is one dataset), already there {len(report.skipped)}, failed {len(report.failed)}")
    for spec, why in report.failed:
        print(f"  failed {spec}: {why}")
    return 0 if not report.failed else 1


def _loader(target: str | None, keel_policy: str):
    """Load a spec as ``metabo tune`` would, refusing what it refuses (one class, a
    regression target, no feature column): the store holds only tasks it can tune."""
    from metabo.data.loaders import SCHEMES, load_dataset
    from metabo.evaluation.protocols import require_classification

    def load(spec: str):
        extra = {"lost_decimals": keel_policy} if spec.startswith("keel:") else {}
        named = spec.split(":", 1)[0] in SCHEMES  # sklearn:, keel:, openml: know their target
        dataset = load_dataset(spec, target=None if named else target, **extra)
        require_classification(dataset, target=None if named else target)
        return dataset

    return load


def cmd_add(args: argparse.Namespace) -> int:
    """``metabo data add``: store datasets and their meta-features; returns the exit code."""
    if len(args.specs) == 1:  # one dataset: a spec or file that does not load is the command's error, one line
        return _ingest(args, list(args.specs), loaded=_loader(args.target, "flag")(args.specs[0]))
    return _ingest(args, list(args.specs))


def cmd_quickstart(args: argparse.Namespace) -> int:
    """The main job: a knowledge base of real tasks, then what to try first on a new one.

    Opens the knowledge base (the embedded default imports the shipped one on first
    use), adds scikit-learn's bundled datasets and the balanced KEEL datasets with their
    meta-features (those already stored are skipped), prints what is stored, then treats
    ``sklearn:digits`` as a new task: its nearest stored tasks by meta-features and, per
    algorithm, the configurations ranked best on those tasks; then tunes it live with RLGP
    (warm) beside GP-BO (cold) (:mod:`metabo.cli.warm_start_demo`).
    """
    from metabo.data.bundled import list_sklearn
    from metabo.kb import queries as q

    specs = [f"sklearn:{n}" for n in list_sklearn()]
    if not args.no_keel:
        from metabo.data.keel import fetch_keel, list_keel

        fetch_keel()
        specs += [f"keel:{n}" for n in list_keel("balanced")]
    _ingest(args, specs, keel_policy="repair")
    cmd_stats(argparse.Namespace(kb=args.kb, json=False))
    with open_kb(args) as kb:
        probe = kb.resolve_dataset("sklearn-digits")
        with_runs = q.dataset_ids_with_runs(kb)
        without = [d for d in kb.dataset_ids() if d not in with_runs]
        near = q.nearest_tasks(kb, probe, k=5, exclude=without if with_runs else ())
        print(f"\n{probe} as a new task; its nearest stored tasks (with runs) by meta-features:")
        print(near.to_string(index=False))
        tasks = near["dataset_id"].tolist()
        ranked = [a for a in kb.algorithms() if not a.startswith("openml-flow:")]
        shown = 0
        for algorithm in ranked:
            top = q.mean_ranks(kb, algorithm, dataset_ids=tasks, min_tasks=len(tasks))
            if len(top) < 2:  # no runs, or a single configuration: nothing to choose
                continue
            print(f"\n{algorithm}: configurations to try first (mean rank on those {len(tasks)} tasks)")
            print(top.head(3)[["mean_rank", "params"]].to_string(index=False))
            shown += 1
        if not shown:
            print("\n(no runs stored yet: `metabo kb build` evaluates configurations on these datasets)")
            return 0
        if not args.no_demo:
            from metabo.cli.warm_start_demo import warm_vs_cold
            from metabo.paths import metabo_home

            warm_vs_cold(kb, "sklearn:digits", budget=args.demo_budget,
                         seeds=[args.seed + i for i in range(args.demo_seeds)],
                         plot_path=metabo_home() / "quickstart_warm_vs_cold.png")
    return 0


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add the ``metabo data`` command(s) to the CLI's subparsers."""
    data = sub.add_parser("data", help="fetch, list and add datasets")
    ds = data.add_subparsers(dest="data_command", required=True)
    p = ds.add_parser(
        "fetch", parents=[common],
        help="download a dataset collection (keel, rdata) or a published meta-dataset (" + ", ".join(SOURCES) + ")",
    )
    p.add_argument("name", choices=["keel", "rdata", *SOURCES])
    p.add_argument("--cache", help="folder for a meta-dataset's or the R tables' files (default: the metabo cache)")
    p.add_argument("--force", action="store_true", help="download and extract again")
    p.set_defaults(func=cmd_fetch)
    p = ds.add_parser("list", parents=[common], help="list loadable dataset specs")
    p.add_argument("name", choices=["keel", "sklearn", "rdata", "metadatasets"])
    p.add_argument("--kind", choices=["balanced", "imbalanced"], default="balanced")
    p.set_defaults(func=cmd_list)
    p = ds.add_parser("meta-features", parents=[common], help="print a dataset's meta-features")
    p.add_argument("spec", help="sklearn:NAME, keel:NAME, rdata:NAME, openml:ID or a CSV/TSV/Parquet/ARFF path")
    p.add_argument("--target")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-landmarkers", action="store_true")
    p.set_defaults(func=cmd_meta_features)
    p = ds.add_parser("add", parents=[common], help="store datasets and their meta-features",
                      description="Store datasets and their meta-features. One dataset that does not load is the "
                                  "command's error and stores nothing. Several are stored one by one, each in its "
                                  "own transaction: one that fails is reported (exit 1) and the others stay stored, "
                                  "so a bad file does not cost the meta-features already computed.")
    p.add_argument("specs", nargs="+", help="files (CSV, TSV, Parquet, ARFF, ...) or specs: sklearn:NAME, keel:NAME, "
                                            "rdata:NAME, openml:ID")
    p.add_argument("--target", help="target column for files")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-landmarkers", action="store_true")
    p.set_defaults(func=cmd_add)
