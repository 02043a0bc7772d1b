"""The warm-start benchmark's hold-out rules: possible copies of a held-out task among the
tasks stored without data, and limiting the knowledge to some sources."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks.warm_bench import knowledge_of, make_method, possible_copies, space_of
from metabo.exceptions import InputDataError
from metabo.kb.canonical import config_id
from metabo.kb.past import PastRuns
from metabo.strategies.matrix_completion import OBOESelection
from metabo.strategies.portfolio import PortfolioWarmStart

DATASETS = pd.DataFrame({
    "dataset_id": ["keel-vote", "keel-other", "openml-56", "openml-big", "openml-3cls", "openml-feat", "openml-x"],
    "fingerprint": ["f1", "f2", None, None, None, None, None],
    "n_instances": [232, 232, 435, 600, 300, 300, 240],
    "n_classes": [2, 2, np.nan, np.nan, 3, np.nan, np.nan],
    "n_features": [16, 16, np.nan, np.nan, np.nan, np.nan, np.nan],
})
META = pd.DataFrame({"NumberOfFeatures": [np.nan, np.nan, 17.0, np.nan, np.nan, 30.0, np.nan]},
                    index=DATASETS["dataset_id"])


def test_possible_copies_hold_out_more_than_the_copies_never_fewer():
    # openml-56 (vote: 435 rows, 17 features) is a copy of keel-vote (232 rows without missing values, 16)
    assert possible_copies(DATASETS, META, "keel-vote") == ["openml-56", "openml-x"]
    # too big (600 > 2 x 232), another class count, 30 features: not copies; content-known tasks never are
    assert possible_copies(DATASETS, META, "unknown") == []


def past_of(sources: dict[str, str]) -> PastRuns:
    rows = [(t, "knn", {"n_neighbors": k}, 0.1 * k) for t in sources for k in (1, 2, 3)]
    frame = pd.DataFrame(rows, columns=["dataset_id", "algorithm", "params", "value"])
    frame["config_id"] = [config_id(a, p) for a, p in zip(frame["algorithm"], frame["params"])]
    return PastRuns.from_frame(frame)


def test_knowledge_limits_the_past_to_the_named_sources():
    sources = {"keel-a": "keel", "keel-b": "keel", "openml-1": "oboe"}
    past = past_of(sources)
    name, sub = knowledge_of("warm@knowledge=keel@beta=2", past, sources)
    assert name == "warm@beta=2" and sub.tasks == ("keel-a", "keel-b")
    assert knowledge_of("warm@knowledge=keel+oboe", past, sources)[1].tasks == past.tasks
    assert knowledge_of("warm", past, sources) == ("warm", past)
    with pytest.raises(InputDataError, match="no past task"):
        knowledge_of("warm@knowledge=pmf", past, sources)
    strategy = make_method("warm@knowledge=keel", past, {}, 0, None, "t", [], sources)
    assert isinstance(strategy, PortfolioWarmStart) and strategy.past.tasks == ("keel-a", "keel-b")
    oboe = make_method("oboe@n_design=2", past, {}, 0, None, "t", [], sources)
    assert isinstance(oboe, OBOESelection) and oboe.past.tasks == ("openml-1",) and oboe.n_design == 2
    with pytest.raises(InputDataError, match="ingest oboe"):
        make_method("oboe", past.only(tasks=["keel-a"]), {}, 0, None, "t", [], sources)


def test_space_option_names_the_space_before_oboes_algorithms_or_a_list():
    from metabo.space.algorithms import default_cash_space

    full = default_cash_space()
    name, base = space_of("gp@space=base@seed=1", full)
    assert name == "gp@seed=1" and len(base.algorithms) == 14 and "kernel_svm" not in base.algorithms
    assert space_of("warm@space=knn+lda", full)[1].algorithms == ("knn", "lda")
    assert space_of("warm", full) == ("warm", full)


def test_bank_method_variants_pass_their_options_to_the_strategy():
    from metabo.strategies.rgpe import RGPE
    from metabo.strategies.rlgp import RLGP

    class Bank:  # what make_method asks of a bank: the tasks to drop removed
        tasks = ("a", "b")
        normalization_ = "copula"

        def without(self, drop):
            return self

    joint = make_method("rlgp@search=joint", None, {}, 3, Bank(), "t", [])
    assert isinstance(joint, RLGP) and joint.search == "joint" and joint.seed == 3
    assert make_method("rlgp", None, {}, 3, Bank(), "t", []).search == "algorithm"
    assert make_method("rlgp-opa", None, {}, 0, Bank(), "t", []).one_per_algorithm
    rgpe = make_method("rgpe@n_samples=20", None, {}, 0, Bank(), "t", [])
    assert isinstance(rgpe, RGPE) and rgpe.n_samples == 20
