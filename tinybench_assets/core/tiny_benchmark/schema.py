"""Checked reads of the artifact's JSON: every value the estimators use is taken through :class:`Reader`, which
raises ArtifactError naming the file, the JSON path and the problem (a missing key, a wrong type, a string or
null where an integer is expected, a length that disagrees, an index out of range) instead of letting a
malformed or hostile file crash or mislead the evaluation."""

from __future__ import annotations

import math

import numpy as np

from .format import ArtifactError, _dec


class Reader:
    """Typed getters over a parsed JSON document; ``where`` (the file) prefixes every error."""

    def __init__(self, where: str):
        self.where = where

    def fail(self, path: str, msg: str):
        raise ArtifactError(f"{self.where}: {path}: {msg}")

    def key(self, d, key: str, path: str):
        if not isinstance(d, dict):
            self.fail(path, f"expected an object, found {type(d).__name__}")
        if key not in d:
            self.fail(path, f"lacks the key {key!r}")
        return d[key]

    def obj(self, d, key: str, path: str, nullable: bool = False) -> dict | None:
        x = self.key(d, key, path)
        if x is None and nullable:
            return None
        if not isinstance(x, dict):
            self.fail(f"{path}.{key}", f"expected an object, found {type(x).__name__}")
        return x

    def text(self, d, key: str, path: str, choices=None) -> str:
        x = self.key(d, key, path)
        if not isinstance(x, str):
            self.fail(f"{path}.{key}", f"expected a string, found {type(x).__name__}")
        if choices is not None and x not in choices:
            self.fail(f"{path}.{key}", f"{x[:60]!r} is not one of {', '.join(map(str, choices))}")
        return x

    def integer(self, d, key: str, path: str, lo: int | None = None, hi: int | None = None) -> int:
        return self._int(self.key(d, key, path), f"{path}.{key}", lo, hi)

    def _int(self, x, path, lo=None, hi=None) -> int:
        if isinstance(x, bool) or not isinstance(x, int):
            if isinstance(x, float) and math.isfinite(x) and x == int(x):
                x = int(x)
            else:
                self.fail(path, f"expected an integer, found {str(x)[:40]!r}")
        if (lo is not None and x < lo) or (hi is not None and x > hi):
            self.fail(path, f"{x} is outside [{lo}, {hi}]")
        return x

    def number(self, d, key: str, path: str, finite: bool = False) -> float:
        try:
            x = _dec(self.key(d, key, path))
        except ArtifactError as e:
            self.fail(f"{path}.{key}", str(e).replace("artifact holds ", ""))
        if finite and not math.isfinite(x):
            self.fail(f"{path}.{key}", f"{x} is not a finite number")
        return x

    def vector(self, d, key: str, path: str, n: int | None = None, finite: bool = False) -> np.ndarray:
        x = self.key(d, key, path)
        p = f"{path}.{key}"
        if not isinstance(x, list):
            self.fail(p, f"expected a list of numbers, found {type(x).__name__}")
        if n is not None and len(x) != n:
            self.fail(p, f"{len(x)} values, expected {n}")
        try:
            v = np.array([_dec(e) for e in x], dtype=float)
        except ArtifactError as e:
            self.fail(p, str(e).replace("artifact holds ", ""))
        if finite and not np.isfinite(v).all():
            self.fail(p, "holds a value that is not a finite number")
        return v

    def matrix(self, d, key: str, path: str, n: int, dim: int) -> np.ndarray:
        x = self.key(d, key, path)
        p = f"{path}.{key}"
        if not isinstance(x, list) or len(x) != n:
            self.fail(p, f"expected {n} rows, found {len(x) if isinstance(x, list) else type(x).__name__}")
        out = np.empty((n, dim))
        for i, row in enumerate(x):
            if not isinstance(row, list) or len(row) != dim:
                self.fail(f"{p}[{i}]", f"expected {dim} numbers (the IRT dimension)")
            try:
                out[i] = [_dec(e) for e in row]
            except ArtifactError as e:
                self.fail(f"{p}[{i}]", str(e).replace("artifact holds ", ""))
        if not np.isfinite(out).all():
            self.fail(p, "holds a value that is not a finite number")
        return out

    def indices(self, d, key: str, path: str, n: int, size: int) -> np.ndarray:
        """A list of ``n`` distinct integers in [0, size)."""
        x = self.key(d, key, path)
        p = f"{path}.{key}"
        if not isinstance(x, list) or len(x) != n:
            self.fail(p, f"expected {n} integers, found {len(x) if isinstance(x, list) else type(x).__name__}")
        out = np.array([self._int(e, f"{p}[{i}]", 0, size - 1) for i, e in enumerate(x)], dtype=np.int64)
        if len(np.unique(out)) != n:
            self.fail(p, "an index appears twice")
        return out

    def strings(self, d, key: str, path: str, n: int | None = None, nullable: bool = False) -> list:
        x = self.key(d, key, path)
        p = f"{path}.{key}"
        if not isinstance(x, list) or (n is not None and len(x) != n):
            self.fail(p, f"expected a list of {n if n is not None else ''} strings".replace("  ", " "))
        for i, e in enumerate(x):
            if not (isinstance(e, str) or (nullable and e is None)):
                self.fail(f"{p}[{i}]", f"expected a string, found {type(e).__name__}")
        return list(x)

    def names(self, d, key: str, path: str, allowed) -> list[str]:
        """A list of distinct strings, each among ``allowed``."""
        x = self.strings(d, key, path)
        for e in x:
            if e not in allowed:
                self.fail(f"{path}.{key}", f"unknown name {e[:60]!r}")
        if len(set(x)) != len(x):
            self.fail(f"{path}.{key}", "a name appears twice")
        return x
