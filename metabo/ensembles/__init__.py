"""Ensembles built from the search (issue 7): post-hoc ensemble selection (Caruana et al.
2004), ESMBO (Lacoste et al. 2014, Algorithm 2), Ensemble Optimization (EO, thesis ch. 4)
with its losses (sec. 4.3), DivBO (Shen et al. 2022) with its pairwise diversity and
diversity surrogate; each search wraps any strategy of the project, warm starts included;
:func:`tune_ensemble` runs one on a dataset and :class:`EnsembleModel` is the deployable
ensemble (members refitted, saved and loaded)."""

from metabo.ensembles.base import EnsembleSearch
from metabo.ensembles.diversity import diversity, diversity_matrix
from metabo.ensembles.divbo import DivBO, DiversitySurrogate, diversity_weight, surrogate_kendall_tau
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
from metabo.ensembles.search import METHODS, EnsembleResult, tune_ensemble
from metabo.ensembles.selection import EnsembleSelection, PostHocSelection, ensemble_selection

__all__ = ["EO_LOSSES", "ESMBO", "METHODS", "DivBO", "DiversitySurrogate", "EnsembleModel", "EnsembleOptimization",
           "EnsembleResult", "EnsembleSearch", "EnsembleSelection", "PostHocSelection", "c_bound",
           "default_replicates", "diversity", "diversity_matrix", "diversity_weight", "ensemble_selection",
           "margin_loss", "margin_moments", "margins", "refit_test_error", "sigmoid_loss", "sigmoid_scale",
           "squared_margin_loss", "surrogate_kendall_tau", "tune_ensemble"]
