"""Canonical JSON of a configuration and its hash.

A configuration is ``(algorithm, params)`` with ``params`` a flat or nested mapping of
JSON scalars. Its canonical text is ``json.dumps`` with sorted keys, no whitespace and
Python's shortest round-tripping float repr; integral floats stay floats (``1.0`` and
``1`` are different hyperparameter values: a float and an int parameter). NumPy scalars
are converted to Python ones first. NaN and infinity are not JSON and are refused.

``config_id = sha256(canonical({"algorithm": a, "params": p}))[:16]`` (64 bits, hex).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from metabo.exceptions import InputDataError


def _plain(value: Any, path: str) -> Any:
    """Convert NumPy scalars / tuples to JSON-native values, refusing non-finite floats."""
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise InputDataError(f"configuration key {k!r} at {path or 'top'} is not a string")
            out[k] = _plain(v, f"{path}.{k}" if path else k)
        return out
    if isinstance(value, (list, tuple)):
        return [_plain(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        if not math.isfinite(f):
            raise InputDataError(f"hyperparameter {path!r} is {f}; only finite numbers are allowed")
        return f
    if value is None or isinstance(value, str):
        return value
    raise InputDataError(
        f"hyperparameter {path!r} has a value of type {type(value).__name__}; "
        "use JSON scalars (str, int, float, bool, None), lists or mappings"
    )


def parse_params(params: Mapping[str, Any] | str) -> dict[str, Any]:
    """Accept a mapping or a JSON object text; return plain, validated params."""
    if isinstance(params, str):
        try:
            params = json.loads(params)
        except json.JSONDecodeError as e:
            raise InputDataError(f"configuration is not valid JSON: {e.msg} at char {e.pos}") from e
    if not isinstance(params, Mapping):
        raise InputDataError(
            f"configuration must be a JSON object (mapping), got {type(params).__name__}"
        )
    return _plain(params, "")


def canonical_json(params: Mapping[str, Any] | str) -> str:
    """The canonical text of ``params`` (see module docstring)."""
    return json.dumps(parse_params(params), sort_keys=True, separators=(",", ":"), allow_nan=False)


def config_id(algorithm: str, params: Mapping[str, Any] | str) -> str:
    """64-bit hex id of ``(algorithm, params)``; equal configurations get equal ids."""
    return config_id_of_canonical(algorithm, canonical_json(params))


def config_id_of_canonical(algorithm: str, canonical: str) -> str:
    """:func:`config_id` when ``canonical`` is already :func:`canonical_json` output.

    The hashed text is the canonical JSON of ``{"algorithm": a, "params": p}``: with
    sorted keys "algorithm" comes first, so it is assembled without re-parsing ``p``.
    """
    text = '{"algorithm":' + json.dumps(algorithm) + ',"params":' + canonical + "}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]
