"""``metabo predict MODEL DATA``: one prediction per row of a table, from a saved model."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from metabo.exceptions import InputDataError
from metabo.paths import write_atomic

if TYPE_CHECKING:
    from metabo.ensembles.model import EnsembleModel


def predictions(model_path: str | os.PathLike[str], data: str | os.PathLike[str], *, target: str | None = None,
                proba: bool = False, trusted: bool = False) -> pd.DataFrame:
    """The predictions of the model saved at ``model_path``
    (:meth:`~metabo.ensembles.model.EnsembleModel.save`, by ``metabo tune --save-model``)
    for every row of the table ``data``: a ``prediction`` column (the class labels as
    given at fit) and, with ``proba``, ``proba_<label>`` per class. The table's columns
    must be those the model was fitted on (in any order; ``target`` is dropped), and each
    column is read as the kind it had at fit (:meth:`~metabo.ensembles.model.EnsembleModel.aligned`).
    A joblib/pickle model file is loaded only with ``trusted`` (it runs code when loaded);
    a table without rows is refused (:class:`InputDataError`)."""
    return _predict(model_path, data, target=target, proba=proba, trusted=trusted, keep=True)[0]


def _predict(model_path: str | os.PathLike[str], data: str | os.PathLike[str], *, target: str | None,
             proba: bool, trusted: bool, keep: bool) -> tuple[pd.DataFrame, EnsembleModel]:
    """:func:`predictions` and the model (whose checked file is kept only with ``keep``)."""
    from metabo.data.dataset import feature_frame
    from metabo.data.files import read_table
    from metabo.ensembles.model import EnsembleModel

    model = EnsembleModel.load(model_path, trusted=trusted, keep=keep)
    frame, _ = read_table(data)
    if len(frame) == 0:
        raise InputDataError(f"{data} has no rows to predict (only a header)")
    frame = feature_frame(frame.drop(columns=[target]) if target in frame.columns else frame)
    X = model.aligned(frame, strict=True)
    out = pd.DataFrame({"prediction": model.predict(X)})
    if proba:
        P = model.predict_proba(X)
        for k, label in enumerate(model.classes_):
            out[f"proba_{label}"] = P[:, k]
    return out, model


def _write_atomic(frame: pd.DataFrame, path: Path) -> None:
    """``frame`` as CSV at ``path``, whole or not at all (:func:`metabo.paths.write_atomic`):
    a failed write (a full disk) leaves nothing at ``path`` and raises :class:`OutputFileError`."""
    write_atomic(path, lambda f: frame.to_csv(f, index=False), what="the predictions", mode="w")


def cmd_predict(args: argparse.Namespace) -> int:
    """``metabo predict``: predict every row of a table with a saved model; returns the exit code."""
    if args.out is not None and not args.out.parent.is_dir():
        raise InputDataError(f"no folder {args.out.parent} to write {args.out.name} in")
    if args.out is not None and args.out.is_dir():
        raise InputDataError(f"{args.out} is a folder; give a file name for the predictions")
    out, model = _predict(args.model, args.data, target=args.target, proba=args.proba, trusted=args.trusted,
                          keep=False)
    if args.out is None:
        out.to_csv(sys.stdout, index=False)
    else:
        _write_atomic(out, args.out)
        print(f"wrote {len(out)} predictions to {args.out}", file=sys.stderr)
    model.keep_checked()  # the command succeeded: the next prediction from this file skips the check
    return 0


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add the ``metabo predict`` command(s) to the CLI's subparsers."""
    p = sub.add_parser("predict", parents=[common], help="predict every row of a table with a saved model")
    p.add_argument("model", help="a model file saved by metabo tune --save-model (.skops; a joblib/pickle "
                                 "file only with --trusted)")
    p.add_argument("data", help="a CSV/TSV/Parquet/ARFF table with the columns the model was fitted on, in any "
                                "order; a missing column or one the model does not know is refused")
    p.add_argument("--target", help="a column of the table to leave out (the class, when the table has it); "
                                    "the only column besides the model's allowed")
    p.add_argument("--out", type=Path, help="write the predictions there (CSV) instead of to standard output")
    p.add_argument("--proba", action="store_true", help="also one probability column per class")
    p.add_argument("--trusted", action="store_true",
                   help="load a joblib/pickle model file: loading one EXECUTES any code it holds, so only for a "
                        "file you made or trust (without it such a file is refused before it is read; .skops "
                        "files never need it)")
    p.set_defaults(func=cmd_predict)
