"""OpenML flows -> project algorithms and their hyperparameters.

A scikit-learn estimator (or the final step of a ``sklearn.pipeline.Pipeline``) whose
class is in :data:`SKLEARN_ALGORITHMS` becomes that project algorithm with its own
parameters JSON-decoded (OpenML stores ``"100"``, ``"\\"sqrt\\""``, ``"null"``);
``SVC``/``SVR`` become ``svm_<kernel>`` (``svm_rbf`` by default); execution-only
parameters (:data:`NON_HYPERPARAMETERS`) are dropped. Every other flow is kept as
``openml-flow:<flow name>`` with its raw parameter text (keyed by name for the flow's own
parameters, by OpenML full name for its components) and counted in
:class:`~metabo.ingest.openml.IngestReport` - no run is dropped silently.

:func:`setup_flow_mismatch` tells whether a setup's parameters are those of the run's
flow: OpenML has setups listed under one flow that answer with another flow's
parameters, which :func:`map_flow` would turn into the first flow at its defaults.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from metabo.exceptions import InputDataError
from metabo.kb.canonical import canonical_json

#: scikit-learn (and LightGBM) estimator class paths -> project algorithm names. Classes
#: also match under other module paths of the same package (older scikit-learn wrote
#: ``sklearn.ensemble.forest.RandomForestClassifier``).
SKLEARN_ALGORITHMS: dict[str, str] = {
    "sklearn.ensemble._forest.RandomForestClassifier": "random_forest",
    "sklearn.ensemble._forest.RandomForestRegressor": "random_forest",
    "sklearn.ensemble._forest.ExtraTreesClassifier": "extra_trees",
    "sklearn.ensemble._forest.ExtraTreesRegressor": "extra_trees",
    "sklearn.svm._classes.SVC": "svm",
    "sklearn.svm._classes.SVR": "svm",
    "sklearn.svm._classes.LinearSVC": "linear_svm",
    "sklearn.svm._classes.LinearSVR": "linear_svm",
    "sklearn.neighbors._classification.KNeighborsClassifier": "knn",
    "sklearn.neighbors._regression.KNeighborsRegressor": "knn",
    "sklearn.tree._classes.DecisionTreeClassifier": "decision_tree",
    "sklearn.tree._classes.DecisionTreeRegressor": "decision_tree",
    "sklearn.ensemble._weight_boosting.AdaBoostClassifier": "adaboost",
    "sklearn.ensemble._weight_boosting.AdaBoostRegressor": "adaboost",
    "sklearn.ensemble._gb.GradientBoostingClassifier": "gradient_boosting",
    "sklearn.ensemble._gb.GradientBoostingRegressor": "gradient_boosting",
    "sklearn.ensemble._hist_gradient_boosting.gradient_boosting.HistGradientBoostingClassifier":
        "hist_gradient_boosting",
    "sklearn.ensemble._hist_gradient_boosting.gradient_boosting.HistGradientBoostingRegressor":
        "hist_gradient_boosting",
    "sklearn.linear_model._logistic.LogisticRegression": "logistic_regression",
    "sklearn.naive_bayes.GaussianNB": "gaussian_nb",
    "sklearn.discriminant_analysis.LinearDiscriminantAnalysis": "lda",
    "sklearn.discriminant_analysis.QuadraticDiscriminantAnalysis": "qda",
    "sklearn.neural_network._multilayer_perceptron.MLPClassifier": "mlp",
    "sklearn.neural_network._multilayer_perceptron.MLPRegressor": "mlp",
    "lightgbm.sklearn.LGBMClassifier": "lightgbm",
    "lightgbm.sklearn.LGBMRegressor": "lightgbm",
}
_BY_CLASS: dict[tuple[str, str], str] = {
    (path.split(".", 1)[0], path.rsplit(".", 1)[1]): name for path, name in SKLEARN_ALGORITHMS.items()
}
#: Parameters that change how an estimator runs, not what it learns.
NON_HYPERPARAMETERS: frozenset[str] = frozenset({"n_jobs", "verbose", "cache_size", "copy_X", "memory"})
PIPELINE = "sklearn.pipeline.Pipeline"
UNMAPPED_PREFIX = "openml-flow:"
#: Packages whose OpenML flow names show every component (``A(x=B,y=C)``).
COMPONENTS_IN_NAME: frozenset[str] = frozenset({"sklearn", "lightgbm"})


def flow_base_name(name: str) -> str:
    """A flow name without OpenML's version suffix: ``weka.J48(1)`` -> ``weka.J48``."""
    return re.sub(r"\(\d+\)$", "", name.strip())


