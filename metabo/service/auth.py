"""The bearer token: when the service has one, every API request must carry
``Authorization: Bearer <token>`` (compared in constant time); without one (loopback
only, :mod:`metabo.service.settings`) requests pass.

:class:`TokenMiddleware` checks the header before the request reaches a route, so a
request without the token is answered 401 whatever its body (FastAPI reads and parses
the body before it runs a route's dependencies); :func:`require_token`, the routes'
dependency, puts the bearer scheme in the OpenAPI schema and checks again.
"""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, HTTPException, Request, status
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.types import ASGIApp, Receive, Scope, Send

#: Paths answered without a token: liveness, the schema and its documentation page.
PUBLIC_PATHS = frozenset({"/health", "/openapi.json", "/docs"})
PUBLIC_PREFIX = "/docs-assets/"
_bearer = HTTPBearer(auto_error=False, description="the token `metabo serve` was started with")
_CHALLENGE = {"WWW-Authenticate": "Bearer"}


def token_error(authorization: str | None, expected: str) -> str | None:
    """Why a request with this ``Authorization`` header is refused (None: it carries the token)."""
    scheme, _, credentials = (authorization or "").partition(" ")
    if not authorization or scheme.lower() != "bearer" or not credentials.strip():
        return "this service requires a bearer token: send the header 'Authorization: Bearer <token>'"
    if not hmac.compare_digest(credentials.strip().encode(), expected.encode()):
        return "invalid bearer token"
    return None


class TokenMiddleware:
    """ASGI middleware: 401 for a request to an API path without ``token`` (module docstring)."""

    def __init__(self, app: ASGIApp, *, token: str) -> None:
        self.app, self.token = app, token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIX):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or ())
        raw = headers.get(b"authorization")
        problem = token_error(None if raw is None else raw.decode("latin-1"), self.token)
        if problem is None:
            await self.app(scope, receive, send)
            return
        response = JSONResponse({"detail": problem}, status_code=status.HTTP_401_UNAUTHORIZED, headers=_CHALLENGE)
        await response(scope, receive, send)


def require_token(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> None:
    """Refuse (401) a request without the service's token; a dependency of every API route
    (``credentials`` puts the bearer scheme in the schema)."""
    expected: str | None = request.app.state.settings.token
    if expected is None:
        return
    problem = token_error(request.headers.get("authorization"), expected)
    if problem is not None:
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, problem, headers=_CHALLENGE)
