"""RLGP: relative landmark-weighted GP ensembles (Manolache & Vanschoren 2019, the seed
rlgp-manolache-2019), a strategy of the ask/tell optimizer.

One base GP per (past task, algorithm); per algorithm, the weighted ensemble of the past
tasks' GPs and the target's GP; each task's weight from how well *all* its algorithms'
GPs order the target's observed pairs (eqs. 2, 6-8), with ``S`` posterior samples and
leave-one-out target predictions; EI per algorithm; by default one configuration per
iteration, the algorithm whose ensemble offers the largest EI (the paper evaluates one per
algorithm each iteration: ``one_per_algorithm=True``). Choices where the paper is
ambiguous are in :mod:`metabo.strategies.weights` (arg max with ties to the target) and
:mod:`metabo.strategies.transfer_ensemble` (scales, renormalization, missing models).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from metabo.strategies.transfer_ensemble import WeightedGPEnsembles

if TYPE_CHECKING:
    from metabo.surrogates.bank import SurrogateBank


class RLGP(WeightedGPEnsembles):
    """RLGP (module docstring); arguments as :class:`WeightedGPEnsembles` (``scope="task"``)."""

    name = "rlgp"

    def __init__(self, bank: SurrogateBank, **kwargs: Any) -> None:
        super().__init__(bank, scope="task", **kwargs)


__all__ = ["RLGP"]
