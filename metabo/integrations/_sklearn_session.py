"""The optimizer behind a :class:`~metabo.integrations.sklearn.MetaSearchCV` fit: the data
stored with its meta-features, the strategy built (a warm start reads the other tasks),
the session opened; and closed again however the fit ends."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from metabo.data.dataset import Dataset, feature_frame
from metabo.optimizer.optimizer import Optimizer
from metabo.tuning.registry import resolve_strategy
from metabo.tuning.session import prepare

if TYPE_CHECKING:
    from metabo.integrations._sklearn_space import TunedSpace
    from metabo.integrations.sklearn import MetaSearchCV
    from metabo.kb.store import KnowledgeBase


def as_dataset(X: Any, y: np.ndarray, name: str | None) -> Dataset:
    """``(X, y)`` as a :class:`Dataset` (source ``array``), named ``name`` or after its
    content fingerprint."""
    frame = feature_frame(X).reset_index(drop=True)
    dataset = Dataset(name=name or "data", X=frame, y=pd.Series(pd.Categorical(y.astype(str)), name="y"),
                      source="array")
    return dataset if name else replace(dataset, name=f"data-{dataset.fingerprint[:12]}")


@contextmanager
def open_search(search: MetaSearchCV, space: TunedSpace, X: Any, y: np.ndarray, *, strategy: str, metric: str,
                seed: int) -> Iterator[Optimizer]:
    """The optimizer of one fit (module docstring); without ``search.kb``, a bare one."""
    from metabo.kb.store import KnowledgeBase

    kb: KnowledgeBase | None = None
    owned = search.kb is not None and not isinstance(search.kb, KnowledgeBase)
    if search.kb is not None:
        kb = KnowledgeBase(search.kb) if owned else search.kb
    opt = None
    try:
        dataset_id = None
        if kb is not None:
            dataset_id = prepare(as_dataset(X, y, search.dataset_name), kb=kb, seed=seed).dataset_id
        made = resolve_strategy(strategy, kb, dataset_id, space.space, metric=metric)[2](seed)  # auto: logged why
        settings = {"integration": "sklearn.MetaSearchCV", "n_iter": int(search.n_iter), "cv": repr(search.cv),
                    "scoring": repr(search.scoring), "estimator": repr(search.estimator)}
        opt = Optimizer(space.space, made, kb=kb, dataset_id=dataset_id, metric=metric, seed=seed,
                        settings=settings)
        yield opt
        opt.finish()
    except BaseException:
        if opt is not None:
            opt.finish("failed")
        raise
    finally:
        if owned and kb is not None:
            kb.close()

