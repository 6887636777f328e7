"""Floats for strict JSON, as the tiny-benchmark artifact writes them: NaN as ``null``, infinities as the strings
``"inf"`` / ``"-inf"``. The steps' ``to_dict`` methods encode with these; the artifact's reader decodes
(:func:`~tinybench_assets.core.tiny_benchmark.format._dec`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def enc(x) -> Any:
    """A float for strict JSON: NaN -> None, +-inf -> "inf" / "-inf"."""
    x = float(x)
    if math.isnan(x):
        return None
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def enc_list(a) -> list:
    """A flat list of :func:`enc` floats."""
    return [enc(v) for v in np.asarray(a, dtype=float).ravel()]


def enc_matrix(a) -> list:
    """A list of rows of :func:`enc` floats."""
    return [[enc(v) for v in row] for row in np.asarray(a, dtype=float)]


def to_dict_or_none(fitted) -> dict | None:
    """``fitted.to_dict()``, or None for None (an interval or map a step did not fit)."""
    return None if fitted is None else fitted.to_dict()


def merge(*parts: dict) -> dict:
    """The union of nested dicts (the fragments the steps' ``to_dict`` write into one block); a key two fragments
    both set to something other than a dict is an error."""
    out: dict = {}
    for part in parts:
        for k, v in part.items():
            if isinstance(v, dict) and isinstance(out.get(k), dict):
                out[k] = merge(out[k], v)
            elif k in out:
                raise ValueError(f"two fragments set {k!r}")
            else:
                out[k] = v
    return out
