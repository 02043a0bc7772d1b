"""Ensembles built from the search (issue 7): post-hoc ensemble selection (Caruana et al.
2004), ESMBO (Lacoste et al. 2014, Algorithm 2) as a strategy wrapping any base strategy,
the ensemble losses of Ensemble Optimization (thesis sec. 4.3) and DivBO's pairwise
diversity; EO and DivBO themselves are to come."""

from metabo.ensembles.diversity import diversity, diversity_matrix
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
from metabo.ensembles.selection import EnsembleSelection, ensemble_selection

__all__ = ["EO_LOSSES", "ESMBO", "EnsembleSelection", "c_bound", "default_replicates", "diversity", "diversity_matrix", "ensemble_selection",
           "margin_loss", "margin_moments", "margins", "sigmoid_loss", "sigmoid_scale", "squared_margin_loss"]
