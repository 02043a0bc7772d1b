"""Calls into the ``openml`` client: scoped configuration, retries, wrapped errors.

The ``openml`` package keeps its server, cache directory and retry settings in module
globals. :func:`openml_config` sets them for the duration of a ``with`` block, through
the client's public configuration functions (``get_config_as_dict``,
``set_root_cache_directory``, ``set_retry_policy`` and ``config.server``), and puts the
previous values back afterwards, so no global state is left behind. Inside the block
the client's own retry loop is switched off (it sleeps at least a second per try);
:func:`call_openml` retries instead, with exponential backoff, on connection errors,
timeouts, HTTP 5xx and OpenML's "database connection" error (code 107).

The client sends its requests without a timeout, so a server that accepts a connection
and never answers would block it forever. Inside :func:`openml_config` its
``requests.Session`` (the name ``openml._api_calls`` looks up) is one whose requests
time out: each waits at most :attr:`RetryPolicy.timeout` seconds for the connection and
for each read, and never past the :attr:`RetryPolicy.deadline` of the
:func:`call_openml` it belongs to; the tries of one call end together by that deadline.
A server that keeps sending a byte now and then is bounded per read only.

A response the client cannot parse (``ExpatError`` from ``xmltodict``, a missing key,
a value that is not a number, ...) is raised as :class:`OpenMLResponseError` naming the
endpoint; an error the server states on purpose (an unknown id, say) as
:class:`FetchError` with its OpenML code. :func:`check_server` tells a URL that is not
an OpenML API (a wrong ``--server``) from a server that is down, before anything else
is requested: a wrong path answers with a web page, which the client would otherwise
report as a server failing every try.
"""

from __future__ import annotations

import logging
import re
import threading
import time
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit
from xml.parsers.expat import ExpatError

import openml
import openml._api_calls
import requests
import urllib3.exceptions
from openml.exceptions import (
    OpenMLHashException,
    OpenMLServerError,
    OpenMLServerException,
    PyOpenMLError,
)

from metabo.exceptions import FetchError, InputDataError, MetaboError, OpenMLResponseError

logger = logging.getLogger(__name__)

T = TypeVar("T")


class _Unavailable(Exception):
    """An HTTP 5xx or 429 answer to :func:`check_server`'s probe: worth another try."""


#: OpenML's error code for "database connection error": the server asks to try again.
RETRYABLE_CODES: frozenset[int] = frozenset({107})
#: The longest timeout or deadline, in seconds (about 115 days): a socket's timeout
#: overflows the platform's time_t far beyond it (``timeout=1e12``).
MAX_SECONDS = 1e7
#: OpenML's own API root, named in the message of a wrong server URL.
OPENML_API = "https://www.openml.org/api/v1/xml"
_MEASURES_TAG = "<oml:evaluation_measures"
_STATUS_RE = re.compile(r"Status code: (\d{3})")
_TRANSIENT: tuple[type[BaseException], ...] = (
    requests.exceptions.ConnectionError,
    requests.exceptions.ChunkedEncodingError,
    requests.exceptions.Timeout,
    OpenMLHashException,
    _Unavailable,
)
_SERVER_OR_TRANSIENT: tuple[type[BaseException], ...] = (OpenMLServerError, *_TRANSIENT)
# What the client raises when a response body is not what it expects.
_MALFORMED: tuple[type[BaseException], ...] = (
    ExpatError, KeyError, ValueError, TypeError, AssertionError, IndexError, AttributeError,
)
_config_lock = threading.RLock()


