"""Algorithms added so that every configuration of OBOE's grid is a point of the CASH space.

OBOE (Yang et al. 2019, KDD; ``oboe/defaults/Oboe/classification.json``) evaluated 219
scikit-learn configurations on 418 OpenML datasets. Where one of its configurations is
exactly a point of a Table 5.1 / DESIGN.md space it maps there
(:func:`metabo.metadatasets.oboe.to_project`): KNN -> ``knn``, GNB -> ``gaussian_nb``,
lSVM -> ``linear_svm``, MLP with adam -> ``mlp``, AB -> ``adaboost`` (whose ranges were
widened to hold OBOE's). The rest lie outside those spaces, in ways a range cannot
absorb, so they get spaces of their own here, each spanning OBOE's grid along the
hyperparameters OBOE varied, every other setting fixed as OBOE fitted it (recorded as a
Constant, as ``gaussian_nb`` records its one setting):

- ``full_decision_tree``, ``full_random_forest``, ``full_extra_trees``: trees grown to
  purity as scikit-learn grows them by default (``max_depth=None``,
  ``min_samples_leaf=1``, ``max_features="sqrt"`` for the forests); the Table 5.1 trees
  stop at depth 10 and leaves of 2. ``min_samples_split`` is OBOE's list as a
  Categorical of floats: values below 1 are fractions of the training rows, values of
  2 or more numbers of rows (passed to scikit-learn as ints; one type for every choice,
  so that ConfigSpace keeps them apart). The choices are ordered so that the encoding
  grows with the rows they mean on a few thousand training rows (fractions up to 0.01
  mean 2 rows there). The forests have ``n_estimators=10``: scikit-learn's
  default until 0.22, the one OBOE's runs of 2018 used; ``criterion`` as OBOE's grid.
- ``gradient_boosting``: ``GradientBoostingClassifier`` (100 trees, its default),
  ``learning_rate`` log [1e-3, 1] (OBOE: 0.001..0.5), ``max_depth`` 1..8 (OBOE: 3, 6),
  ``max_features`` "all" (scikit-learn's None) or "log2".
- ``kernel_svm``: ``SVC`` with ``gamma="auto"`` (1 / number of features, the 2018
  default and OBOE's), ``degree=3``, the solver's iterations capped as ``svm_rbf``'s;
  ``C`` log [1e-5, 1e5] as ``svm_rbf``'s (OBOE:
  0.125..16), ``kernel`` rbf or poly, ``coef0`` [0, 10] (OBOE: 0, 10; it only acts on
  poly). ``svm_rbf`` searches ``gamma`` itself and cannot hold "auto".
- ``ovr_logistic_regression``: OBOE's Logit, ``LogisticRegression`` one-vs-rest
  (the 2018 default ``multi_class="ovr"``) with liblinear, ``C`` log [1e-5, 1e5],
  ``penalty`` l2 or l1. OBOE's two solvers (liblinear, saga) minimize the same
  objective, so both map to this one point; ``logistic_regression`` is multinomial
  with L2 only.
- ``sgd_mlp``: OBOE's MLP with ``solver="sgd"`` and ``learning_rate="adaptive"``;
  ``n_units``, ``alpha`` and ``learning_rate_init`` as ``mlp``'s ranges (OBOE: 100
  units, the default).
- ``perceptron``: ``Perceptron`` at its defaults; ``max_iter=1000`` (today's default;
  OBOE's scikit-learn of 2018 stopped after 5 epochs) recorded as a Constant.

Deviations from OBOE's fits, because today's scikit-learn cannot reproduce them:
AdaBoost's SAMME.R is gone (SAMME is used), Perceptron's epochs above; the margin
classifiers get ``predict_proba`` from their decision function (:mod:`.proba`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from metabo.space.algorithms.extra import MLP_HPS
from metabo.space.algorithms.spec import AlgorithmSpec, make_space, sklearn_at_least
from metabo.space.hyperparameters import Categorical, Constant, Float, Integer

#: OBOE's ``min_samples_split`` values (DT: without 0.1), in the encoding's order.
MIN_SAMPLES_SPLIT = (1e-05, 0.0001, 0.001, 0.01, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 0.1)
_CRITERION = Categorical("criterion", ("gini", "entropy"))
_C = Float("C", 1e-5, 1e5, log=True, default=1.0)


def _split() -> Categorical:
    return Categorical("min_samples_split", MIN_SAMPLES_SPLIT, default=2.0)


def _tree_params(p: Mapping[str, Any]) -> dict[str, Any]:
    """``p`` with ``min_samples_split`` as scikit-learn reads it (rows as an int)."""
    split = p["min_samples_split"]
    return {**p, "min_samples_split": int(split) if split >= 2 else split}


def _full_decision_tree(p: Mapping[str, Any], seed: int | None) -> Any:
    from sklearn.tree import DecisionTreeClassifier

    return DecisionTreeClassifier(**_tree_params(p), random_state=seed)


def _full_random_forest(p: Mapping[str, Any], seed: int | None) -> Any:
    from sklearn.ensemble import RandomForestClassifier

    return RandomForestClassifier(**_tree_params(p), n_jobs=1, random_state=seed)


def _full_extra_trees(p: Mapping[str, Any], seed: int | None) -> Any:
    from sklearn.ensemble import ExtraTreesClassifier

    return ExtraTreesClassifier(**_tree_params(p), n_jobs=1, random_state=seed)


def _gradient_boosting(p: Mapping[str, Any], seed: int | None) -> Any:
    from sklearn.ensemble import GradientBoostingClassifier

    return GradientBoostingClassifier(
        n_estimators=p["n_estimators"], learning_rate=p["learning_rate"], max_depth=p["max_depth"],
        max_features=None if p["max_features"] == "all" else p["max_features"], random_state=seed,
    )


def _kernel_svm(p: Mapping[str, Any], seed: int | None) -> Any:
    from sklearn.svm import SVC

    from metabo.space.algorithms.proba import DecisionProbaClassifier
    from metabo.space.algorithms.table51 import SVC_MAX_ITER

    return DecisionProbaClassifier(SVC(**p, max_iter=SVC_MAX_ITER, random_state=seed))


def _ovr_logistic_regression(p: Mapping[str, Any], seed: int | None) -> Any:
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier

    # scikit-learn 1.8 deprecates ``penalty`` for ``l1_ratio`` (0: L2, 1: L1)
    penalty = ({"l1_ratio": 1.0 if p["penalty"] == "l1" else 0.0} if sklearn_at_least(1, 8)
               else {"penalty": p["penalty"]})
    return OneVsRestClassifier(LogisticRegression(C=p["C"], solver="liblinear", random_state=seed, **penalty),
                               n_jobs=1)


def _sgd_mlp(p: Mapping[str, Any], seed: int | None) -> Any:
    from sklearn.neural_network import MLPClassifier

    return MLPClassifier(
        hidden_layer_sizes=(p["n_units"],), alpha=p["alpha"], learning_rate_init=p["learning_rate_init"],
        solver="sgd", learning_rate="adaptive", max_iter=200, random_state=seed,
    )


def _perceptron(p: Mapping[str, Any], seed: int | None) -> Any:
    from sklearn.linear_model import Perceptron

    from metabo.space.algorithms.proba import DecisionProbaClassifier

    return DecisionProbaClassifier(Perceptron(max_iter=p["max_iter"], random_state=seed))


def _trees(name: str, build: Any, *hps: Any) -> AlgorithmSpec:
    return AlgorithmSpec(name, make_space(name, *hps), needs_scaling=False, encoding="ordinal",
                         handles_missing=False, build=build)


SPECS: tuple[AlgorithmSpec, ...] = (
    _trees("full_decision_tree", _full_decision_tree, _split()),
    _trees("full_random_forest", _full_random_forest, Constant("n_estimators", 10), _CRITERION, _split()),
    _trees("full_extra_trees", _full_extra_trees, Constant("n_estimators", 10), _CRITERION, _split()),
    _trees(
        "gradient_boosting", _gradient_boosting,
        Constant("n_estimators", 100),
        Float("learning_rate", 1e-3, 1.0, log=True, default=0.1),
        Integer("max_depth", 1, 8, default=3),
        Categorical("max_features", ("all", "log2")),
    ),
    AlgorithmSpec(
        "kernel_svm",
        make_space("kernel_svm", _C, Categorical("kernel", ("rbf", "poly")), Float("coef0", 0.0, 10.0, default=0.0),
                   Constant("gamma", "auto"), Constant("degree", 3)),
        needs_scaling=True, encoding="onehot", handles_missing=False, build=_kernel_svm,
    ),
    AlgorithmSpec(
        "ovr_logistic_regression",
        make_space("ovr_logistic_regression", _C, Categorical("penalty", ("l2", "l1"))),
        needs_scaling=True, encoding="onehot", handles_missing=False, build=_ovr_logistic_regression,
    ),
    AlgorithmSpec(
        "sgd_mlp",
        make_space("sgd_mlp", *MLP_HPS),
        needs_scaling=True, encoding="onehot", handles_missing=False, build=_sgd_mlp,
    ),
    AlgorithmSpec(
        "perceptron", make_space("perceptron", Constant("max_iter", 1000)),
        needs_scaling=True, encoding="onehot", handles_missing=False, build=_perceptron,
    ),
)
