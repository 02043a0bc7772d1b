"""Algorithms beyond Table 5.1 (DESIGN.md "Search spaces"), with auto-sklearn's ranges
trimmed so that one evaluation stays fast.

- logistic_regression: ``C`` log [1e-5, 1e5] as for the SVMs; the L2 penalty is
  scikit-learn's default (``penalty`` is deprecated since 1.8, so it is not passed);
  ``max_iter=1000``.
- extra_trees: random_forest's ranges.
- hist_gradient_boosting: auto-sklearn's ranges with ``max_iter`` 10..200 (log) and
  ``max_leaf_nodes`` 3..64 (log); ``early_stopping=False`` so that ``max_iter`` is
  the number of iterations whatever the dataset size. ``l2_regularization`` default 0
  is clipped to 1e-10.
- lightgbm: ``subsample`` only acts with ``subsample_freq > 0``, so ``subsample_freq=1``;
  ``verbose=-1``; ``reg_lambda`` default 0 clipped to 1e-10.
- mlp: one hidden layer of ``n_units`` (scikit-learn's ``hidden_layer_sizes=(n_units,)``,
  the one parameter not named as in scikit-learn); ``max_iter=200`` (adam epochs).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from metabo.space.algorithms.spec import AlgorithmSpec, make_space, sklearn_at_least
from metabo.space.algorithms.table51 import FOREST_HPS
from metabo.space.hyperparameters import Float, Integer


def _logistic_regression(p: Mapping[str, Any], seed: int | None) -> Any:
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=p["C"], max_iter=1000, random_state=seed)


def _extra_trees(p: Mapping[str, Any], seed: int | None) -> Any:
    from sklearn.ensemble import ExtraTreesClassifier

    return ExtraTreesClassifier(**p, n_jobs=1, random_state=seed)


def _hist_gradient_boosting(p: Mapping[str, Any], seed: int | None) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(**p, early_stopping=False, random_state=seed)


#: LightGBM's bound on a leaf's Newton step ``-G/H`` (``max_delta_step``; the output is
#: this times the learning rate at most). LightGBM's default (none, with
#: ``min_sum_hessian_in_leaf`` 1e-3) lets a leaf of near-pure rows, whose hessian sum is near
#: zero, take a step of thousands of logits; at learning rates above about 0.3 a multi-class
#: fit then diverges (training error .3-.4 where its neighbours fit every row). A sound step
#: is a few logits, so the bound binds only on those leaves (XGBoost's ``min_child_weight``
#: 1 guards the same way).
LIGHTGBM_MAX_DELTA_STEP = 10.0


def _lightgbm(p: Mapping[str, Any], seed: int | None) -> Any:
    from lightgbm import LGBMClassifier

    return LGBMClassifier(**{"max_delta_step": LIGHTGBM_MAX_DELTA_STEP, **p}, subsample_freq=1, n_jobs=1,
                          random_state=seed, verbose=-1)


def _mlp(p: Mapping[str, Any], seed: int | None) -> Any:
    from sklearn.neural_network import MLPClassifier

    return MLPClassifier(
        hidden_layer_sizes=(p["n_units"],),
        alpha=p["alpha"],
        learning_rate_init=p["learning_rate_init"],
        max_iter=200,
        random_state=seed,
    )


_LEARNING_RATE = Float("learning_rate", 0.01, 1.0, log=True, default=0.1)
#: The MLP's hyperparameters (``mlp`` here, ``sgd_mlp`` of :mod:`.oboe_grid`).
MLP_HPS = (
    Integer("n_units", 16, 256, log=True, default=100),
    Float("alpha", 1e-7, 1e-1, log=True, default=1e-4),
    Float("learning_rate_init", 1e-4, 1e-1, log=True, default=1e-3),
)
_L2 = 1e-10, 1.0

SPECS: tuple[AlgorithmSpec, ...] = (
    AlgorithmSpec(
        "logistic_regression",
        make_space("logistic_regression", Float("C", 1e-5, 1e5, log=True, default=1.0)),
        needs_scaling=True, encoding="onehot", handles_missing=False, build=_logistic_regression,
    ),
    AlgorithmSpec(
        "extra_trees", make_space("extra_trees", *FOREST_HPS),
        needs_scaling=False, encoding="ordinal", handles_missing=sklearn_at_least(1, 6), build=_extra_trees,
    ),
    AlgorithmSpec(
        "hist_gradient_boosting",
        make_space(
            "hist_gradient_boosting",
            _LEARNING_RATE,
            Integer("max_iter", 10, 200, log=True, default=100),
            Integer("max_leaf_nodes", 3, 64, log=True, default=31),
            Integer("min_samples_leaf", 1, 100, log=True, default=20),
            Float("l2_regularization", *_L2, log=True, default=1e-10),
        ),
        needs_scaling=False, encoding="ordinal", handles_missing=True, build=_hist_gradient_boosting,
        rounds="max_iter",
    ),
    AlgorithmSpec(
        "lightgbm",
        make_space(
            "lightgbm",
            Integer("num_leaves", 4, 64, log=True, default=31),
            _LEARNING_RATE,
            Integer("n_estimators", 10, 200, log=True, default=100),
            Integer("min_child_samples", 1, 100, log=True, default=20),
            Float("subsample", 0.5, 1.0, default=1.0),
            Float("colsample_bytree", 0.5, 1.0, default=1.0),
            Float("reg_lambda", *_L2, log=True, default=1e-10),
        ),
        needs_scaling=False, encoding="ordinal", handles_missing=True, build=_lightgbm, rounds="n_estimators",
    ),
    AlgorithmSpec(
        "mlp",
        make_space("mlp", *MLP_HPS),
        needs_scaling=True, encoding="onehot", handles_missing=False, build=_mlp,
    ),
)
