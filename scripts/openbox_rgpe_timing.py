"""Seconds per suggestion of OpenBox's RGPE advisor (surrogate ``tlbo_rgpe_gp``).

Run with a Python that has ``openbox`` (it pins old numpy/ConfigSpace, so keep it in its
own virtual environment); ``scripts/bench_rlgp_speed.py`` calls it. Reads a JSON file:
``{"space": [{"name", "low", "high", "log"}...], "sources": [[[x...], y]...]...,
"target": [[x...], y]..., "n_observations": [10, 50], "repeats": 3, "seed": 0}`` and
prints ``{"wall": {"n": seconds}, "cpu": {"n": seconds}}`` as JSON: the median wall and
process CPU time of ``get_suggestion`` after feeding ``n`` target observations (after one
untimed suggestion at the same ``n``).
"""

import json
import sys
import time

import numpy as np
from openbox import Advisor, History, Observation
from openbox import space as sp


def main(path: str) -> None:
    spec = json.load(open(path))
    cs = sp.Space(seed=spec["seed"])
    cs.add_variables([sp.Real(h["name"], h["low"], h["high"], log=h["log"]) for h in spec["space"]])
    names = [h["name"] for h in spec["space"]]

    def config(x):
        return sp.Configuration(cs, {n: float(v) for n, v in zip(names, x)})

    histories = []
    for k, source in enumerate(spec["sources"]):
        h = History(task_id=f"source-{k}", config_space=cs)
        for x, y in source:
            h.update_observation(Observation(config=config(x), objectives=[y]))
        histories.append(h)
    out, cpu_out = {}, {}
    for n in spec["n_observations"]:
        advisor = Advisor(cs, surrogate_type="tlbo_rgpe_gp", transfer_learning_history=histories,
                          acq_type="ei", acq_optimizer_type="random_scipy", initial_trials=1,
                          random_state=spec["seed"], logger_kwargs={"force_init": False})
        for x, y in spec["target"][:n]:
            advisor.update_observation(Observation(config=config(x), objectives=[y]))
        advisor.get_suggestion()
        times, cpu = [], []
        for _ in range(spec["repeats"]):
            start, start_cpu = time.perf_counter(), time.process_time()
            advisor.get_suggestion()
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
        out[str(n)] = float(np.median(times))
        cpu_out[str(n)] = float(np.median(cpu))
    print(json.dumps({"wall": out, "cpu": cpu_out}))


if __name__ == "__main__":
    main(sys.argv[1])
