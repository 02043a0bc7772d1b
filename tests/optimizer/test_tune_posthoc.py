"""tune()'s default model: the post-hoc ensemble over the trials' out-of-fold predictions
when it beats the selected configuration, that configuration otherwise."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from metabo.data.loaders import load_dataset
from metabo.ensembles.model import EnsembleModel, refit_test_error
from metabo.evaluation.protocols import search_protocol
from metabo.optimizer import tune
from metabo.optimizer.budget import TimeBudget
from metabo.space.algorithms import default_cash_space

SPACE = default_cash_space(["knn", "logistic_regression", "decision_tree", "random_forest"])
KW = {"budget": 12, "strategy": "random", "seed": 0, "space": SPACE}


@pytest.fixture(scope="module")
def kept():
    return tune("sklearn:breast_cancer", **KW)


@pytest.mark.slow
def test_the_ensemble_kept_is_the_model_and_its_refit_error_is_its_own(kept):
    data = load_dataset("sklearn:breast_cancer")
    choice = kept.ensemble
    assert choice is not None and choice.kept == "ensemble" and choice.models == 12
    assert choice.decision.gain > choice.decision.se  # the guard's rule
    members = [(kept.history[k].algorithm, dict(kept.history[k].params)) for k in choice.weights]
    weights = list(choice.weights.values())
    protocol = search_protocol("auto", data.n_instances)  # tune's default: 5 folds on 569 rows
    _, error = refit_test_error(members, weights, choice.combine, data, protocol, seed=0)
    assert kept.refit_test_error == pytest.approx(error)
    # the model returned: the same members and weights fitted on every row
    everything = EnsembleModel(members, weights, choice.combine, 0).fit_dataset(data)
    assert kept.model_rows == "all"
    np.testing.assert_allclose(kept.model.predict_proba(data.X), everything.predict_proba(data.X))


@pytest.mark.slow
def test_ensemble_none_returns_the_selection_alone(kept):
    alone = tune("sklearn:breast_cancer", **KW, ensemble="none")
    assert alone.ensemble is None and alone.ensemble_note == ""
    assert len(alone.model.members_) == 1 and alone.best.number == kept.best.number
    assert alone.model.members_[0][0] == kept.best.algorithm


def test_a_reshuffled_protocol_says_why_there_is_no_ensemble():
    result = tune("sklearn:iris", budget=3, strategy="random", seed=0, space=SPACE, reshuffle=True)
    assert result.ensemble is None and "reshuffled" in result.ensemble_note
    assert len(result.model.members_) == 1


@pytest.mark.slow
def test_no_time_for_the_members_keeps_the_selection(kept):
    from metabo.tuning.final import FitGrowth, _ensemble_model
    from metabo.tuning.session import prepare

    data = load_dataset("sklearn:breast_cancer")
    setup = prepare(data, kb=None, seed=0)
    spent = TimeBudget(1.0, start=time.monotonic() - 10.0)  # spent 9 s ago
    fitted, why = _ensemble_model(kept.ensemble, kept.history, setup, seed=0, metric="error_rate",
                                  clock=spent, growth=FitGrowth(364, 5), refit_rows=455)
    assert fitted is None and why.startswith(f"its {len(kept.ensemble.weights)} members need about")


@pytest.mark.slow
def test_the_members_writes_are_priced_with_their_fits(kept):
    """Under a model writer (``tune(save_model=...)``) a member is kept only when its fit
    and its predicted write (ModelWriter.predict) fit in the time left: with time for
    exactly the two members of highest weight's fits and writes, two are fitted; without
    the writer, the same time keeps at least three."""
    from metabo.optimizer.budget import final_fit_seconds
    from metabo.tuning.final import FitGrowth, ModelWriter, _ensemble_model
    from metabo.tuning.session import prepare

    data = load_dataset("sklearn:breast_cancer")
    setup = prepare(data, kb=None, seed=0)
    weights = kept.ensemble.weights
    order = sorted(weights, key=lambda k: (-weights[k], k))
    assert len(order) >= 3
    kw = {"growth": FitGrowth(364, 5), "refit_rows": 455}
    fit = {k: final_fit_seconds(kept.history[k], train_rows=364, final_rows=455, fits=5) for k in order}
    writer = ModelWriter(Path("unused.skops"), per_member=max(fit.values()))  # a member writes as long as it fits
    f, w = [fit[k] for k in order[:3]], [writer.predict(fit[k]) for k in order[:3]]
    # each member admitted with its margin on the others' expected seconds (half their
    # margined fits) and writes: two with their writes, not the third; three without writes
    two = max(f[0] + w[0], f[0] / 2 + w[0] + f[1] + w[1])
    three = f[0] / 2 + w[0] + f[1] / 2 + w[1] + f[2] + w[2]
    unwritten = f[0] / 2 + f[1] / 2 + f[2]
    assert max(two, unwritten) < three
    left = (max(two, unwritten) + three) / 2
    clock = TimeBudget(left + 60.0, start=time.monotonic() - 60.0)
    fitted, why = _ensemble_model(kept.ensemble, kept.history, setup, seed=0, metric="error_rate", clock=clock,
                                  writer=writer, **kw)
    assert fitted is not None and len(fitted[0].members_) == 2, why
    assert why.startswith(f"2 of its {len(order)} members")
    clock = TimeBudget(left + 60.0, start=time.monotonic() - 60.0)
    fitted, _ = _ensemble_model(kept.ensemble, kept.history, setup, seed=0, metric="error_rate", clock=clock, **kw)
    assert fitted is not None and len(fitted[0].members_) >= 3


@pytest.mark.slow
def test_the_members_fits_on_every_row_are_priced_when_the_selections_fits(kept):
    """With the fit on every row after the ensemble's (``every``: those rows over the
    training + validation rows), a member is kept only when its fit on every row fits too,
    at ``every`` times its expected seconds (half its margined prediction): the time that
    keeps three members without it keeps two with it. When not even the selected
    configuration's fit on every row fits, the members are counted as before (the ensemble
    on training + validation rows is compared with a single model on the same rows)."""
    from metabo.optimizer.budget import FINAL_FIT_MARGIN, final_fit_seconds
    from metabo.tuning.final import FitGrowth, _ensemble_model
    from metabo.tuning.session import prepare

    setup = prepare(load_dataset("sklearn:breast_cancer"), kb=None, seed=0)
    weights = kept.ensemble.weights
    order = sorted(weights, key=lambda k: (-weights[k], k))
    single = order[0]
    kw = {"growth": FitGrowth(364, 5), "refit_rows": 455, "single": single}
    f = [final_fit_seconds(kept.history[k], train_rows=364, final_rows=455, fits=5) for k in order[:3]]
    every, m = 4.0, FINAL_FIT_MARGIN
    later = [every * x / m for x in f]
    two = max(f[0] + later[0], f[0] / m + later[0] + f[1] + later[1])
    three = f[0] / m + later[0] + f[1] / m + later[1] + f[2] + later[2]
    plain = f[0] / m + f[1] / m + f[2]  # three members without their fits on every row
    assert max(two, plain) < three
    left = (max(two, plain) + three) / 2

    def fitted(every):
        clock = TimeBudget(left + 60.0, start=time.monotonic() - 60.0)
        return _ensemble_model(kept.ensemble, kept.history, setup, seed=0, metric="error_rate", clock=clock,
                               every=every, **kw)

    model, why = fitted(every)
    assert model is not None and len(model[0].members_) == 2, why
    assert why.startswith(f"2 of its {len(order)} members") and "with their fits on every row" in why
    model, why = fitted(0.0)  # no fit on every row after it
    assert model is not None and len(model[0].members_) >= 3 and "every row" not in why
    model, why = fitted(2 * m * left / f[0] + 1.0)  # the selected configuration's alone does not fit
    assert model is not None and len(model[0].members_) >= 3 and "every row" not in why


def _two_class_model(y: np.ndarray, wrong: np.ndarray) -> np.ndarray:
    """Probabilities of the true class .9, except .4 on the rows ``wrong``."""
    p_true = np.full(len(y), 0.9)
    p_true[wrong] = 0.4
    P = np.empty((len(y), 2))
    P[np.arange(len(y)), y], P[np.arange(len(y)), 1 - y] = p_true, 1.0 - p_true
    return P


@pytest.mark.slow
@pytest.mark.parametrize("partner", ["duplicate", "complement"])
def test_members_left_out_for_time_pass_the_guard_again(kept, partner):
    """When only the selected configuration ``a`` and the member ``b`` of highest weight
    fit in the time left, their ensemble is chosen again among them and must pass the
    guard against ``a``: a ``b`` that predicts what ``a`` predicts gains nothing, so no
    ensemble (what the guard measured included ``c``); a ``b`` right wherever ``a`` is
    wrong makes an ensemble of the two."""
    from metabo.ensembles.guard import GuardDecision
    from metabo.ensembles.library import EnsembleChoice, OutOfFoldLibrary
    from metabo.optimizer.budget import final_fit_seconds
    from metabo.tuning.final import FitGrowth, _ensemble_model
    from metabo.tuning.session import prepare

    setup = prepare(load_dataset("sklearn:breast_cancer"), kb=None, seed=0)
    kw = {"growth": FitGrowth(364, 5), "refit_rows": 455}
    first = [r.number for r in kept.history.completed if r.ok][:3]
    predicted = {k: final_fit_seconds(kept.history[k], train_rows=364, final_rows=455, fits=5) for k in first}
    a, b, c = sorted(first, key=lambda k: (predicted[k], k))  # c the slowest: the one left out
    y = np.arange(600) % 2
    library = OutOfFoldLibrary(y, 2, seed=0)
    library.add(a, 0.2, _two_class_model(y, np.arange(0, 120)))
    library.add(b, 0.2, _two_class_model(y, np.arange(0, 120) if partner == "duplicate" else np.arange(120, 240)))
    library.add(c, 0.2, _two_class_model(y, np.arange(240, 360)))
    weights = {a: 0.2, b: 0.5, c: 0.3}  # a is not the heaviest: it is kept first all the same
    choice = EnsembleChoice(GuardDecision("ensemble", "average", weights, 0.1, 0.01, {}), 3)
    fit = predicted
    # a, then b, each admitted with its margin on the others' expected seconds (half their
    # margined predictions); c does not fit after them
    enough, too_little = max(fit[a], fit[a] / 2 + fit[b]), (fit[a] + fit[b]) / 2 + fit[c]
    left = (enough + too_little) / 2
    clock = TimeBudget(left + 60.0, start=time.monotonic() - 60.0)
    fitted, why = _ensemble_model(choice, kept.history, setup, seed=0, metric="error_rate", clock=clock,
                                  library=library, single=a, **kw)
    assert why.startswith("2 of its 3 members fit in the")
    if partner == "duplicate":
        assert fitted is None and "their ensemble does not beat the selected configuration" in why
    else:
        assert fitted is not None and "chosen again among them" in why, why
        again = library.among([a, b]).choose(a)
        assert again is not None and sorted(again.weights) == sorted([a, b])
        assert [m for m, _ in fitted[0].members_] == [kept.history[k].algorithm for k in again.weights]


def test_bad_ensemble_arguments_are_refused():
    from metabo.exceptions import InputDataError

    with pytest.raises(InputDataError, match="'posthoc' or 'none'"):
        tune("sklearn:iris", budget=1, ensemble="bagging")
    with pytest.raises(InputDataError, match="ensemble_size"):
        tune("sklearn:iris", budget=1, ensemble_size=0)


def test_the_members_reserve_is_at_most_the_search_so_far():
    """The runners-up's expected fits (their predictions without the margin) and the margin
    of the longest (the fit in flight when the budget ends) are reserved once the search
    has run longer than they take, and cut to the search's seconds before: a search of a
    few seconds is not stopped for the fits of its slow trials."""
    from metabo.tuning.final import members_reserve

    # FINAL_FIT_MARGIN = 2: 3.5 / 2 + 2.5 / 2, and 12 / 2 + 8 / 2 capped at 5 and 7
    assert members_reserve([1.0, 2.5], searched=10.0) == pytest.approx(3.0)
    assert members_reserve([4.0, 8.0], searched=5.0) == pytest.approx(5.0)
    assert members_reserve([4.0, 8.0], searched=7.0) == pytest.approx(7.0)
    assert members_reserve([4.0, 8.0], searched=20.0) == pytest.approx(10.0)
    assert members_reserve([], searched=5.0) == 0.0
    assert members_reserve(iter([3.0]), searched=-1.0) == 0.0  # a clock not started yet reserves nothing


@pytest.mark.slow
def test_the_selected_configurations_member_takes_the_parameters_of_its_model(kept):
    """``single_params`` (the selected configuration given more boosting rounds): its member
    of the ensemble is fitted with them, the other members with their trials' own."""
    from metabo.space.algorithms import get_algorithm
    from metabo.tuning.final import FitGrowth, _ensemble_model
    from metabo.tuning.session import prepare

    setup = prepare(load_dataset("sklearn:breast_cancer"), kb=None, seed=0)
    single = next(iter(kept.ensemble.weights))
    algorithm = kept.history[single].algorithm
    defaults = get_algorithm(algorithm).space.default_configuration()
    assert defaults != dict(kept.history[single].params)
    fitted, why = _ensemble_model(kept.ensemble, kept.history, setup, seed=0, metric="error_rate", clock=None,
                                  growth=FitGrowth(364, 5), refit_rows=455, single=single, single_params=defaults)
    assert fitted is not None, why
    members = dict(zip(kept.ensemble.weights, fitted[0].members))
    assert members[single] == (algorithm, defaults)
    assert all(members[k] == (kept.history[k].algorithm, dict(kept.history[k].params)) for k in members if k != single)
