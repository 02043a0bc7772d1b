"""Injected faults and the request log of the fake server."""

from __future__ import annotations

from dataclasses import dataclass

from metabo.testing.openml_server.api import list_filters


@dataclass(frozen=True)
class LoggedRequest:
    """One request the server saw: ``endpoint`` is the API call (empty for downloads)."""

    method: str
    path: str
    endpoint: str
    status: int

    @property
    def filters(self) -> dict[str, str]:
        """``name -> value`` pairs after ``/list/`` (``limit``, ``offset``, ``task``, ...)."""
        return list_filters(self.endpoint.split("/"))[1] if "/list" in self.endpoint else {}


@dataclass
class Fault:
    """The next ``remaining`` matching responses (``None``: all) fail, come malformed or
    never come (``hang``: the request is read, no answer is sent)."""

    remaining: int | None
    status: int
    code: int
    prefix: str | None
    malformed: bool = False
    hang: bool = False

    def matches(self, endpoint: str, path: str) -> bool:
        if self.prefix is None:
            return True
        return path.startswith(self.prefix) if self.prefix.startswith("/") else endpoint.startswith(self.prefix)


def take_fault(faults: list[Fault], endpoint: str, path: str) -> Fault | None:
    """The first fault matching a request, counted down (and dropped once used up)."""
    for fault in faults:
        if fault.matches(endpoint, path):
            if fault.remaining is not None:
                fault.remaining -= 1
                if fault.remaining <= 0:
                    faults.remove(fault)
            return fault
    return None
