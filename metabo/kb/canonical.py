"""Canonical JSON of a configuration and its hash, re-exported: they live in
:mod:`metabo.space.canonical` (so that :mod:`metabo.space` imports nothing above it)."""

from metabo.space.canonical import canonical_json, config_id, config_id_of_canonical, parse_params

__all__ = ["canonical_json", "config_id", "config_id_of_canonical", "parse_params"]
