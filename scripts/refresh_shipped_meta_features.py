"""Recompute the meta-features of the shipped knowledge base (data/kb/) with the current
definitions (:mod:`metabo.data.meta_features`), leaving every other table as it is.

    python scripts/refresh_shipped_meta_features.py [--seed 0] [--out data/kb]

When a definition changes (OpenML's for the OpenML-named features, say), the stored values
of the shipped tasks must follow, or a new dataset's meta-features would be compared with
values of another definition. Each dataset is loaded from its spec as ``metabo kb build``
loaded it (KEEL columns that lost their decimal points flagged, so left out of the
value-dependent features), checked against its stored fingerprint, and described with
``compute_meta_features(..., flagged="exclude")`` under ``--seed``; its rows of source
``metabo`` are replaced in one transaction. Only ``meta_features.parquet`` and the
manifest's count are rewritten.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import _repo  # noqa: F401 - first: the repository's root on sys.path, for benchmarks/ (not installed)
from tqdm import tqdm

from benchmarks.transfer_live import dataset_spec
from metabo.data.loaders import load_dataset
from metabo.data.meta_features import compute_meta_features
from metabo.kb import KnowledgeBase
from metabo.kb.parquet_io import export_parquet, import_parquet

SHIPPED = Path(__file__).resolve().parents[1] / "data" / "kb"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=0, help="seed of the landmarkers' folds (the build's: 0)")
    p.add_argument("--source", default=str(SHIPPED), help="the export to refresh")
    p.add_argument("--out", default=str(SHIPPED), help="where to write meta_features.parquet and the manifest")
    args = p.parse_args()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        with KnowledgeBase(Path(tmp) / "kb.duckdb") as kb:
            import_parquet(kb, args.source)
            ids = kb.query("SELECT dataset_id FROM datasets ORDER BY dataset_id")["dataset_id"].tolist()
            for dataset_id in tqdm(ids, desc="meta-features", unit="ds"):
                spec = dataset_spec(kb, dataset_id)
                data = load_dataset(spec, **({"lost_decimals": "flag"} if spec.startswith("keel:") else {}))
                stored = kb.get_dataset(dataset_id)["fingerprint"]
                if stored is not None and data.fingerprint != stored:
                    raise SystemExit(f"{spec} loads other content than {dataset_id} holds; not refreshed")
                values = compute_meta_features(data, seed=args.seed, landmarkers=True, flagged="exclude")
                with kb.transaction() as tx:
                    tx.execute("DELETE FROM meta_features WHERE dataset_id = ? AND source = 'metabo'", [dataset_id])
                    kb.add_meta_features(dataset_id, values)
            counts = export_parquet(kb, Path(tmp) / "export")
        out = Path(args.out)
        shutil.copyfile(Path(tmp) / "export" / "meta_features.parquet", out / "meta_features.parquet")
        manifest = json.loads((Path(args.source) / "manifest.json").read_text())
        manifest["rows"]["meta_features"] = counts["meta_features"]
        (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"{len(ids)} datasets, {counts['meta_features']} meta-feature values, {time.perf_counter() - t0:.0f} s; "
          f"wrote {out / 'meta_features.parquet'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
