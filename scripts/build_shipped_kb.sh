#!/usr/bin/env bash
# Rebuild the shipped knowledge base (data/kb/) from scratch, resumably.
#   bash scripts/build_shipped_kb.sh [KB_FILE]
# Re-running the same command continues where a killed build stopped; then the store
# is exported to data/kb/ as Parquet (what git holds and `pip install .` ships).
set -euo pipefail
cd "$(dirname "$0")/.."
KB="${1:-build/shipped.duckdb}"
mkdir -p "$(dirname "$KB")"
metabo kb build --keel balanced \
  --algorithms decision_tree knn linear_svm logistic_regression qda gaussian_nb lda \
               random_forest extra_trees adaboost lightgbm svm_rbf \
  --configs 50 --seed 0 --max-train 2000 --time-limit 30 --memory-limit 4096 --n-jobs 2 \
  --kb "$KB" -v
rm -rf data/kb
metabo kb export data/kb --kb "$KB"