@dataclass(frozen=True)
class RetryPolicy:
    """How often to try a call, how long to wait in between, and for how long in all.

    The wait before try ``k + 1`` is ``min(backoff * 2**(k - 1), max_delay)`` seconds.
    ``timeout``: seconds a request waits to connect and for each read of its answer.
    ``deadline``: seconds all tries of one call (one endpoint) take together, waits
    included; ``None``: only ``attempts`` bounds them.
    """

    attempts: int = 4
    backoff: float = 0.5
    max_delay: float = 30.0
    timeout: float = 60.0
    deadline: float | None = 300.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise InputDataError(f"attempts must be >= 1, got {self.attempts}")
        if not (self.backoff >= 0 and self.max_delay >= 0):
            raise InputDataError(f"backoff and max_delay must be >= 0, got {self.backoff}, {self.max_delay}")
        if not (0 < self.timeout <= MAX_SECONDS):
            raise InputDataError(f"timeout must be more than 0 and at most {MAX_SECONDS:g} seconds, "
                                 f"got {self.timeout}")
        if self.deadline is not None and not (0 < self.deadline <= MAX_SECONDS):
            raise InputDataError(f"deadline must be more than 0 and at most {MAX_SECONDS:g} seconds "
                                 f"(or None), got {self.deadline}")

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed try number ``attempt`` (1-based)."""
        return min(self.backoff * 2 ** (attempt - 1), self.max_delay)


DEFAULT_RETRY = RetryPolicy()

# (timeout, monotonic end) of the call_openml in progress; read by _TimedSession.
_LIMITS: ContextVar[tuple[float, float | None]] = ContextVar(
    "openml_request_limits", default=(DEFAULT_RETRY.timeout, None),
)


def _time_left(end: float | None) -> float | None:
    return None if end is None else end - time.monotonic()


class _DeadlineReached(requests.exceptions.Timeout):
    """A request not sent: the deadline of its call has passed."""


class _TimedSession(requests.Session):
    """A session whose requests time out (see :data:`_LIMITS`)."""

    def request(self, method: str, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        timeout, end = _LIMITS.get()
        left = _time_left(end)
        if left is not None and left <= 0:
            raise _DeadlineReached(f"no time left to request {url!s}")
        kwargs["timeout"] = timeout if left is None else min(timeout, left)
        return super().request(method, url, *args, **kwargs)


# What openml._api_calls sees as ``requests`` inside openml_config: the same module,
# with _TimedSession as its Session.
_TIMED_REQUESTS = types.ModuleType("requests")
_TIMED_REQUESTS.__dict__.update(vars(requests))
_TIMED_REQUESTS.Session = _TimedSession  # type: ignore[attr-defined]


@contextmanager
def openml_config(
    server: str | None = None, cache_dir: str | Path | None = None
) -> Iterator[None]:
    """Point the ``openml`` client at ``server`` and ``cache_dir`` inside the block.

    ``None`` keeps the current setting. The client's internal retries are disabled
    (see :func:`call_openml`) and its requests time out (see the module docstring).
    Previous values are restored on exit, also after an error. Blocks are serialized
    by a lock: the settings are process-wide.
    """
    cfg = openml.config
    with _config_lock:
        saved = cfg.get_config_as_dict()
        saved_requests = openml._api_calls.requests
        try:
            openml._api_calls.requests = _TIMED_REQUESTS  # type: ignore[assignment]
            if server is not None:
                cfg.server = server.rstrip("/")
            if cache_dir is not None:
                path = Path(cache_dir).expanduser().resolve()
                path.mkdir(parents=True, exist_ok=True)
                cfg.set_root_cache_directory(path)
            cfg.set_retry_policy("robot", 1)
            yield
        finally:
            openml._api_calls.requests = saved_requests
            cfg.server = saved["server"]
            cfg.set_root_cache_directory(saved["cachedir"])
            cfg.set_retry_policy(saved["retry_policy"], saved["connection_n_retries"])


def current_server() -> str:
    """The server URL the client uses now (inside :func:`openml_config`, the scoped one)."""
    return str(openml.config.server)


def _probe(url: str) -> requests.Response:
    with _TimedSession() as session:
        response = session.get(url)
    if response.status_code >= 500 or response.status_code == 429:
        raise _Unavailable(f"{url} answered HTTP {response.status_code}")
    return response


def check_server(retry: RetryPolicy = DEFAULT_RETRY) -> None:
    """Fail at once if the client's server is not an OpenML XML API.

    Requests ``evaluationmeasure/list`` (a small listing every OpenML server has).
    Connection errors, HTTP 5xx and 429 are retried as in :func:`call_openml`; any
    other answer that is not OpenML's XML (an HTML 404 of a wrong path, a website's
    home page) raises :class:`OpenMLResponseError` naming the URL, without retrying.
    """
    server = current_server()
    url = f"{server}/evaluationmeasure/list"
    response = call_openml(_probe, url, endpoint="evaluationmeasure/list", retry=retry)
    if response.status_code == 200 and _MEASURES_TAG in response.text:
        return
    kind = response.headers.get("Content-Type", "no content type").split(";")[0]
    raise OpenMLResponseError(
        f"{server} does not look like an OpenML API server: {url} answered HTTP "
        f"{response.status_code} ({kind}) instead of OpenML's XML; check the server URL "
        f"(server=, --server on the command line): OpenML's own is {OPENML_API}"
    )


def _is_transient(exc: BaseException) -> bool:
    if isinstance(exc, _TRANSIENT):
        return True
    if isinstance(exc, KeyError) and exc.args == ("oml:error",):
        # the client read an error status whose XML body is not an <oml:error>
        return True
    if isinstance(exc, OpenMLServerException):
        return exc.code in RETRYABLE_CODES
    if isinstance(exc, OpenMLServerError):
        match = _STATUS_RE.search(str(exc))
        return match is not None and (int(match.group(1)) >= 500 or int(match.group(1)) == 429)
    return False


def call_openml(
    fn: Callable[..., T],
    /,
    *args: Any,
    endpoint: str,
    retry: RetryPolicy = DEFAULT_RETRY,
    **kwargs: Any,
) -> T:
    """Call ``fn(*args, **kwargs)`` (an ``openml`` client function) with retries.

    Each request ``fn`` sends times out after ``retry.timeout`` seconds (inside
    :func:`openml_config`); the tries end by ``retry.deadline`` seconds after the first.

    Args:
        fn: the client function.
        endpoint: the API endpoint(s) the call requests, for error messages.
        retry: tries, backoff, timeout and deadline for transient failures.

    Raises:
        OpenMLResponseError: a malformed response, or transient failures on every try
            (or until the deadline): "could not connect" when no connection was made,
            "did not answer" when the server kept silent.
        FetchError: the server answered with an OpenML error (unknown id, ...).
    """
    start = time.monotonic()
    end = None if retry.deadline is None else start + retry.deadline
    token = _LIMITS.set((retry.timeout, end))
    last: BaseException | None = None
    tries, capped = 0, False
    try:
        for attempt in range(1, retry.attempts + 1):
            tries = attempt
            left = _time_left(end)
            capped = left is not None and left < retry.timeout  # the deadline cuts this try short
            try:
                return fn(*args, **kwargs)
            except OpenMLServerException as e:
                if not _is_transient(e):
                    raise FetchError(
                        f"OpenML endpoint {endpoint} answered error {e.code}: {e.message}"
                    ) from e
                last = e
            except _SERVER_OR_TRANSIENT as e:
                if not _is_transient(e):
                    raise OpenMLResponseError(
                        f"OpenML endpoint {endpoint} sent an unexpected response: {_short(e)}"
                    ) from e
                last = e
            except PyOpenMLError as e:
                raise FetchError(f"OpenML call for {endpoint} failed: {_short(e)}") from e
            except MetaboError:
                raise
            except _MALFORMED as e:
                if not _is_transient(e):
                    raise OpenMLResponseError(
                        f"malformed response from OpenML endpoint {endpoint} "
                        f"({type(e).__name__}: {_short(e)}); nothing of it was stored"
                    ) from e
                last = e
            if attempt == retry.attempts:
                break
            wait, left = retry.delay(attempt), _time_left(end)
            if left is not None and wait >= left:
                capped = True
                break  # the next try could not start before the deadline
            logger.warning(
                "OpenML %s failed (try %d of %d): %s; retrying in %.2f s",
                endpoint, attempt, retry.attempts, _short(last), wait,
            )
            time.sleep(wait)
    finally:
        _LIMITS.reset(token)
    raise _gave_up(endpoint, retry, tries, time.monotonic() - start, last, deadline_hit=capped) from last


def _gave_up(
    endpoint: str, retry: RetryPolicy, tries: int, elapsed: float, last: BaseException | None,
    *, deadline_hit: bool,
) -> OpenMLResponseError:
    """The one-line error of a call whose tries all failed transiently."""
    spent = f"{tries} {'try' if tries == 1 else 'tries'} in {elapsed:.1f} s"
    limit = f"the deadline of {retry.deadline:g} s" if deadline_hit else f"{retry.timeout:g} s"
    more = ("allow more time (--timeout and --deadline on the command line, "
            "RetryPolicy(timeout=..., deadline=...))")
    connect = _connect_failure(last)
    if connect is not None:
        host = urlsplit(current_server()).netloc or current_server()
        return OpenMLResponseError(
            f"could not connect to {host} ({connect}) for OpenML endpoint {endpoint}, {spent}; "
            "check the server URL (--server on the command line, server=) and the network"
        )
    if isinstance(last, requests.exceptions.Timeout):
        return OpenMLResponseError(
            f"OpenML endpoint {endpoint} did not answer within {limit} ({spent}, "
            f"{retry.timeout:g} s timeout per request); the server may be hanging or "
            f"overloaded: try again later, or {more}"
        )
    return OpenMLResponseError(
        f"OpenML endpoint {endpoint} failed {tries} times ({spent}), last with: {_short(last)}; "
        "the server may be overloaded or down: try again later, or allow more tries "
        "(--attempts and --deadline on the command line, RetryPolicy(attempts=..., deadline=...))"
    )


def _connect_failure(exc: BaseException | None) -> str | None:
    """Why no connection was made, if ``exc`` (or what it wraps) says none was."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        # urllib3: NameResolutionError < NewConnectionError < ConnectTimeoutError
        if isinstance(exc, urllib3.exceptions.NameResolutionError):
            return "unknown host"
        if isinstance(exc, urllib3.exceptions.NewConnectionError):
            return "connection refused" if "refused" in str(exc).lower() else _short(exc, 120)
        if isinstance(exc, urllib3.exceptions.ConnectTimeoutError | requests.exceptions.ConnectTimeout):
            return "no connection within the timeout"
        if isinstance(exc, urllib3.exceptions.MaxRetryError):
            exc = exc.reason
            continue
        wrapped = exc.args[0] if exc.args and isinstance(exc.args[0], BaseException) else None
        exc = wrapped or exc.__cause__ or exc.__context__
    return None


def _short(exc: BaseException | None, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
