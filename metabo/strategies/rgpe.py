"""RGPE: ranking-weighted GP ensembles (Feurer, Letham and Bakshy 2018, "Scalable
meta-learning for Bayesian optimization using ranking-weighted Gaussian process
ensembles"), the baseline RLGP is measured against, over a CASH space.

The RLGP paper runs RGPE per algorithm; here each algorithm's ensemble of the past tasks'
GPs and the target's GP is weighted from that algorithm's own observed pairs (sec. 3.2:
ranking loss over ``S`` posterior samples, leave-one-out target predictions, sec. 3.3:
weight dilution guard), and the algorithm whose ensemble offers the largest EI is
evaluated, the same composition as RLGP (:mod:`metabo.strategies.transfer_ensemble`) so
that the weights are the only difference between the two.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from metabo.strategies.transfer_ensemble import WeightedGPEnsembles

if TYPE_CHECKING:
    from metabo.surrogates.bank import SurrogateBank


class RGPE(WeightedGPEnsembles):
    """RGPE (module docstring); arguments as :class:`WeightedGPEnsembles`
    (``scope="algorithm"``, dilution guard on by default)."""

    name = "rgpe"

    def __init__(self, bank: SurrogateBank, *, dilution: bool = True, **kwargs: Any) -> None:
        super().__init__(bank, scope="algorithm", dilution=dilution, **kwargs)


__all__ = ["RGPE"]
