"""A fake OpenML dataset: its ARFF text, target, features and qualities."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import arff
import pandas as pd

#: OpenML's answers to ``data/qualities/{id}`` for a dataset without qualities.
NO_QUALITIES: dict[int, str] = {
    362: "No qualities found",
    363: "Dataset not processed yet",
    364: "Dataset processed with error",
}


@dataclass
class FakeDataset:
    """A dataset: its ARFF text, target and qualities.

    ``qualities=None``: the server has none and answers ``data/qualities/{id}`` with
    OpenML error ``qualities_code`` (:data:`NO_QUALITIES`; 364 carries
    ``processing_error`` as its additional information). ``deleted``: runs still list it,
    its own endpoints answer "Unknown dataset" (111, 361 for qualities) and ``data/list``
    leaves it out.
    """

    did: int
    name: str
    arff_text: str
    target: str | None
    qualities: dict[str, float] | None = None
    version: int = 1
    qualities_code: int = 362
    processing_error: str | None = None
    deleted: bool = False

    @property
    def file_id(self) -> int:
        return 100_000 + self.did

    @property
    def md5(self) -> str:
        return hashlib.md5(self.arff_text.encode("utf-8")).hexdigest()  # noqa: S324 - OpenML's checksum

    @classmethod
    def from_frame(
        cls,
        did: int,
        name: str,
        frame: pd.DataFrame,
        *,
        target: str,
        qualities: Mapping[str, float] | None = None,
        with_qualities: bool = True,
    ) -> FakeDataset:
        """Build a dataset from a table: object/category columns become nominal.

        ``qualities`` extend (and override) basic ones computed from the table;
        ``with_qualities=False`` makes the server answer "no qualities" (code 362).
        """
        attributes: list[tuple[str, Any]] = []
        columns: list[list[Any]] = []
        for col in frame.columns:
            s = frame[col]
            if isinstance(s.dtype, pd.CategoricalDtype) or not pd.api.types.is_numeric_dtype(s):
                cats = (list(s.cat.categories) if isinstance(s.dtype, pd.CategoricalDtype)
                        else sorted(s.dropna().astype(str).unique()))
                attributes.append((str(col), [str(c) for c in cats]))
                columns.append([None if pd.isna(v) else str(v) for v in s])
            else:
                kind = "INTEGER" if pd.api.types.is_integer_dtype(s) else "REAL"
                attributes.append((str(col), kind))
                columns.append([None if pd.isna(v) else (int(v) if kind == "INTEGER" else float(v))
                                for v in s])
        rows = [list(r) for r in zip(*columns, strict=True)]
        text = arff.dumps({"relation": name, "attributes": attributes, "data": rows})
        computed = _basic_qualities(frame, target) if with_qualities else None
        if computed is not None and qualities:
            computed.update({k: float(v) for k, v in qualities.items()})
        return cls(did=did, name=name, arff_text=text, target=target, qualities=computed)

    def features(self) -> list[dict[str, Any]]:
        """Name, type, nominal values and missing count of each column (from the ARFF)."""
        parsed = arff.loads(self.arff_text)
        out = []
        for j, (name, kind) in enumerate(parsed["attributes"]):
            missing = sum(1 for row in parsed["data"] if row[j] is None)
            nominal = kind if isinstance(kind, list) else None
            dtype = "nominal" if nominal is not None else ("string" if kind == "STRING" else "numeric")
            out.append({"name": name, "data_type": dtype, "nominal": nominal, "missing": missing})
        return out


def _basic_qualities(frame: pd.DataFrame, target: str) -> dict[str, float]:
    y = frame[target]
    symbolic = sum(
        isinstance(frame[c].dtype, pd.CategoricalDtype) or not pd.api.types.is_numeric_dtype(frame[c])
        for c in frame.columns
    )
    counts = y.value_counts()
    nominal_target = isinstance(y.dtype, pd.CategoricalDtype) or not pd.api.types.is_numeric_dtype(y)
    return {
        "NumberOfInstances": float(len(frame)),
        "NumberOfFeatures": float(frame.shape[1]),
        "NumberOfClasses": float(y.nunique()) if nominal_target else 0.0,
        "NumberOfMissingValues": float(frame.isna().sum().sum()),
        "NumberOfInstancesWithMissingValues": float(frame.isna().any(axis=1).sum()),
        "NumberOfNumericFeatures": float(frame.shape[1] - symbolic),
        "NumberOfSymbolicFeatures": float(symbolic),
        "MajorityClassSize": float(counts.max()) if nominal_target else float("nan"),
        "MinorityClassSize": float(counts.min()) if nominal_target else float("nan"),
    }
