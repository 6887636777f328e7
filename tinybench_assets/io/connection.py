"""Short-lived, lock-aware connections to one DuckDB file: the embedded engine of ``io.store.Store``.

DuckDB allows one writing process per file. Every access here holds the file only while it lasts and retries (with
jittered back-off) while another process holds the lock, so concurrent Dagster runs wait instead of failing; every
write is one transaction, so a failure leaves what was stored before untouched. ``DuckDBFile`` implements
``io.backend.StoreBackend`` (the PostgreSQL engine is ``io.pg_connection.PostgresDB``).

An access does not start a DuckDB database instance of its own: creating one costs about 14 ms (an in-memory one too),
and a small run-all made about 280 accesses. Each process keeps one in-memory instance (``_Attachments``); an access
ATTACHes the file to it (about 3 ms), takes a cursor with the file as its default catalog, and the file is DETACHed,
its lock released, when the last access of the process using it ends. Accesses of one process at once (nested, or
from threads) share the attachment: a write access waits while another thread's read-only access holds it (inside a
read-only access of its own thread it is an error).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import threading
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
        """A connection to the file for the block; waits (with jittered back-off) while another process holds it."""
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
                key, con = _ATTACHMENTS.open(self.path, read_only)
                break
            except (duckdb.IOException, _Busy) as exc:
                if isinstance(exc, duckdb.IOException) and "lock" not in str(exc).lower():
                    raise
                if time.monotonic() > deadline:
                    raise StoreLockTimeout(f"{self.path} stayed locked for {self.lock_timeout:.0f} s: {exc}") from exc
                time.sleep(delay * (1 + random.random()))
                delay = min(
                    delay * 2, 0.2
                )  # a held file is mostly free again within a fraction of a second: poll it often
        try:
            yield con
        finally:
            _ATTACHMENTS.close(key, con)

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
            return {
                r[0]: ("VARCHAR" if r[1] == NULL_TYPE else r[1])
                for r in con.execute("DESCRIBE SELECT * FROM _types_df").fetchall()
            }


class _Busy(RuntimeError):
    """This process has the file attached read-only and a write access asked for it: wait for the readers to end."""


class _Attachments:
    """The process's in-memory DuckDB instance and the store files attached to it, with the accesses using each.

    ``open`` attaches a file on its first access (read-only or not) and answers its key and a cursor whose default
    catalog is the file; ``close`` closes the cursor and DETACHes the file when no access of the process uses it any
    more (DuckDB releases the file's lock then). One lock guards the bookkeeping; a forked child starts its own
    instance."""

    def __init__(self):
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._base: duckdb.DuckDBPyConnection | None = None
        self._attached: dict[str, list] = {}  # real path -> [alias, read_only, the users' thread idents]

    def open(self, path: Path, read_only: bool) -> tuple[str, duckdb.DuckDBPyConnection]:
        key, me = os.path.realpath(path), threading.get_ident()
        with self._lock:
            if self._pid != os.getpid():  # first use, or a forked child: never touch the parent's instance
                self._pid, self._base, self._attached = os.getpid(), duckdb.connect(":memory:"), {}
            entry = self._attached.get(key)
            if entry is None:
                alias = "store_" + hashlib.sha1(key.encode()).hexdigest()[:12]
                quoted = key.replace("'", "''")
                self._base.execute(f"ATTACH '{quoted}' AS {alias}" + (" (READ_ONLY)" if read_only else ""))
                entry = self._attached[key] = [alias, read_only, []]
            elif entry[1] and not read_only:
                if all(t == me for t in entry[2]):  # waiting would wait for itself
                    raise RuntimeError(f"{key}: a write access inside a read-only access of the same thread")
                raise _Busy(f"{key} is attached read-only by another access of this process")
            entry[2].append(me)
            try:
                con = self._base.cursor()
                con.execute(f"USE {entry[0]}")
            except BaseException:
                self._release(key, me)
                raise
            return key, con

    def close(self, key: str, con: duckdb.DuckDBPyConnection) -> None:
        try:
            con.close()
        finally:
            with self._lock:
                self._release(key, threading.get_ident())

    def _release(self, key: str, thread: int) -> None:
        entry = self._attached.get(key)
        if entry is None or self._pid != os.getpid():
            return
        users = entry[2]
        users.remove(thread if thread in users else users[0])  # a block may end in another thread than it began
        if not users:
            del self._attached[key]
            try:
                self._base.execute(f"DETACH {entry[0]}")
            except Exception:
                if self._attached:  # other files are in use: the instance stays
                    raise
                self._base.close()  # closing the instance detaches everything; the next access starts a new one
                self._pid = None


_ATTACHMENTS = _Attachments()
