"""The pieces of OpenML's XML responses: the namespace, elements, numbers, error bodies."""

from __future__ import annotations

from typing import Any
from xml.sax.saxutils import escape

import numpy as np

NS = 'xmlns:oml="http://openml.org/openml"'
TASK_TYPES: dict[int, str] = {1: "Supervised Classification", 2: "Supervised Regression"}

# What a proxy in front of a crashed backend sends (not well-formed XML: <hr>).
HTML_ERROR = (
    "<html>\r\n<head><title>{status} Internal Server Error</title></head>\r\n<body>\r\n"
    "<center><h1>{status} Internal Server Error</h1></center>\r\n<hr><center>nginx</center>\r\n"
    "</body>\r\n</html>\r\n"
)

# What a web server sends for a path that is not there (well-formed, so the client parses
# it and finds no <oml:error> in it).
HTML_NOT_FOUND = (
    "<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1>"
    "<p>The requested URL was not found on this server.</p></body></html>"
)


def el(tag: str, value: Any) -> str:
    """``<oml:tag>value</oml:tag>`` (escaped), or an empty element for ``None``."""
    if value is None:
        return f"<oml:{tag}/>"
    return f"<oml:{tag}>{escape(str(value))}</oml:{tag}>"


def fmt(value: float | None) -> str | None:
    """A number as OpenML text; ``None`` for a missing or NaN value."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    return repr(float(value))


def error_xml(code: int, message: str, additional: str | None = None) -> str:
    """OpenML's ``<oml:error>`` body (with ``<oml:additional_information>`` if given)."""
    extra = el("additional_information", additional) if additional is not None else ""
    return f'<oml:error {NS}>{el("code", code)}{el("message", message)}{extra}</oml:error>'
