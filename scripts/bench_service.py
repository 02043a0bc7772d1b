"""Service benchmark: many clients asking and telling on one study of a real server.

Starts ``metabo serve`` on a free loopback port (a subprocess, on a fresh store unless
``--kb``), creates one study, and runs ``--clients`` threads, each with its own HTTP
client, doing ``--trials`` ask/tell pairs (the objective is a hash of the configuration,
so the numbers measure the service, not a model). Bounded: at most 64 clients and 2,000
trials each, and no client asks again after ``--time-limit`` seconds.

Prints (no assertions; the aims are in the issue): throughput (ask/tell pairs and
requests per second), p50/p99 latency of ask and of tell, lost tells (told but not
complete with the told value in the history, or without a run in the store: must be 0),
duplicate suggestions (configurations handed out more than once: must be 0), and the
server's peak memory (VmHWM of its process).

Usage: python scripts/bench_service.py [--clients 16] [--trials 200] [--strategy random|gp]
       [--algorithms ...] [--time-limit 300] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from metabo.kb import KnowledgeBase
from metabo.service.client import RemoteOptimizer, ServiceClient
from metabo.testing.service import ServerProcess, objective

MAX_CLIENTS, MAX_TRIALS = 64, 2000
META = {"NumberOfInstances": 1000.0, "NumberOfFeatures": 20.0, "NumberOfClasses": 2.0}


def client_loop(url: str, study: str, trials: int, deadline: float, out: dict[str, list], lock: threading.Lock) -> None:
    """One client: ask/tell until ``trials`` are told or the deadline passes."""
    asks, tells, told, asked = [], [], [], []
    try:
        with RemoteOptimizer(url, study) as opt:
            for _ in range(trials):
                if time.monotonic() > deadline:
                    break
                t0 = time.perf_counter()
                trial = opt.ask()
                t1 = time.perf_counter()
                asked.append(trial.config_id)
                value = objective(trial.config_id)
                opt.tell(trial, value)
                t2 = time.perf_counter()
                asks.append(t1 - t0)
                tells.append(t2 - t1)
                told.append((trial.number, trial.config_id, value))
    except Exception as e:  # noqa: BLE001 - counted and printed, the others go on
        with lock:
            out["errors"].append(repr(e))
    with lock:
        out["ask"] += asks
        out["tell"] += tells
        out["told"] += told
        out["asked"] += asked


def _ms(values: list[float], q: float) -> float:
    return float(np.percentile(values, q) * 1000) if values else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--trials", type=int, default=200, help="ask/tell pairs per client")
    parser.add_argument("--strategy", default="random", help="random (default), gp, or another of the service's")
    parser.add_argument("--algorithms", nargs="+", default=None, help="the space (default: the whole CASH space)")
    parser.add_argument("--time-limit", type=float, default=300.0, help="seconds after which no client asks again")
    parser.add_argument("--kb", type=Path, default=None, help="the store (default: a fresh temporary one)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    if not 1 <= args.clients <= MAX_CLIENTS or not 1 <= args.trials <= MAX_TRIALS or args.time_limit <= 0:
        parser.error(f"--clients in 1..{MAX_CLIENTS}, --trials in 1..{MAX_TRIALS}, --time-limit > 0")

    with tempfile.TemporaryDirectory(prefix="bench-service-") as tmp:
        kb_path = args.kb or Path(tmp) / "kb.duckdb"
        with ServerProcess(kb_path) as server:
            api = ServiceClient(server.url)
            dataset_id = api.add_dataset("bench", META)
            space = {"algorithms": args.algorithms} if args.algorithms else {}
            study = api.create_study(dataset_id=dataset_id, strategy=args.strategy, space=space)["study_id"]
            out: dict[str, list] = {"ask": [], "tell": [], "told": [], "asked": [], "errors": []}
            lock = threading.Lock()
            deadline = time.monotonic() + args.time_limit
            threads = [threading.Thread(target=client_loop, args=(server.url, study, args.trials, deadline, out, lock))
                       for _ in range(args.clients)]
            start = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            elapsed = time.perf_counter() - start
            history = {t["number"]: t for t in api.request("GET", f"/studies/{study}/history")["trials"]}
            peak_mb = server.peak_memory_mb()
            api.close()
        with KnowledgeBase(kb_path, read_only=True) as kb:
            stored = set(kb.query("SELECT config_id FROM runs WHERE source = ?", [f"session:{study}"])["config_id"])

    lost = sum(1 for number, cid, value in out["told"]
               if number not in history or history[number]["state"] != "complete"
               or history[number]["value"] != value or cid not in stored)
    duplicates = len(out["asked"]) - len(set(out["asked"]))
    dup_history = len(history) - len({t["config_id"] for t in history.values()})
    pairs = len(out["told"])
    figures = {
        "clients": args.clients, "trials_per_client": args.trials, "strategy": args.strategy,
        "space": args.algorithms or "cash", "pairs_told": pairs, "seconds": round(elapsed, 2),
        "pairs_per_second": round(pairs / elapsed, 1), "requests_per_second": round(2 * pairs / elapsed, 1),
        "ask_p50_ms": round(_ms(out["ask"], 50), 1), "ask_p99_ms": round(_ms(out["ask"], 99), 1),
        "tell_p50_ms": round(_ms(out["tell"], 50), 1), "tell_p99_ms": round(_ms(out["tell"], 99), 1),
        "lost_tells": lost, "duplicate_suggestions": max(duplicates, dup_history),
        "server_peak_memory_mb": round(peak_mb, 1), "client_errors": len(out["errors"]),
        "stopped_by_time_limit": pairs < args.clients * args.trials,
    }
    for key, value in figures.items():
        print(f"{key:>24}: {value}")
    for e in out["errors"][:5]:
        print(f"  client error: {e}", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0 if lost == 0 and figures["duplicate_suggestions"] == 0 and not out["errors"] else 1


if __name__ == "__main__":
    sys.exit(main())
