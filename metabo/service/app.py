"""The FastAPI application: :func:`create_app` wires the settings, the store, the study
manager, the routes and the error handlers.

The knowledge base is opened when the application starts (its lifespan) and closed when
it stops. Errors become JSON ``{"detail": message}`` with a status code: the request
failed validation (malformed JSON, a body that is not UTF-8, a missing or extra field,
NaN, a wrong type) -> 422; refused input (:class:`~metabo.exceptions.InputDataError`, an
invalid configuration, a flagged dataset) -> 422; an unknown study, trial, dataset or
algorithm -> 404; a conflict (study id taken, trial told twice, too many pending trials)
-> 409; a missing or wrong token -> 401, checked before the body is read
(:class:`~metabo.service.auth.TokenMiddleware`); a method a path does not take -> 405,
its ``Allow`` header naming every method the path takes. Anything else is logged with its
traceback and answered 500 with a short message; no traceback leaves the server.

The OpenAPI schema says what this instance does: with a token, every API operation
requires the bearer scheme and documents its 401; without one, none does.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from metabo.exceptions import (
    DataQualityError,
    InputDataError,
    InvalidConfigurationError,
    KnowledgeBaseError,
    MetaboError,
    UnknownAlgorithmError,
    UnknownDatasetError,
)
from metabo.service.auth import PUBLIC_PATHS, TokenMiddleware, require_token
from metabo.service.errors import ConflictError, NoResultError, UnknownStudyError, UnknownTrialError
from metabo.service.settings import ServiceSettings

logger = logging.getLogger(__name__)

#: Library errors -> HTTP status, the first matching class wins (module docstring).
STATUS: tuple[tuple[type[Exception], int], ...] = (
    (UnknownStudyError, status.HTTP_404_NOT_FOUND),
    (UnknownTrialError, status.HTTP_404_NOT_FOUND),
    (UnknownDatasetError, status.HTTP_404_NOT_FOUND),
    (UnknownAlgorithmError, status.HTTP_404_NOT_FOUND),
    (NoResultError, status.HTTP_404_NOT_FOUND),
    (ConflictError, status.HTTP_409_CONFLICT),
    (InputDataError, status.HTTP_422_UNPROCESSABLE_CONTENT),
    (InvalidConfigurationError, status.HTTP_422_UNPROCESSABLE_CONTENT),
    (DataQualityError, status.HTTP_422_UNPROCESSABLE_CONTENT),
    (KnowledgeBaseError, status.HTTP_500_INTERNAL_SERVER_ERROR),
    (MetaboError, status.HTTP_400_BAD_REQUEST),
)


def _status_of(exc: Exception) -> int:
    return next(code for cls, code in STATUS if isinstance(exc, cls))


async def _metabo_error(request: Request, exc: Exception) -> JSONResponse:
    code = _status_of(exc)
    if code >= 500:
        logger.error("%s %s failed: %s", request.method, request.url.path, exc, exc_info=exc)
    return JSONResponse({"detail": str(exc)}, status_code=code)


def _location(loc: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in loc if part != "body") or "body"


async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    """422 with one readable line per problem; the offending input is not echoed (it may
    be NaN, which JSON cannot carry, or large)."""
    errors = [{"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", "")), "type": str(e.get("type", ""))}
              for e in exc.errors()]
    if any(e["type"] == "json_invalid" for e in errors):
        return JSONResponse({"detail": "malformed JSON body: send a JSON object (standard JSON, UTF-8)",
                             "errors": errors}, status_code=status.HTTP_422_UNPROCESSABLE_CONTENT)
    detail = "; ".join(f"{_location(tuple(e['loc']))}: {e['msg']}" for e in errors) or "invalid request"
    return JSONResponse({"detail": f"invalid request: {detail}", "errors": errors},
                        status_code=status.HTTP_422_UNPROCESSABLE_CONTENT)


def _methods(routes: Iterable[Any], path: str) -> set[str]:
    """The methods the routes (included routers' too) take at ``path``."""
    methods: set[str] = set()
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            methods |= _methods(included.routes, path)
        elif getattr(route, "methods", None) and route.path_regex.match(path):
            methods |= set(route.methods)
    return methods


async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    """Starlette's and FastAPI's own refusals, as JSON: a body that is not UTF-8 (FastAPI
    answers 400) is malformed JSON (422); a 405 names every method of the path."""
    headers = dict(exc.headers or {})
    if exc.status_code == status.HTTP_400_BAD_REQUEST and isinstance(exc.__cause__, UnicodeDecodeError):
        return JSONResponse({"detail": "malformed JSON body: send a JSON object (standard JSON, UTF-8)"},
                            status_code=status.HTTP_422_UNPROCESSABLE_CONTENT)
    if exc.status_code == status.HTTP_405_METHOD_NOT_ALLOWED:
        headers["Allow"] = ", ".join(sorted(_methods(request.app.router.routes, request.url.path)))
    return JSONResponse({"detail": str(exc.detail)}, status_code=exc.status_code, headers=headers)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    logger.error("%s %s failed unexpectedly", request.method, request.url.path, exc_info=exc)
    return JSONResponse({"detail": "internal server error (logged by the service)"},
                        status_code=status.HTTP_500_INTERNAL_SERVER_ERROR)


def create_app(settings: ServiceSettings | None = None) -> FastAPI:
    """The service for ``settings`` (default: loopback, no token, the embedded store)."""
    from metabo.service import routes_knowledge, routes_studies

    settings = settings or ServiceSettings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        from metabo.kb.store import KnowledgeBase
        from metabo.service.store import SerializedStore
        from metabo.service.studies import StudyManager

        store = SerializedStore(KnowledgeBase(settings.kb_path))
        app.state.manager = StudyManager(store, max_pending=settings.max_pending)
        logger.info("serving knowledge base %s", store.kb.path)
        try:
            yield
        finally:
            store.close()

    app = FastAPI(
        title="metabo warm-start service",
        version="1",
        description="Ask/tell hyperparameter optimization warm-started from a meta-learning knowledge base.",
        lifespan=lifespan,
        docs_url=None,  # served below from the installed swagger-ui-bundle: FastAPI's page loads it from a CDN
        redoc_url=None,
    )
    app.state.settings = settings
    app.add_exception_handler(MetaboError, _metabo_error)
    app.add_exception_handler(RequestValidationError, _validation_error)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, _http_error)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, _unexpected)
    # with a token: checked before the body is read, and the bearer scheme in the schema
    secured = [Depends(require_token)] if settings.token is not None else []
    app.include_router(routes_studies.router, dependencies=secured)
    app.include_router(routes_knowledge.router, dependencies=secured)
    if settings.token is not None:
        app.add_middleware(TokenMiddleware, token=settings.token)
    _document_401(app, secured=settings.token is not None)

    _offline_docs(app)

    @app.get("/health", tags=["service"], summary="Liveness (no token needed)")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    return app


