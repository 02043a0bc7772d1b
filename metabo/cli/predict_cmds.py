"""``metabo predict MODEL DATA``: one prediction per row of a table, from a saved model."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from metabo.exceptions import InputDataError

if TYPE_CHECKING:
    from metabo.ensembles.model import EnsembleModel


def predictions(model_path: str | os.PathLike[str], data: str | os.PathLike[str], *, target: str | None = None,
                proba: bool = False) -> pd.DataFrame:
    """The predictions of the model saved at ``model_path``
    (:meth:`~metabo.ensembles.model.EnsembleModel.save`, by ``metabo tune --save-model``)
    for every row of the table ``data``: a ``prediction`` column (the class labels as
    given at fit) and, with ``proba``, ``proba_<label>`` per class. The table's columns
    must be those the model was fitted on (in any order; ``target`` is dropped), and each
    column is read as the kind it had at fit (:func:`as_fitted_kinds`)."""
    from metabo.data.dataset import feature_frame
    from metabo.data.files import read_table
    from metabo.ensembles.model import EnsembleModel

    model = EnsembleModel.load(model_path)
    frame, _ = read_table(data)
    frame = feature_frame(frame.drop(columns=[target]) if target in frame.columns else frame)
    X = model.aligned(as_fitted_kinds(frame, fitted_kinds(model)), strict=True)
    out = pd.DataFrame({"prediction": model.predict(X)})
    if proba:
        P = model.predict_proba(X)
        for k, label in enumerate(model.classes_):
            out[f"proba_{label}"] = P[:, k]
    return out


def fitted_kinds(model: EnsembleModel) -> dict[str, str]:
    """``{column: "numeric" | "nominal"}`` as the model's preprocessing
    (:func:`metabo.evaluation.preprocessing.make_preprocessor`) split its columns at fit;
    empty when its first member's pipeline is not of that shape."""
    kinds: dict[str, str] = {}
    preprocess = getattr(model.pipelines_[0], "named_steps", {}).get("preprocess")
    for name, _, columns in getattr(preprocess, "transformers_", ()):
        if name in ("numeric", "nominal"):
            kinds.update(dict.fromkeys(map(str, columns), name))
    return kinds


def as_fitted_kinds(frame: pd.DataFrame, kinds: dict[str, str]) -> pd.DataFrame:
    """The feature frame ``frame`` with every column of ``kinds`` of the kind it had at fit.

    A file's column is numeric or not by what it holds, so a batch to predict on can read
    otherwise than the table the model was fitted on: a nominal column of numbers
    (declared nominal, as ARFF, OpenML or ``load_file(nominal=...)`` do, or one whose
    fitted values included words) would be matched as "1.0" against the fitted
    category "1", so against no category at all; its numbers become the labels the fit
    gave them. A numeric column read as text is parsed as numbers
    (``?`` and empty are missing); a value that is not one raises
    :class:`InputDataError` naming the column.
    """
    from metabo.data.dataset import _num_label  # the label the fit gave a number: 3, not 3.0

    out = frame.copy()
    for c, kind in kinds.items():
        if c not in out.columns:
            continue
        col = out[c]
        numeric = isinstance(col.dtype, np.dtype) and col.dtype.kind in "fiu"
        if kind == "nominal" and numeric:
            out[c] = col.map(lambda v: v if pd.isna(v) else _num_label(v)).astype("category")
        elif kind == "numeric" and not numeric:
            text = col.astype(object).map(lambda v: v if pd.isna(v) else str(v).strip())
            text = text.where(~text.isin(["?", ""]), np.nan)
            values = pd.to_numeric(text, errors="coerce")
            bad = np.flatnonzero(values.isna().to_numpy() & text.notna().to_numpy())
            if len(bad):
                raise InputDataError(
                    f"column {c!r} held numbers when the model was fitted, but {len(bad)} of its values "
                    f"here are not numbers (row {bad[0] + 1}: {text.iloc[bad[0]]!r}); fix or empty them")
            out[c] = values.astype(np.float64)
    return out


def _write_atomic(frame: pd.DataFrame, path: Path) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", newline="") as f:
            frame.to_csv(f, index=False)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def cmd_predict(args: argparse.Namespace) -> int:
    if args.out is not None and not args.out.parent.is_dir():
        raise InputDataError(f"no folder {args.out.parent} to write {args.out.name} in")
    out = predictions(args.model, args.data, target=args.target, proba=args.proba)
    if args.out is None:
        out.to_csv(sys.stdout, index=False)
    else:
        _write_atomic(out, args.out)
        print(f"wrote {len(out)} predictions to {args.out}", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("predict", parents=[common], help="predict every row of a table with a saved model")
    p.add_argument("model", help="a model file saved by metabo tune --save-model")
    p.add_argument("data", help="a CSV/Parquet/ARFF table with the columns the model was fitted on, in any "
                                "order; a missing column or one the model does not know is refused")
    p.add_argument("--target", help="a column of the table to leave out (the class, when the table has it); "
                                    "the only column besides the model's allowed")
    p.add_argument("--out", type=Path, help="write the predictions there (CSV) instead of to standard output")
    p.add_argument("--proba", action="store_true", help="also one probability column per class")
    p.set_defaults(func=cmd_predict)
