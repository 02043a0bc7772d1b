"""Ensembles built from the search: post-hoc ensemble selection (Caruana et al.
2004), ESMBO (Lacoste et al. 2014, Algorithm 2), Ensemble Optimization (EO, thesis ch. 4)
with its losses (sec. 4.3), DivBO (Shen et al. 2022) with its pairwise diversity and
diversity surrogate; each search wraps any strategy of the project, warm starts included;
:func:`tune_ensemble` runs one on a dataset and :class:`EnsembleModel` is the deployable
ensemble (members refitted, saved and loaded).

The names below load their module on first use (PEP 562), so that loading a model
(:mod:`metabo.ensembles.model`) does not import the searches, their strategies and surrogates."""

from __future__ import annotations

from typing import TYPE_CHECKING

from metabo._lazy import lazy_getattr

# eager: the function ``diversity`` shares its module's name, and the module's first import
# would otherwise put the module where the function is expected
from metabo.ensembles.diversity import diversity, diversity_matrix

if TYPE_CHECKING:
    from metabo.ensembles.base import EnsembleSearch
    from metabo.ensembles.divbo import (
        DivBO,
        DiversitySurrogate,
        diversity_weight,
        surrogate_kendall_tau,
    )
    from metabo.ensembles.eo import EnsembleOptimization
    from metabo.ensembles.esmbo import ESMBO, default_replicates
    from metabo.ensembles.losses import (
        EO_LOSSES,
        c_bound,
        margin_loss,
        margin_moments,
        margins,
        sigmoid_loss,
        sigmoid_scale,
        squared_margin_loss,
    )
    from metabo.ensembles.model import EnsembleModel, refit_test_error
    from metabo.ensembles.search import METHODS, EnsembleResult
    from metabo.ensembles.selection import (
        EnsembleSelection,
        PostHocSelection,
        ensemble_selection,
    )
    from metabo.tuning.ensemble import tune_ensemble

#: name -> the submodule that defines it
_WHERE = {
    "EnsembleSearch": "base",
    "DivBO": "divbo",
    "DiversitySurrogate": "divbo",
    "diversity_weight": "divbo",
    "surrogate_kendall_tau": "divbo",
    "EnsembleOptimization": "eo",
    "ESMBO": "esmbo",
    "default_replicates": "esmbo",
    "EO_LOSSES": "losses",
    "c_bound": "losses",
    "margin_loss": "losses",
    "margin_moments": "losses",
    "margins": "losses",
    "sigmoid_loss": "losses",
    "sigmoid_scale": "losses",
    "squared_margin_loss": "losses",
    "EnsembleModel": "model",
    "refit_test_error": "model",
    "METHODS": "search",
    "EnsembleResult": "search",
    "tune_ensemble": "metabo.tuning.ensemble",  # kept here for existing imports; it stands above this package
    "EnsembleSelection": "selection",
    "PostHocSelection": "selection",
    "ensemble_selection": "selection",
}

__all__ = [
    "EO_LOSSES",
    "ESMBO",
    "METHODS",
    "DivBO",
    "DiversitySurrogate",
    "EnsembleModel",
    "EnsembleOptimization",
    "EnsembleResult",
    "EnsembleSearch",
    "EnsembleSelection",
    "PostHocSelection",
    "c_bound",
    "default_replicates",
    "diversity",
    "diversity_matrix",
    "diversity_weight",
    "ensemble_selection",
    "margin_loss",
    "margin_moments",
    "margins",
    "refit_test_error",
    "sigmoid_loss",
    "sigmoid_scale",
    "squared_margin_loss",
    "surrogate_kendall_tau",
    "tune_ensemble",
]


__getattr__ = lazy_getattr(__name__, _WHERE)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
