"""Errors of the service's own objects (studies and their trials).

Each names what is wrong and, where there is one, the fix; the HTTP edge
(:mod:`metabo.service.app`) turns them into status codes: unknown -> 404, conflict -> 409.
"""

from __future__ import annotations

from metabo.exceptions import MetaboError


class UnknownStudyError(MetaboError, KeyError):
    """No study of that id is stored."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class UnknownTrialError(MetaboError, KeyError):
    """A trial number that was never asked in the study."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class ConflictError(MetaboError):
    """The request contradicts what is stored: a study id taken, a trial told twice."""


class NoResultError(MetaboError, LookupError):
    """A result that does not exist yet (the best trial of a study with no successful one)."""
