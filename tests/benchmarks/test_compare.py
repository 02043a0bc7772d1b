"""Comparison statistics: known values (Demsar 2006's table of q_0.05), ranks with ties,
padding of short runs, Wilcoxon agreement with scipy."""

import math

import numpy as np
import pytest
from scipy.stats import wilcoxon

from benchmarks.compare import first_reach, format_table, nemenyi_cd, regret_table, summarize, wilcoxon_p
from metabo.exceptions import InputDataError


@pytest.mark.parametrize(("k", "q"), [(2, 1.960), (3, 2.343), (4, 2.569), (5, 2.728), (10, 3.164)])
def test_nemenyi_cd_uses_demsars_critical_values(k, q):
    n = 20
    assert nemenyi_cd(k, n) == pytest.approx(q * math.sqrt(k * (k + 1) / (6 * n)), rel=2e-3)


def test_regret_table_pads_a_short_run_and_averages_seeds():
    runs = [
        {"method": "a", "task": "t", "regret": [0.5, 0.2]},  # stopped after 2 (fewer candidates)
        {"method": "a", "task": "t", "regret": [0.3, 0.1, 0.0]},
        {"method": "b", "task": "t", "regret": [1.0, 1.0, 1.0]},
        {"method": "a", "task": "u", "regret": [0.1, 0.1, 0.1]},  # b never ran u: u is left out
    ]
    tasks, R = regret_table(runs, ["a", "b"], 3)
    assert tasks == ["t"]
    np.testing.assert_allclose(R[0, 0], [0.4, 0.15, 0.1])
    np.testing.assert_allclose(R[1, 0], [1.0, 1.0, 1.0])


def test_summary_ranks_share_ties_and_wilcoxon_matches_scipy():
    rng = np.random.default_rng(0)
    a = rng.random(12)
    b = a + rng.normal(0.2, 0.1, 12)
    c = a.copy()  # ties a on every task
    R = np.stack([a, b, c])[:, :, None]
    s = summarize(R, ["gp", "x", "random"], report_at=(1,))
    at = s["at"]["1"]
    assert at["mean_rank"]["gp"] == pytest.approx(at["mean_rank"]["random"])
    assert sum(at["mean_rank"].values()) == pytest.approx(6.0, abs=2e-3)  # 1 + 2 + 3 per task (rounded)
    assert at["wilcoxon"]["x"]["vs_gp"] == pytest.approx(wilcoxon(b, a, zero_method="zsplit").pvalue)
    assert at["wilcoxon"]["random"]["vs_gp"] == 1.0  # identical samples
    assert "Wilcoxon p vs gp" in format_table(s, ["gp", "x", "random"], "t")


def test_first_reach_finds_the_iteration_of_the_slower_method():
    slow = np.tile(np.linspace(1, 0, 11), (5, 1))  # median 1 - 0.1 (t - 1)
    fast = np.tile(np.r_[0.5, 0.4, 0.35, 0.3, 0.25, np.full(6, 0.2)], (5, 1))
    R = np.stack([slow, fast])
    out = first_reach(R, ["gp", "rlgp"], "gp", "rlgp", 5)
    assert out["target_regret"] == pytest.approx(0.25)
    assert out["slow_iteration"] == 9  # 1 - 0.1 * 8 = 0.2 <= 0.25, 0.3 at iteration 8 is not
    assert first_reach(R, ["gp", "rlgp"], "gp", "rlgp", 50) is None


def test_bad_shapes_are_refused():
    with pytest.raises(InputDataError):
        summarize(np.zeros((2, 3)), ["a", "b"])
    assert wilcoxon_p(np.ones(3), np.ones(3)) == 1.0