def _document_401(app: FastAPI, *, secured: bool) -> None:
    """The schema's 401s as the instance answers them: on every API operation with a
    token, on none without."""
    from fastapi.openapi.utils import get_openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description,
                                 routes=app.routes)
            for path, operations in schema["paths"].items():
                for operation in operations.values():
                    responses = operation.setdefault("responses", {})
                    if secured and path not in PUBLIC_PATHS:
                        responses["401"] = {"description": "Missing or invalid bearer token", "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}}}
                    else:
                        responses.pop("401", None)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _offline_docs(app: FastAPI) -> None:
    """``/docs``: Swagger UI from the files of the ``swagger-ui-bundle`` package, mounted
    at ``/docs-assets``, so the page works on a machine without internet access."""
    from fastapi.openapi.docs import get_swagger_ui_html
    from fastapi.responses import HTMLResponse
    from fastapi.staticfiles import StaticFiles
    from swagger_ui_bundle import swagger_ui_path

    app.mount("/docs-assets", StaticFiles(directory=str(swagger_ui_path)), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url=app.openapi_url or "/openapi.json", title=f"{app.title}: API",
                                   swagger_js_url="/docs-assets/swagger-ui-bundle.js",
                                   swagger_css_url="/docs-assets/swagger-ui.css",
                                   swagger_favicon_url="/docs-assets/favicon-32x32.png")
