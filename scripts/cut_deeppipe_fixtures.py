"""Cut the few-kilobyte PMF and Tensor-OBOE test fixtures from the real deeppipe-api files.

The fixtures keep the real files' layout and values: a few error-matrix rows (datasets)
and a few pipelines, with their real vectors and selectors. For Tensor-OBOE the
pipeline space is narrowed (``classification.json`` keeps a sub-grid) and the
pipelines kept are exactly that sub-grid's, cut at their indices in the full
enumeration, so the reader's decoding check holds on the fixture as on the full file.

Usage: python scripts/cut_deeppipe_fixtures.py [--root CACHE] [--out tests/fixtures/metadatasets/deeppipe]
(``--root``: the folder the wheel was extracted to; default: fetch it.)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from metabo.metadatasets.deeppipe import DATA_DIR, PMF, TensorOBOE, enumerate_pipelines

PMF_DATASET_ROWS = [0, 1, 2]
TOBOE_DATASET_ROWS = [0, 1, 2]
#: The Tensor-OBOE sub-grid: every imputer strategy, encoder and scaler option (their
#: one-hot columns stay whole), no reducer, KNN on a 2 x 2 grid and GaussianNB.
TOBOE_SUBSPACE = {
    "dim_reducer": {"algorithms": [None], "hyperparameters": {}},
    "estimator": {"algorithms": ["KNN", "GNB"],
                  "hyperparameters": {"KNN": {"n_neighbors": [1, 3], "p": [1, 2]}, "GNB": {}}},
}


def _dump(obj: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # json writes NaN as the NaN literal, as the real files do
    path.write_text(json.dumps(obj, separators=(", ", ": ")))


def cut_pmf(src: PMF, out: Path) -> None:
    sel = src.selectors
    keep: list[int] = []
    for group in [(0, 0), (0, 1), (1, 2), (1, 7), (0, 7)]:
        keep += np.flatnonzero((sel[:, 0] == group[0]) & (sel[:, 1] == group[1]))[:2].tolist()
    keep = sorted(keep)
    rows = {i: r for i, r in src.file.iter_rows("error") if i in PMF_DATASET_ROWS}
    ids = src.file.load("original_dataset_id")
    _dump({
        "pipelines": src.vectors[keep].tolist(),
        "error": [rows[i][keep].tolist() for i in PMF_DATASET_ROWS],
        "list_for_concatenator": src.file.load("list_for_concatenator"),
        "list_for_selector": sel[keep].tolist(),
        "algorithm_domain": src.domain,
        "tasks_index": [[0], [1], [2]],
        "init_ids": [[], [], []],
        "original_dataset_id": [ids[i] for i in PMF_DATASET_ROWS],
        "_cut_from": {"pipelines": keep, "datasets": PMF_DATASET_ROWS},
    }, out / DATA_DIR / PMF.filename)


def cut_tensor_oboe(src: TensorOBOE, out: Path) -> None:
    space = json.loads((src.root / DATA_DIR / "classification.json").read_text())
    space.update(TOBOE_SUBSPACE)
    full = [json.dumps(p, sort_keys=True) for p in src.pipelines]
    position = {p: i for i, p in enumerate(full)}
    keep = [position[json.dumps(p, sort_keys=True)] for p in enumerate_pipelines(space)]
    rows = {i: r for i, r in src.file.iter_rows("error") if i in TOBOE_DATASET_ROWS}
    _dump(space, out / DATA_DIR / "classification.json")
    _dump({
        "pipelines": src.vectors[keep].tolist(),
        "error": [rows[i][keep].tolist() for i in TOBOE_DATASET_ROWS],
        "list_for_concatenator": src.file.load("list_for_concatenator"),
        "list_for_selector": src.selectors[keep].tolist(),
        "algorithm_domain": src.domain,
        "tasks_index": [[0], [1], [2]],
        "init_ids": [{}, {}, {}],
        "_cut_from": {"pipelines": keep, "datasets": TOBOE_DATASET_ROWS},
    }, out / DATA_DIR / TensorOBOE.filename)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", help="folder holding deeppipe_api/experiments/data (default: fetch)")
    ap.add_argument("--out", default="tests/fixtures/metadatasets/deeppipe")
    args = ap.parse_args()
    pmf = PMF(args.root) if args.root else PMF.fetch()
    oboe = TensorOBOE(pmf.root)
    out = Path(args.out)
    cut_pmf(pmf, out)
    cut_tensor_oboe(oboe, out)
    for path in sorted(out.rglob("*.json")):
        print(f"{path}: {path.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
