"""What a warm start transfers for one new dataset, read from a knowledge base: the past
runs, their fidelity and how many were measured as the search measures, the dataset's
stored meta-features. The strategies are built from them by name in one place,
:func:`metabo.tuning.registry.resolve_strategy` (the names ``metabo tune --strategy`` and
:func:`metabo.tuning.tune` accept beside the cold ones):

For a new dataset ``d`` stored in the knowledge base (with its meta-features), the past is
every other stored task's successful runs of the objective metric (:class:`PastRuns`),
the tasks holding the same data as ``d`` (same content fingerprint) left out, so that a
dataset tuned a second time does not transfer from its own earlier session, and limited to
the algorithms of the space:

- ``warm``: :class:`~metabo.strategies.portfolio.PortfolioWarmStart` (an adaptive portfolio
  of the past tasks' recorded configurations, then GP-BO; meta-features used when stored);
- ``knn``: :class:`~metabo.strategies.knn.KNNWarmStart` (the 5 nearest tasks by
  meta-features, then GP-BO);
- ``rgpe`` / ``rlgp``: :class:`~metabo.strategies.rgpe.RGPE` /
  :class:`~metabo.strategies.rlgp.RLGP` on the surrogate bank of the past, cached in the
  same store (:meth:`SurrogateBank.fit` with ``kb``: only the tasks whose runs changed are
  refitted);
- ``scot``: :class:`~metabo.strategies.scot.SCoT` at the dataset's meta-features.

``auto`` (:data:`AUTO`, the default of ``tune``, the CLI, the service and ``MetaSearchCV``)
is resolved by :func:`metabo.tuning.registry.resolve_strategy`: ``warm`` whenever the knowledge base holds other
tasks' runs on the space's algorithms (measured ahead of cold GP-BO at every budget on
held-out tasks, ``reports/warm``), cold ``gp`` otherwise, with the reason either way; the
reason names the fidelity of what transfers (:func:`past_fidelity`: the past runs' largest
training-set size), since the shipped knowledge was measured on at most 2,000 training rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from metabo.exceptions import InputDataError
from metabo.space.cash import CASHSpace
from metabo.strategies.names import AUTO, DEFAULT_WARM, WARM_STRATEGIES

if TYPE_CHECKING:
    from metabo.kb.past import PastRuns
    from metabo.kb.store import KnowledgeBase

def past_for(kb: KnowledgeBase, dataset_id: str, space: CASHSpace, *, metric: str = "error_rate",
             other_metrics: bool = False, cv: int | str | None = "auto") -> PastRuns:
    """Every other stored task's runs of ``metric`` on the algorithms of ``space``, the
    tasks with ``dataset_id``'s content left out (module docstring), each task's runs of
    one protocol: the one a search with ``cv`` (the target's) measures it by when stored
    (:meth:`PastRuns.from_kb`'s ``prefer_cv``). ``other_metrics``:
    also the tasks that recorded only another error rate
    (:func:`~metabo.evaluation.metrics.transfer_metrics`; OBOE's meta-dataset). Off by
    default: tasks scored by another error rate made the default warm start worse, not
    better (``reports/warm/oboe/``)."""
    from metabo.evaluation.metrics import transfer_metrics
    from metabo.kb.datasets import same_content_dataset_ids
    from metabo.kb.past import PastRuns

    same = same_content_dataset_ids(kb, dataset_id)
    also = transfer_metrics(metric)[1:] if other_metrics else ()
    past = PastRuns.from_kb(kb, metric=metric, algorithms=list(space.algorithms), also=also, prefer_cv=cv)
    past = past.without({dataset_id, *same})
    if not past.tasks:
        raise InputDataError(f"the knowledge base holds no other task with runs of {metric!r} on the algorithms "
                             f"{list(space.algorithms)}: nothing to warm-start from")
    return past


def measured_alike(past: PastRuns, cv: int | str | None) -> int:
    """How many of ``past``'s tasks contribute runs measured by ``metabo tune``'s protocol
    for ``cv`` (:attr:`PastRuns.protocols`; the rest were measured another way)."""
    from metabo.evaluation.protocols import protocol_label, search_protocol

    alike = {protocol_label(search_protocol(cv, n)) for n in (1, 10**9)}
    return sum(past.protocols.get(t) in alike for t in past.tasks)


def past_fidelity(kb: KnowledgeBase, tasks: Sequence[str], metric: str) -> float | None:
    """The largest training-set size (the runs' ``fidelity``) of the past tasks' runs of
    ``metric``: what is transferred was measured at that fidelity or below, which a target
    trained on many more rows should know (None when no run records it)."""
    if not tasks:
        return None
    from metabo.evaluation.metrics import transfer_metrics
    from metabo.kb.queries import largest_fidelity

    return largest_fidelity(kb, transfer_metrics(metric), tasks)


def stored_meta_features(kb: KnowledgeBase, dataset_id: str) -> dict[str, float]:
    """The stored meta-features of ``dataset_id`` (the finite ones; empty when none)."""
    from metabo.kb.queries import meta_feature_matrix

    mf = meta_feature_matrix(kb)
    if dataset_id not in mf.index:
        return {}
    row = mf.loc[dataset_id]
    return {str(k): float(v) for k, v in row.items() if v == v}


__all__ = ["AUTO", "DEFAULT_WARM", "WARM_STRATEGIES", "measured_alike", "past_fidelity", "past_for",
           "stored_meta_features"]
