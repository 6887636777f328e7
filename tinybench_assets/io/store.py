"""The DuckDB store: ``Store``, one file with tinybench's tables.

Its parts: ``io.connection.DuckDBFile`` (short-lived connections that wait for another process's lock, one transaction
per write), ``io.store_schema.SCHEMA`` (the tables, docs/schema.md), ``io.store_writes.StoreWrites`` (drops,
quarantine, consolidated responses, partition replacements) and ``io.queries.StoreQueries`` (the named reads).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .connection import DuckDBFile, StoreLockTimeout
from .queries import StoreQueries
from .store_schema import SCHEMA
from .store_writes import StoreWrites

__all__ = ["SCHEMA", "Store", "StoreLockTimeout", "as_float_list", "load_matrix"]


class Store(StoreWrites, StoreQueries, DuckDBFile):
    """A DuckDB file with tinybench's tables (``SCHEMA``, created on first use): the writes of ``StoreWrites``, the
    named reads of ``StoreQueries``, the connections of ``DuckDBFile``.

    Parameters
    ----------
    path : the DuckDB file (created with its parent folder on first use).
    lock_timeout : seconds to wait for another process's lock before giving up.
    """

    def __init__(self, path: str | Path, lock_timeout: float = 600.0):
        super().__init__(path, lock_timeout, SCHEMA)


def as_float_list(a: np.ndarray) -> list[list[float]]:
    return [list(map(float, row)) for row in np.atleast_2d(a)]


def load_matrix(store: Store, key: str, binarized: bool = False):
    """The partition's ResponseMatrix (models x items), raw scores or binarized 0/1, NaN = missing."""
    from tinybench_assets.core.responses import ResponseMatrix

    df = store.binarized_long(key) if binarized else store.responses(key)
    if df.empty:
        raise LookupError(f"no {'binarized ' if binarized else ''}responses stored for partition {key!r}; materialize upstream first")
    matrix = ResponseMatrix.from_long(df)
    matrix.meta["partition_key"] = key
    return matrix
