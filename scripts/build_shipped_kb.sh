#!/usr/bin/env bash
# Build (or resume) the shipped knowledge base's tune-protocol build and export the store
# to data/kb/, resumably:
#   metabo kb import data/kb --kb build/shipped.duckdb   # once: what is shipped so far
#   bash scripts/build_shipped_kb.sh [KB_FILE]
# Measured as `metabo tune` measures (--cv auto: 5-fold CV of the 80% not kept for test up
# to 3,000 rows, else the 60/20/20 hold-out), every algorithm of the default space. The
# configurations are evaluated round-robin (the i-th of every algorithm on every dataset
# before any (i+1)-th), so a stopped build is a dense matrix and re-running the command
# continues where it stopped. Out-of-fold predictions stay in KB_FILE (--predictions); the
# export to data/kb/ (what git holds and `pip install .` ships) leaves them out.
set -euo pipefail
cd "$(dirname "$0")/.."
KB="${1:-build/shipped.duckdb}"
mkdir -p "$(dirname "$KB")"
metabo kb build --keel balanced --algorithms all --configs 50 --seed 0 --cv auto \
  --metrics error_rate balanced_error_rate --time-limit 10 --memory-limit 4096 --n-jobs 2 \
  --predictions --kb "$KB" -v
rm -rf data/kb
metabo kb export data/kb --without predictions --kb "$KB"