def split_flow_name(name: str) -> tuple[str, list[tuple[str, str]]]:
    """``A(x=B,y=C(z=D))`` -> ``("A", [("x", "B"), ("y", "C(z=D)")])``."""
    start = name.find("(")
    if start < 0 or not name.endswith(")"):
        return name, []
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in name[start + 1: -1]:
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        depth += ch == "("
        depth -= ch == ")"
        current.append(ch)
    parts.append("".join(current))
    comps = [tuple(p.split("=", 1)) for p in parts if "=" in p]
    return name[:start], [(k.strip(), v.strip()) for k, v in comps]  # type: ignore[misc]


def sklearn_algorithm(class_path: str) -> str | None:
    """The project algorithm of an estimator class path (``svm`` still needs a kernel)."""
    if class_path in SKLEARN_ALGORITHMS:
        return SKLEARN_ALGORITHMS[class_path]
    if "." not in class_path:
        return None
    return _BY_CLASS.get((class_path.split(".", 1)[0], class_path.rsplit(".", 1)[1]))


def decode_value(text: str | None) -> Any:
    """An OpenML parameter value as Python: JSON text decoded, anything else kept as text."""
    if text is None:
        return None
    try:
        value = json.loads(text)
        canonical_json({"v": value})  # NaN / Infinity (even nested) are not storable JSON
    except (json.JSONDecodeError, TypeError, InputDataError):
        return text
    return value


def map_flow(flow_name: str, parameters: Sequence[Mapping[str, Any]]) -> tuple[str, dict[str, Any], bool]:
    """``(algorithm, params, mapped)`` of a run's flow and its setup parameters.

    ``parameters`` are the setup's parameter records (``flow_name``,
    ``parameter_name``, ``full_name``, ``value``) as the client lists them.
    """
    base = flow_base_name(flow_name)
    target = base
    class_path, comps = split_flow_name(target)
    while class_path == PIPELINE and comps:
        target = comps[-1][1]
        class_path, comps = split_flow_name(target)
    algorithm = sklearn_algorithm(class_path) if not comps else None
    if algorithm is not None:
        params = {
            str(p["parameter_name"]): decode_value(p.get("value"))
            for p in parameters
            if p.get("flow_name") == target and p["parameter_name"] not in NON_HYPERPARAMETERS
        }
        if algorithm == "svm":
            kernel = params.get("kernel", "rbf")
            algorithm = f"svm_{kernel}" if isinstance(kernel, str) and kernel.isidentifier() else "svm_rbf"
        return algorithm, params, True
    raw = {
        (str(p["parameter_name"]) if p.get("flow_name") == base else str(p["full_name"])): p.get("value")
        for p in parameters
    }
    return f"{UNMAPPED_PREFIX}{base}", raw, False


def flow_names(flow_name: str) -> set[str]:
    """The names of a flow and of every component its name shows, without versions."""
    base = flow_base_name(flow_name)
    names = {base}
    for _, component in split_flow_name(base)[1]:
        names |= flow_names(component)
    return names


def setup_flow_mismatch(
    flow_id: int, flow_name: str, setup_flow_id: int, parameters: Sequence[Mapping[str, Any]],
) -> str | None:
    """Why a setup's parameters are not those of the run's flow (``None``: they are).

    ``flow_id``/``flow_name``: the run's flow as the evaluation listing names it;
    ``setup_flow_id``/``parameters``: the setup as ``setup/list`` answers it. A parameter
    is the flow's own when its ``flow_id`` is the flow's or its ``flow_name`` is the
    flow's or a component's its name shows (:func:`flow_names`). A flow whose name
    shows every component (:data:`COMPONENTS_IN_NAME`) may have no other; for any other
    flow, one own parameter vouches for the rest (e.g. Weka's ``weka.Bagging_REPTree``,
    whose ``weka.REPTree`` component its name does not show).
    """
    if int(setup_flow_id) != int(flow_id):
        return f"setup of flow {setup_flow_id} listed under flow {flow_id}"
    names = flow_names(flow_name)

    def own(p: Mapping[str, Any]) -> bool:
        return p.get("flow_name") in names or str(p.get("flow_id")) == str(flow_id)

    foreign = sorted({str(p.get("flow_name")) for p in parameters if not own(p)})
    if not foreign:
        return None
    base = flow_base_name(flow_name)
    if any(own(p) for p in parameters) and base.split(".", 1)[0] not in COMPONENTS_IN_NAME:
        return None
    return f"parameters of {', '.join(foreign)} in a setup of flow {flow_id} ({base})"
