"""Published OpenML meta-datasets, read from the files of their PyPI distributions.

Each source is a :class:`~metabo.metadatasets.base.MetaDataset`; :func:`get_source`
returns one by name (``pmf``, ``tensor-oboe``, ``lcdb``, ``autosklearn``, ``oboe``)
and :func:`~metabo.metadatasets.ingest.ingest_metadataset` stores it in a knowledge base.
"""

from __future__ import annotations

import importlib
import os

from metabo.exceptions import InputDataError
from metabo.metadatasets.base import MetaDataset

#: Source name -> "module:class" of its reader (imported on first use).
SOURCES: dict[str, str] = {
    "pmf": "metabo.metadatasets.deeppipe:PMF",
    "tensor-oboe": "metabo.metadatasets.deeppipe:TensorOBOE",
    "lcdb": "metabo.metadatasets.lcdb:LCDB",
    "autosklearn": "metabo.metadatasets.autosklearn:AutoSklearnMetadata",
    "oboe": "metabo.metadatasets.oboe:OBOE",
}


def source_class(name: str) -> type[MetaDataset]:
    """The reader class of the source called ``name``."""
    try:
        target = SOURCES[name]
    except KeyError:
        raise InputDataError(f"unknown meta-dataset {name!r}; available: {sorted(SOURCES)}") from None
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)


def get_source(name: str, cache: str | os.PathLike[str] | None = None, *, fetch: bool = True,
               force: bool = False) -> MetaDataset:
    """A reader of source ``name``: fetched into the cache first unless ``fetch=False``
    (then ``cache`` must hold the extracted files already)."""
    cls = source_class(name)
    if fetch:
        return cls.fetch(cache, force=force)
    if cache is None:
        from metabo.paths import cache_dir

        cache = cache_dir(cls.artifact.project)
    return cls(cache)
