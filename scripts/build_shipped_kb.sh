#!/usr/bin/env bash
# Rebuild the shipped knowledge base (data/kb/) from scratch, resumably, measured as
# `metabo tune` measures (--cv auto: 5-fold CV of the 80% not kept for test up to 3,000
# rows, else the 60/20/20 hold-out), every algorithm of the default space.
#   bash scripts/build_shipped_kb.sh [KB_FILE]
# Re-running the same command continues where a killed build stopped (the configurations
# are evaluated round-robin: the i-th of every algorithm on every dataset before any
# (i+1)-th, so a stopped build is a dense matrix); then the store is exported to data/kb/
# as Parquet (what git holds and `pip install .` ships).
set -euo pipefail
cd "$(dirname "$0")/.."
KB="${1:-build/shipped.duckdb}"
mkdir -p "$(dirname "$KB")"
metabo kb build --keel balanced --algorithms all --configs 50 --seed 0 --cv auto \
  --metrics error_rate balanced_error_rate --time-limit 10 --memory-limit 4096 --n-jobs 2 \
  --kb "$KB" -v
rm -rf data/kb
metabo kb export data/kb --kb "$KB"
