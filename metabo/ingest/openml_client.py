"""The OpenML client's wrapper, re-exported: it lives in :mod:`metabo.data.openml_client`
(so that :mod:`metabo.data` imports nothing above it)."""

from metabo.data.openml_client import (
    DEFAULT_RETRY,
    MAX_SECONDS,
    OPENML_API,
    RETRYABLE_CODES,
    RetryPolicy,
    call_openml,
    check_server,
    current_server,
    openml_config,
)
from metabo.exceptions import FetchError, InputDataError, MetaboError, OpenMLResponseError

__all__ = [
    "DEFAULT_RETRY",
    "MAX_SECONDS",
    "OPENML_API",
    "RETRYABLE_CODES",
    "FetchError",
    "InputDataError",
    "MetaboError",
    "OpenMLResponseError",
    "RetryPolicy",
    "call_openml",
    "check_server",
    "current_server",
    "openml_config",
]
