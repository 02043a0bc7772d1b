"""The dataset of a study: stored from client-sent meta-features, or from uploaded data
whose meta-features are computed here.

A dataset known by its meta-features only is registered with source ``service`` (id
``service-<name>``; the same name with the same meta-features maps onto the same row,
with other meta-features it is refused as a conflict, so nothing stored is overwritten);
uploaded data (CSV or Parquet bytes) are read by the project's file loader
(:func:`metabo.data.files.load_file`), described by
:func:`~metabo.data.meta_features.compute_meta_features` and stored like ``metabo data
add`` stores a file (same content, same row). Parsing and meta-features are computed
before the store is touched, so a bad upload stores nothing; data whose target is not of
at least two classes (one class, or a regression target) are refused.
"""

from __future__ import annotations

import base64
import binascii
import math
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from metabo.exceptions import InputDataError
from metabo.service.errors import ConflictError

if TYPE_CHECKING:
    from metabo.data.dataset import Dataset
    from metabo.kb.store import KnowledgeBase

SOURCE = "service"


@dataclass(frozen=True)
class PreparedDataset:
    """What is written for a study's dataset: the uploaded data (None when known by its
    meta-features only) and the meta-features (NaN: undefined)."""

    name: str
    meta_features: Mapping[str, float]
    data: Dataset | None = None

    def store(self, kb: KnowledgeBase) -> str:
        """Write the dataset and its meta-features (call inside a transaction); its id."""
        from metabo.kb.datasets import meta_feature_values

        if self.data is not None:
            return kb.add_dataset(self.data, self.meta_features)
        with kb.transaction():
            dataset_id = kb.register_dataset(name=self.name, source=SOURCE)
            stored = {str(n): math.nan if v is None else float(v) for n, v in meta_feature_values(kb, dataset_id)}
            if stored and not _same(stored, self.meta_features):
                raise ConflictError(
                    f"dataset name {self.name!r} is taken by a dataset with other meta-features; choose another "
                    f"name, or send dataset_id {dataset_id!r} to tune that one")
            kb.add_meta_features(dataset_id, self.meta_features)
        return dataset_id


def _same(stored: Mapping[str, float], sent: Mapping[str, float]) -> bool:
    """Whether the meta-features ``sent`` are those ``stored`` (NaN equal to NaN/missing)."""
    names = set(stored) | set(sent)
    a = [stored.get(n, math.nan) for n in sorted(names)]
    b = [sent.get(n, math.nan) for n in sorted(names)]
    return all((math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=1e-12, abs_tol=0.0)
               for x, y in zip(a, b, strict=True))


def from_meta_features(name: str, meta_features: Mapping[str, float | None]) -> PreparedDataset:
    """A dataset described by client-sent meta-features (null: undefined, stored as NULL)."""
    values = {str(k): (math.nan if v is None else float(v)) for k, v in meta_features.items()}
    if not any(math.isfinite(v) for v in values.values()):
        raise InputDataError("every meta-feature is null: send at least one defined value")
    return PreparedDataset(name, values)


def from_upload(name: str, fmt: str, content_base64: str, target: str, *, landmarkers: bool = True,
                seed: int = 0) -> PreparedDataset:
    """Uploaded CSV/Parquet bytes loaded with the project's file loader, with their
    meta-features (module docstring)."""
    from metabo.data.files import load_file
    from metabo.data.meta_features import compute_meta_features

    try:
        raw = base64.b64decode(content_base64, validate=True)
    except (binascii.Error, ValueError) as e:
        raise InputDataError(f"content_base64 is not valid base64: {e}") from e
    if not raw:
        raise InputDataError("the uploaded data are empty")
    with tempfile.TemporaryDirectory(prefix="metabo-upload-") as tmp:
        path = Path(tmp) / f"upload.{fmt}"
        path.write_bytes(raw)
        try:
            dataset = load_file(path, target, name=name, fmt=fmt)  # type: ignore[arg-type]
        except InputDataError as e:  # the server's temporary path means nothing to the client
            raise InputDataError(str(e).replace(str(path), f"the uploaded {fmt}")) from None
    _check_classification(dataset, target)
    values = compute_meta_features(dataset, seed=seed, landmarkers=landmarkers, flagged="exclude")
    return PreparedDataset(name, values, dataset)


def _check_classification(dataset: Dataset, target: str) -> None:
    """Refuse data the service cannot tune on: every metric it knows is a classification
    error, so a numeric target (regression) or a single class has nothing to learn."""
    if dataset.task != "classification":
        raise InputDataError(f"target {target!r} is numeric with {dataset.y.nunique()} distinct values (regression); "
                             "the service tunes classifiers: send a target of class labels")
    if dataset.n_classes < 2:
        raise InputDataError(f"target {target!r} has one class only: a classifier needs at least two")
