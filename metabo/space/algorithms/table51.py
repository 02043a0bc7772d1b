"""The nine algorithms of Levesque (2018), Table 5.1, with scikit-learn parameter names.

Ranges are the table's. Additions and deviations (each also noted at its space):

- knn: ``weights`` {uniform, distance} and Minkowski ``p`` {1, 2} added.
- svm_rbf: the table's kernel width tau is scikit-learn's ``gamma`` read as ``1/tau``
  (``k = exp(-||x - x'||^2 / tau)``); ``1/tau`` is log-uniform on the same
  [1e-5, 1e5], so range and prior are unchanged. The solver's iterations are capped
  (:data:`SVC_MAX_ITER`).
- decision_tree: ``criterion`` {gini, entropy} added.
- random_forest: ``max_features`` (fraction of features, [0.01, 1]) added.
- adaboost: ``learning_rate`` log [0.01, 3] added; ``n_estimators`` 1..100 (the table's
  30 widened so that OBOE's grid, 50 or 100 stumps at rates 1 to 3, lies inside).
- gaussian_nb, lda: "No parameter": a Constant records the setting used
  (``var_smoothing=1e-9``, ``solver="svd"``, scikit-learn's defaults).
- qda: the table's log [1e-3, 1e3] is not a valid ``reg_param``, a convex weight in
  [0, 1] (``S = (1 - r) S + r I``); log [1e-3, 1] is used.

Defaults: scikit-learn's when inside the range, clipped into the range otherwise
(``max_depth=None -> 10``, ``min_samples_leaf=1 -> 2``, ``n_estimators -> 30``,
``reg_param=0 -> 1e-3``), and the (geometric) midpoint when scikit-learn's is
data-dependent (``gamma="scale" -> 1.0``, ``max_features="sqrt" -> 0.5``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from metabo.space.algorithms.spec import AlgorithmSpec, make_space, sklearn_at_least
from metabo.space.hyperparameters import Categorical, Constant, Float, Integer

_C = Float("C", 1e-5, 1e5, log=True, default=1.0)
_TREE = (
    Integer("max_depth", 1, 10, default=10),
    Integer("min_samples_split", 2, 100, default=2),
    Integer("min_samples_leaf", 2, 100, default=2),
)
FOREST_HPS = (
    Integer("n_estimators", 1, 30, default=30),
    *_TREE,
    Float("max_features", 0.01, 1.0, default=0.5),
)


def _knn(p: Mapping[str, Any], seed: int | None) -> Any:
    from sklearn.neighbors import KNeighborsClassifier

    return KNeighborsClassifier(n_neighbors=p["n_neighbors"], weights=p["weights"], p=p["p"], n_jobs=1)


#: libsvm's SMO iterations, at most (``SVC(max_iter=...)``; scikit-learn's -1 has no bound): a
#: large ``C`` on overlapping classes can need millions of iterations, each a kernel column
#: over the training rows, so an uncapped fit has no time bound but the trial's. Capped, it
#: stops with a ConvergenceWarning (kept in the evaluation's message) and still predicts.
SVC_MAX_ITER = 1_000_000


def _svm_rbf(p: Mapping[str, Any], seed: int | None) -> Any:
    from sklearn.svm import SVC

    from metabo.space.algorithms.proba import DecisionProbaClassifier

    return DecisionProbaClassifier(SVC(C=p["C"], kernel="rbf", gamma=p["gamma"], max_iter=SVC_MAX_ITER,
                                       random_state=seed))


def _linear_svm(p: Mapping[str, Any], seed: int | None) -> Any:
    from sklearn.svm import LinearSVC

    from metabo.space.algorithms.proba import DecisionProbaClassifier

    return DecisionProbaClassifier(LinearSVC(C=p["C"], dual="auto", max_iter=5000, random_state=seed))


def _decision_tree(p: Mapping[str, Any], seed: int | None) -> Any:
    from sklearn.tree import DecisionTreeClassifier

    return DecisionTreeClassifier(**p, random_state=seed)


def _random_forest(p: Mapping[str, Any], seed: int | None) -> Any:
    from sklearn.ensemble import RandomForestClassifier

    return RandomForestClassifier(**p, n_jobs=1, random_state=seed)


def _adaboost(p: Mapping[str, Any], seed: int | None) -> Any:
    from sklearn.ensemble import AdaBoostClassifier

    return AdaBoostClassifier(
        n_estimators=p["n_estimators"], learning_rate=p["learning_rate"], random_state=seed
    )


def _gaussian_nb(p: Mapping[str, Any], seed: int | None) -> Any:
    from sklearn.naive_bayes import GaussianNB

    return GaussianNB(var_smoothing=p["var_smoothing"])


def _lda(p: Mapping[str, Any], seed: int | None) -> Any:
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    return LinearDiscriminantAnalysis(solver=p["solver"])


def _qda(p: Mapping[str, Any], seed: int | None) -> Any:
    from sklearn.discriminant_analysis import QuadraticDiscriminantAnalysis

    return QuadraticDiscriminantAnalysis(reg_param=p["reg_param"])


SPECS: tuple[AlgorithmSpec, ...] = (
    AlgorithmSpec(
        "knn",
        make_space(
            "knn",
            Integer("n_neighbors", 1, 30, default=5),
            Categorical("weights", ("uniform", "distance")),
            Categorical("p", (1, 2), default=2),
        ),
        needs_scaling=True, encoding="onehot", handles_missing=False, build=_knn,
    ),
    AlgorithmSpec(
        "svm_rbf", make_space("svm_rbf", _C, Float("gamma", 1e-5, 1e5, log=True, default=1.0)),
        needs_scaling=True, encoding="onehot", handles_missing=False, build=_svm_rbf,
    ),
    AlgorithmSpec(
        "linear_svm", make_space("linear_svm", _C),
        needs_scaling=True, encoding="onehot", handles_missing=False, build=_linear_svm,
    ),
    AlgorithmSpec(
        "decision_tree",
        make_space("decision_tree", *_TREE, Categorical("criterion", ("gini", "entropy"))),
        needs_scaling=False, encoding="ordinal", handles_missing=sklearn_at_least(1, 3),
        build=_decision_tree,
    ),
    AlgorithmSpec(
        "random_forest", make_space("random_forest", *FOREST_HPS),
        needs_scaling=False, encoding="ordinal", handles_missing=sklearn_at_least(1, 4),
        build=_random_forest,
    ),
    AlgorithmSpec(
        "adaboost",
        make_space(
            "adaboost",
            Integer("n_estimators", 1, 100, default=30),
            Float("learning_rate", 0.01, 3.0, log=True, default=1.0),
        ),
        needs_scaling=False, encoding="ordinal", handles_missing=False, build=_adaboost,
    ),
    AlgorithmSpec(
        "gaussian_nb", make_space("gaussian_nb", Constant("var_smoothing", 1e-9)),
        needs_scaling=False, encoding="onehot", handles_missing=False, build=_gaussian_nb,
    ),
    AlgorithmSpec(
        "lda", make_space("lda", Constant("solver", "svd")),
        needs_scaling=False, encoding="onehot", handles_missing=False, build=_lda,
    ),
    # reg_param shrinks the covariances towards the identity: QDA is no longer scale-invariant.
    AlgorithmSpec(
        "qda", make_space("qda", Float("reg_param", 1e-3, 1.0, log=True, default=1e-3)),
        needs_scaling=True, encoding="onehot", handles_missing=False, build=_qda,
    ),
)
