"""The REST warm-start service (``metabo serve``) and its Python client.

Server side (FastAPI, imported only by :func:`metabo.service.app.create_app`):
``settings`` (host, port, token, store), ``auth`` (the bearer token), ``schemas``
(pydantic request/response models, the only place pydantic is used), ``store``
(one lock around the DuckDB connection), ``spaces`` and ``datasets`` (what a study is
created from), ``studies`` (one :class:`~metabo.optimizer.Optimizer` per study),
``knowledge`` (queries and bulk ingestion), ``routes_*`` and ``app``.

Client side: :class:`metabo.service.client.RemoteOptimizer` (the ask/tell vocabulary of
:class:`~metabo.optimizer.Optimizer`) and :class:`metabo.service.client.ServiceClient`
(studies, knowledge queries, ingestion); they need httpx only.
"""
