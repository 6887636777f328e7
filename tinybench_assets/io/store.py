"""The results store: ``Store``, tinybench's tables in a DuckDB file (the embedded default) or on PostgreSQL.

``Store(target)`` opens the engine its target names (``io.backend``): a path is a DuckDB file (``DuckDBStore``), a
``postgresql://`` URL a PostgreSQL database (``PostgresStore``, the scale-out profile of deploy/postgres.md). Both are
``Store`` instances with the same methods: the writes of ``io.store_writes.StoreWrites`` (drops, quarantine,
consolidated responses, partition replacements), the named reads of ``io.queries.StoreQueries`` and
``io.cost_queries.CostQueries`` (costs and prices), the tables of ``io.store_schema.SCHEMA`` (docs/schema.md), over
the engine's connections (``io.connection.DuckDBFile``: short-lived connections that wait for another process's lock;
``io.pg_connection.PostgresDB``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tinybench_assets.core.responses import ResponseMatrix

from .backend import StoreUnavailable, is_postgres_url, mask_url
from .connection import DuckDBFile, StoreLockTimeout
from .cost_queries import CostQueries
from .pg_connection import PostgresDB
from .queries import StoreQueries
from .store_schema import SCHEMA
from .store_writes import StoreWrites

__all__ = [
    "SCHEMA",
    "DuckDBStore",
    "PostgresStore",
    "Store",
    "StoreLockTimeout",
    "StoreUnavailable",
    "as_float_list",
    "is_postgres_url",
    "load_matrix",
    "mask_url",
]


class Store(StoreWrites, StoreQueries, CostQueries):
    """tinybench's tables (``SCHEMA``, created on first use) on the engine ``target`` names.

    Parameters
    ----------
    target : a DuckDB file path (created with its parent folder on first use), or a ``postgresql://`` URL.
    lock_timeout : seconds to wait for another writer's lock (DuckDB: the file's; PostgreSQL: the same partition's).

    ``Store(path)`` is a ``DuckDBStore``, ``Store("postgresql://...")`` a ``PostgresStore``; ``engine`` and
    ``location`` (path, or URL with its password masked) say which.
    """

    def __new__(cls, *args, **kwargs):
        if cls is Store:
            target = args[0] if args else kwargs.get("target", kwargs.get("path"))
            cls = PostgresStore if is_postgres_url(target) else DuckDBStore
        return super().__new__(cls)


class DuckDBStore(Store, DuckDBFile):
    """The store in one DuckDB file (one writer at a time; the file's lock is waited for)."""

    def __init__(self, path: str | Path, lock_timeout: float = 600.0):
        DuckDBFile.__init__(self, path, lock_timeout, SCHEMA)


class PostgresStore(Store, PostgresDB):
    """The store in a PostgreSQL database (many writers at once; a partition replace is one transaction)."""

    def __init__(self, url: str, lock_timeout: float = 600.0):
        PostgresDB.__init__(self, url.strip(), lock_timeout, SCHEMA)


def as_float_list(a: np.ndarray) -> list[list[float]]:
    return [list(map(float, row)) for row in np.atleast_2d(a)]


def load_matrix(store: Store, key: str, binarized: bool = False):
    """The partition's ResponseMatrix (models x items), raw scores or binarized 0/1, NaN = missing."""
    df = store.binarized_long(key) if binarized else store.responses(key)
    if df.empty:
        raise LookupError(
            f"no {'binarized ' if binarized else ''}responses stored for partition {key!r}; materialize upstream first"
        )
    matrix = ResponseMatrix.from_long(df)
    matrix.meta["partition_key"] = key
    return matrix


def training_matrix(store: Store, key: str):
    """The binarized matrix without items of a held-out item split (RouterDC ``test`` questions): what IRT fits and
    the estimators learn from."""
    import numpy as np

    matrix = load_matrix(store, key, binarized=True)
    split = store.item_split(key)
    keep = np.array([split.get(i) != "test" for i in matrix.items])
    return matrix.subset(items=keep) if not keep.all() else matrix
