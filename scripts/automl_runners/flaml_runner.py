"""FLAML on a CSV (target column ``y``) in FLAML's own virtual environment:
``python flaml_runner.py TRAIN TEST PRED BUDGET SEED``; writes PRED (column ``prediction``)
and prints one JSON line (trials, seconds to the first model, FLAML's version)."""

import json
import sys
import time

import flaml
import pandas as pd
from flaml import AutoML

train, test, pred, budget, seed = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
frame = pd.read_csv(train)
X, y = frame.drop(columns="y"), frame["y"].astype(str)
for c in X.columns:
    if X[c].dtype == object:
        X[c] = X[c].astype("category")
automl = AutoML()
automl.fit(X, y, task="classification", time_budget=budget, metric="accuracy", starting_points="data", n_jobs=1,
           seed=seed, verbose=0)
Xt = pd.read_csv(test)
for c in Xt.columns:
    if c in X.columns and str(X[c].dtype) == "category":
        Xt[c] = pd.Categorical(Xt[c], categories=X[c].cat.categories)
pd.DataFrame({"prediction": automl.predict(Xt)}).to_csv(pred, index=False)
history = automl.config_history  # iteration -> (estimator, config, seconds since the start)
times = [v[2] for v in history.values() if len(v) > 2 and v[2] is not None]
print(json.dumps({"trials": len(history), "first_model_seconds": min(times) if times else None,
                  "best_estimator": automl.best_estimator, "flaml": flaml.__version__}))
