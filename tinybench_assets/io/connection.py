"""Short-lived, lock-aware connections to one DuckDB file: the embedded engine of ``io.store.Store``.

DuckDB allows one writing process per file. Every access here opens a short-lived connection and retries (with
jittered back-off) while another process holds the lock, so concurrent Dagster runs wait instead of failing; every
write is one transaction, so a failure leaves what was stored before untouched. ``DuckDBFile`` implements
``io.backend.StoreBackend`` (the PostgreSQL engine is ``io.pg_connection.PostgresDB``).
"""
from __future__ import annotations

import contextlib
import random
import time
from pathlib import Path
from typing import Iterator

import duckdb
import pandas as pd

from .backend import NULL_TYPE, StoreBackend


class StoreLockTimeout(RuntimeError):
    """Another process held the DuckDB file longer than the wait allowed."""


class DuckDBFile(StoreBackend):
    """A DuckDB file reached through short-lived connections.

    Parameters
    ----------
    path : the DuckDB file (created with its parent folder on first use).
    lock_timeout : seconds to wait for another process's lock before giving up.
    schema : SQL run once, before the first connection is handed out (idempotent DDL).
    """

    def __init__(self, path: str | Path, lock_timeout: float = 600.0, schema: str = ""):
        self.path = Path(path)
        self.lock_timeout = lock_timeout
        self.schema = schema
        self._ready = False

    engine = "duckdb"

    @property
    def location(self) -> str:
        return str(self.path)

    @contextlib.contextmanager
    def connect(self, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """A short-lived connection; waits (with jittered back-off) while another process holds the file."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self._ready:
            self._ready = True
            with self.connect() as con:
                if self.schema:
                    con.execute(self.schema)
        if read_only and not self.path.exists():
            read_only = False
        deadline, delay = time.monotonic() + self.lock_timeout, 0.05
        while True:
            try:
                con = duckdb.connect(str(self.path), read_only=read_only)
                break
            except duckdb.IOException as exc:
                if "lock" not in str(exc).lower() or time.monotonic() > deadline:
                    if "lock" in str(exc).lower():
                        raise StoreLockTimeout(f"{self.path} stayed locked for {self.lock_timeout:.0f} s: {exc}") from exc
                    raise
                time.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 0.2)  # a held file is mostly free again within a fraction of a second: poll it often
        try:
            yield con
        finally:
            con.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One write transaction: everything inside commits together or not at all."""
        with self.connect() as con:
            con.execute("BEGIN TRANSACTION")
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")

    def query(self, sql: str, params: list | None = None) -> pd.DataFrame:
        with self.connect(read_only=True) as con:
            return con.execute(sql, params or []).df()

    @contextlib.contextmanager
    def frame(self, con, name: str, df: pd.DataFrame, like: str | None = None) -> Iterator[None]:
        """``df`` registered as the view ``name`` on ``con`` (DuckDB scans the DataFrame in place; NaN reads as NULL;
        the INSERT casts to the target's types, so ``like`` is not needed)."""
        con.register(name, df)
        try:
            yield
        finally:
            con.unregister(name)

    def frame_types(self, con, df: pd.DataFrame) -> dict[str, str]:
        """DuckDB's types of the frame's columns; an all-NULL column (DuckDB's type "NULL", which no later value can be
        cast to) is VARCHAR, as on PostgreSQL (``pg_frames.sql_type``)."""
        with self.frame(con, "_types_df", df):
            return {r[0]: ("VARCHAR" if r[1] == NULL_TYPE else r[1])
                    for r in con.execute("DESCRIBE SELECT * FROM _types_df").fetchall()}
