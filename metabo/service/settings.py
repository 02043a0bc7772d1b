"""Where the service listens, who may call it, and which knowledge base it serves.

The service binds the loopback interface by default. Bound anywhere else it requires a
bearer token (``--token`` or the environment variable :data:`TOKEN_ENV`), and refuses to
start without one: a warm-start service writes to the knowledge base on every ``tell``.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from metabo.exceptions import InputDataError

#: The environment variable a token is read from when ``--token`` is not given.
TOKEN_ENV = "METABO_TOKEN"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
#: Pending trials a study may have open at once (clients evaluating in parallel).
DEFAULT_MAX_PENDING = 100


def is_loopback(host: str) -> bool:
    """Whether ``host`` names the loopback interface only (``localhost``, 127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class ServiceSettings:
    """Args:
        host, port: the address to bind.
        token: the bearer token every API request must carry (None: no check, loopback only).
        kb_path: the knowledge base file (None: the embedded default, :mod:`metabo.paths`).
        max_pending: the most pending trials a study may have open; an ask beyond them is
            refused (409) until some are told.
    """

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    token: str | None = None
    kb_path: Path | None = None
    max_pending: int = DEFAULT_MAX_PENDING

    def __post_init__(self) -> None:
        if isinstance(self.max_pending, bool) or not isinstance(self.max_pending, int) or self.max_pending < 1:
            raise InputDataError(f"max_pending must be an integer of at least 1, got {self.max_pending!r}")
        if not 0 <= self.port <= 65535:
            raise InputDataError(f"port must be in 0..65535, got {self.port}")
        if self.token is not None and not self.token.strip():
            raise InputDataError("the token is empty; pass a non-empty --token or unset METABO_TOKEN")
        if not is_loopback(self.host) and self.token is None:
            raise InputDataError(
                f"refusing to bind {self.host} without a token: anyone on the network could write to the "
                f"knowledge base. Pass --token (or set {TOKEN_ENV}), or bind {DEFAULT_HOST}"
            )

    @classmethod
    def resolve(
        cls, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, token: str | None = None,
        kb_path: str | Path | None = None, environ: Mapping[str, str] | None = None,
        max_pending: int = DEFAULT_MAX_PENDING,
    ) -> ServiceSettings:
        """The settings of ``metabo serve``: ``token`` if given, else :data:`TOKEN_ENV`."""
        env = os.environ if environ is None else environ
        token = token if token is not None else (env.get(TOKEN_ENV) or None)
        return cls(host=host, port=port, token=token, kb_path=None if kb_path is None else Path(kb_path),
                   max_pending=max_pending)
