"""FLAML on a CSV (target column ``y``) in FLAML's own virtual environment:
``python flaml_runner.py TRAIN TEST PRED BUDGET SEED``.

``AutoML.fit(task="classification", time_budget=BUDGET, metric="accuracy",
starting_points="data", n_jobs=1, seed=SEED)``: ``starting_points="data"`` is FLAML's
zero-shot start (data-dependent defaults from its meta-learned portfolio, flaml/default),
the rest FLAML's defaults (retrain on the full data after the search). Writes PRED (one
``prediction`` per row of TEST) and prints one JSON line: trials (``AutoML.modelcount``,
every configuration tried; ``config_history`` keeps only the improvements), seconds from
this script's start to the first model, predict seconds, FLAML's version.
"""

import time

STARTED = time.monotonic()  # before the imports, as the other tools' clocks

import json  # noqa: E402
import sys  # noqa: E402

import flaml  # noqa: E402
import pandas as pd  # noqa: E402
from flaml import AutoML  # noqa: E402

train, test, pred, budget, seed = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
frame = pd.read_csv(train)
X, y = frame.drop(columns="y"), frame["y"].astype(str)
for c in X.columns:
    if X[c].dtype == object:
        X[c] = X[c].astype("category")
automl = AutoML()
fit_start = time.monotonic()
automl.fit(X, y, task="classification", time_budget=budget, metric="accuracy", starting_points="data", n_jobs=1,
           seed=seed, verbose=0)
start = time.monotonic()
Xt = pd.read_csv(test)
for c in Xt.columns:
    if c in X.columns and str(X[c].dtype) == "category":
        Xt[c] = pd.Categorical(Xt[c], categories=X[c].cat.categories)
pd.DataFrame({"prediction": automl.predict(Xt)}).to_csv(pred, index=False)
history = automl.config_history  # iteration -> (estimator, config, seconds since fit's start), improvements only
times = [v[2] for v in history.values() if len(v) > 2 and v[2] is not None]
print(json.dumps({"trials": automl.modelcount, "improvements": len(history),
                  "first_model": fit_start - STARTED + min(times) if times else None,
                  "predict_seconds": time.monotonic() - start, "best": automl.best_estimator,
                  "version": flaml.__version__}))
