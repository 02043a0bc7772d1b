"""Optuna's TPE over metabo's CASH space on a CSV (target column ``y``), in this project's
environment: ``python optuna_runner.py TRAIN TEST PRED BUDGET SEED``.

The search and the refit on every row of TRAIN are :func:`benchmarks.automl.optuna_tpe`,
within BUDGET seconds counted from this script's start (imports included); PRED gets one
``prediction`` per row of TEST (read as ``metabo predict`` reads it). Prints one JSON line:
trials, seconds to the first model, predict seconds, Optuna's version.
"""

import time

STARTED = time.monotonic()  # before the imports: they count towards the budget

import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import optuna  # noqa: E402

# the repository's root, for the benchmarks package (not installed), when run by hand: the
# benchmark's tool runs have it on PYTHONPATH (benchmarks.automl.one_thread_env). Appended,
# so the metabo found first stays the one on PYTHONPATH or installed
sys.path.append(str(Path(__file__).resolve().parents[2]))

from benchmarks.automl import TARGET, optuna_tpe  # noqa: E402
from metabo.cli.predict_cmds import predictions  # noqa: E402
from metabo.data.loaders import load_dataset  # noqa: E402
from metabo.optimizer.budget import TimeBudget  # noqa: E402

train, test, pred, budget, seed = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
clock = TimeBudget(budget, start=STARTED)
result = optuna_tpe(load_dataset(train, target=TARGET), budget=clock, seed=seed)
fitted = clock.elapsed()
start = time.monotonic()
with tempfile.TemporaryDirectory() as tmp:  # predicted as metabo's model is: saved, loaded, columns by kind
    result.model.save(Path(tmp) / "model.skops")
    predictions(Path(tmp) / "model.skops", test).to_csv(pred, index=False)
print(json.dumps({"trials": result.trials, "failed": result.failed, "first_model": result.first_model,
                  "fitted_after": fitted, "predict_seconds": time.monotonic() - start, "best": result.algorithm,
                  "valid_error": result.valid_error, "version": optuna.__version__}))
