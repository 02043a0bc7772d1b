"""AutoGluon on a CSV (target column ``y``) in AutoGluon's own virtual environment:
``python autogluon_runner.py TRAIN TEST PRED BUDGET SEED [PRESET]``.

AutoGluon's front door with its defaults: ``TabularPredictor(label="y",
eval_metric="accuracy").fit(train, time_limit=BUDGET, presets=PRESET)`` (``PRESET``
``medium_quality`` by default, AutoGluon's own default: its model portfolio, zero-shot
hyperparameters and a weighted ensemble of them; ``best_quality`` adds bagging and stacking),
with ``num_cpus=1`` as every tool of the benchmark runs on one core. AutoGluon takes no
seed for its fit; ``SEED`` seeds numpy's and Python's global generators, which its models
draw from. Writes PRED (one ``prediction`` per row of TEST) and prints one JSON line:
trials (the models fitted, ``leaderboard`` rows), predict seconds, the best model and
AutoGluon's version (no time to the first model: AutoGluon's records say how long each
model took, not when it was done).
"""

import time

STARTED = time.monotonic()  # before the imports, as the other tools' clocks

import json  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from autogluon.tabular import TabularPredictor, __version__  # noqa: E402

train, test, pred, budget, seed = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
preset = sys.argv[6] if len(sys.argv) > 6 else "medium_quality"
random.seed(seed)
np.random.seed(seed)
frame = pd.read_csv(train)
frame["y"] = frame["y"].astype(str)
with tempfile.TemporaryDirectory(prefix="autogluon-") as path:
    # the budget as a user passes it (as FLAML's runner does); the benchmark's clock is the
    # whole process's, so imports and reading count against the tool as its overrun
    predictor = TabularPredictor(label="y", eval_metric="accuracy", path=path, verbosity=0).fit(
        frame, time_limit=budget, num_cpus=1, presets=preset)
    start = time.monotonic()
    Xt = pd.read_csv(test)
    pd.DataFrame({"prediction": predictor.predict(Xt)}).to_csv(pred, index=False)
    predict_seconds = time.monotonic() - start
    print(json.dumps({"trials": int(len(predictor.leaderboard(silent=True))), "first_model": None,
                      "predict_seconds": predict_seconds, "best": predictor.model_best, "preset": preset,
                      "version": __version__}))
