"""The bearer token: when the service has one, every API request must carry
``Authorization: Bearer <token>`` (compared in constant time); without one (loopback
only, :mod:`metabo.service.settings`) requests pass."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

_bearer = HTTPBearer(auto_error=False, description="the token `metabo serve` was started with")
_CHALLENGE = {"WWW-Authenticate": "Bearer"}


def require_token(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> None:
    """Refuse (401) a request without the service's token; a dependency of every API route."""
    expected: str | None = request.app.state.settings.token
    if expected is None:
        return
    if credentials is None:
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "this service requires a bearer token: send the "
                            "header 'Authorization: Bearer <token>'", headers=_CHALLENGE)
    if not hmac.compare_digest(credentials.credentials.encode(), expected.encode()):
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "invalid bearer token", headers=_CHALLENGE)
