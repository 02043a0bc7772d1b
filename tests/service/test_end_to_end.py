"""The real thing: ``metabo serve`` in a subprocess on a free loopback port, two client
processes asking and telling on one study at once, a restart, and the history checked:
no lost tell, no configuration handed out twice, a pending trial still tellable."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from metabo.kb import KnowledgeBase
from metabo.service.client import RemoteOptimizer, ServiceClient
from metabo.testing.service import ServerProcess, objective

N = 15  # trials per worker


@pytest.mark.slow
def test_two_workers_on_one_study_then_a_restart_lose_nothing(kb_path):
    server = ServerProcess(kb_path)
    with server:
        with ServiceClient(server.url) as api:
            study = api.create_study(study_id="e2e", dataset_id="service-toy", strategy="random",
                                     space={"algorithms": ["knn", "decision_tree", "lda"]})["study_id"]
        start = str(time.time() + 5)  # both workers start asking then, once imported
        workers = [subprocess.Popen([sys.executable, "-m", "metabo.testing.service", server.url, study, str(N), start],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
        outputs = [w.communicate(timeout=60) for w in workers]
        assert [w.returncode for w in workers] == [0, 0], [err.decode()[-2000:] for _, err in outputs]
        told = [t for out, _ in outputs for t in json.loads(out)]
        with RemoteOptimizer(server.url, study) as opt:
            pending = opt.ask()  # left pending across the restart
        assert server.peak_memory_mb() > 0
    assert len(told) == 2 * N and len({t["pid"] for t in told}) == 2
    first = sorted(t["number"] for t in told if t["pid"] == told[0]["pid"])
    assert first != list(range(first[0], first[0] + N))  # the workers' trials interleave: they ran at once

    with ServerProcess(kb_path) as again, RemoteOptimizer(again.url, study) as opt:
        history = opt.history
        assert len(history) == 2 * N + 1 and len(history.completed) == 2 * N
        assert [r.number for r in history.pending] == [pending.number]
        assert {(t["number"], t["config_id"], t["value"]) for t in told} == \
            {(r.number, r.config_id, r.value) for r in history.completed}  # every tell, as told
        assert len({r.config_id for r in history}) == len(history)  # no configuration twice
        fresh = opt.ask()
        assert fresh.number == 2 * N + 1 and fresh.config_id not in {r.config_id for r in history}
        opt.tell(pending, objective(pending.config_id))
        assert opt.best().value == min(objective(r.config_id) for r in opt.history.completed)
    with KnowledgeBase(kb_path, read_only=True) as kb:
        runs = kb.query("SELECT count(*) AS n, count(DISTINCT config_id) AS d FROM runs WHERE source = 'session:e2e'")
    assert (runs["n"].item(), runs["d"].item()) == (2 * N + 1, 2 * N + 1)
