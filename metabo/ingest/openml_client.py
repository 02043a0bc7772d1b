"""Calls into the ``openml`` client: scoped configuration, retries, wrapped errors.

The ``openml`` package keeps its server, cache directory and retry settings in module
globals. :func:`openml_config` sets them for the duration of a ``with`` block, through
the client's public configuration functions (``get_config_as_dict``,
``set_root_cache_directory``, ``set_retry_policy`` and ``config.server``), and puts the
previous values back afterwards, so no global state is left behind. Inside the block
the client's own retry loop is switched off (it sleeps at least a second per try);
:func:`call_openml` retries instead, with exponential backoff, on connection errors,
HTTP 5xx and OpenML's "database connection" error (code 107).

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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from xml.parsers.expat import ExpatError

import openml
import requests
from openml.exceptions import (
    OpenMLHashException,
    OpenMLServerError,
    OpenMLServerException,
    PyOpenMLError,
)

from metabo.exceptions import FetchError, MetaboError, OpenMLResponseError

logger = logging.getLogger(__name__)

T = TypeVar("T")


class _Unavailable(Exception):
    """An HTTP 5xx or 429 answer to :func:`check_server`'s probe: worth another try."""


#: OpenML's error code for "database connection error": the server asks to try again.
RETRYABLE_CODES: frozenset[int] = frozenset({107})
#: OpenML's own API root, named in the message of a wrong server URL.
OPENML_API = "https://www.openml.org/api/v1/xml"
#: Seconds :func:`check_server` waits for an answer.
PROBE_TIMEOUT = 60.0
_MEASURES_TAG = "<oml:evaluation_measures"
_STATUS_RE = re.compile(r"Status code: (\d{3})")
_TRANSIENT: tuple[type[BaseException], ...] = (
    requests.exceptions.ConnectionError,
    requests.exceptions.ChunkedEncodingError,
    requests.exceptions.Timeout,
    OpenMLHashException,
    _Unavailable,
)
# What the client raises when a response body is not what it expects.
_MALFORMED: tuple[type[BaseException], ...] = (
    ExpatError, KeyError, ValueError, TypeError, AssertionError, IndexError, AttributeError,
)
_config_lock = threading.RLock()


@dataclass(frozen=True)
class RetryPolicy:
    """How often to try a call and how long to wait in between.

    The wait before try ``k + 1`` is ``min(backoff * 2**(k - 1), max_delay)`` seconds.
    """

    attempts: int = 4
    backoff: float = 0.5
    max_delay: float = 30.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be >= 1, got {self.attempts}")
        if self.backoff < 0 or self.max_delay < 0:
            raise ValueError("backoff and max_delay must be >= 0")

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed try number ``attempt`` (1-based)."""
        return min(self.backoff * 2 ** (attempt - 1), self.max_delay)


DEFAULT_RETRY = RetryPolicy()


@contextmanager
def openml_config(
    server: str | None = None, cache_dir: str | Path | None = None
) -> Iterator[None]:
    """Point the ``openml`` client at ``server`` and ``cache_dir`` inside the block.

    ``None`` keeps the current setting. The client's internal retries are disabled
    (see :func:`call_openml`). Previous values are restored on exit, also after an
    error. Blocks are serialized by a lock: the settings are process-wide.
    """
    cfg = openml.config
    with _config_lock:
        saved = cfg.get_config_as_dict()
        try:
            if server is not None:
                cfg.server = server.rstrip("/")
            if cache_dir is not None:
                path = Path(cache_dir).expanduser().resolve()
                path.mkdir(parents=True, exist_ok=True)
                cfg.set_root_cache_directory(path)
            cfg.set_retry_policy("robot", 1)
            yield
        finally:
            cfg.server = saved["server"]
            cfg.set_root_cache_directory(saved["cachedir"])
            cfg.set_retry_policy(saved["retry_policy"], saved["connection_n_retries"])


def current_server() -> str:
    """The server URL the client uses now (inside :func:`openml_config`, the scoped one)."""
    return str(openml.config.server)


def _probe(url: str) -> requests.Response:
    response = requests.get(url, timeout=PROBE_TIMEOUT)
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

    Args:
        fn: the client function.
        endpoint: the API endpoint(s) the call requests, for error messages.
        retry: tries and backoff for transient failures.

    Raises:
        OpenMLResponseError: a malformed response, or transient failures on every try.
        FetchError: the server answered with an OpenML error (unknown id, ...).
    """
    last: BaseException | None = None
    for attempt in range(1, retry.attempts + 1):
        try:
            return fn(*args, **kwargs)
        except OpenMLServerException as e:
            if not _is_transient(e):
                raise FetchError(
                    f"OpenML endpoint {endpoint} answered error {e.code}: {e.message}"
                ) from e
            last = e
        except (OpenMLServerError, *_TRANSIENT) as e:
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
        if attempt < retry.attempts:
            wait = retry.delay(attempt)
            logger.warning(
                "OpenML %s failed (try %d of %d): %s; retrying in %.2f s",
                endpoint, attempt, retry.attempts, _short(last), wait,
            )
            time.sleep(wait)
    raise OpenMLResponseError(
        f"OpenML endpoint {endpoint} failed {retry.attempts} times, last with: {_short(last)}; "
        "the server may be overloaded or down: try again later or allow more attempts "
        "(RetryPolicy(attempts=...))"
    ) from last


def _short(exc: BaseException | None, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
