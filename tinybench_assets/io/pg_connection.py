"""The results store on PostgreSQL (the scale-out profile, deploy/postgres.md): ``PostgresDB``, the same interface as
``io.connection.DuckDBFile`` (``io.backend.StoreBackend``) over psycopg 3.

What differs from DuckDB is here and nowhere else: ``?`` placeholders become psycopg's ``%s``; DuckDB's type names in
the schema become PostgreSQL's (``DOUBLE`` -> ``DOUBLE PRECISION``, ``UTINYINT`` -> ``SMALLINT``, ``isfinite(x)`` ->
``x < 'Infinity'``); a DataFrame the SQL reads is a temporary table filled by COPY (DuckDB scans the frame in place);
results come back with DuckDB's dtypes (``io.pg_frames``). PostgreSQL takes many writers at once: a partition replace
is one transaction (DELETE + INSERT) holding a lock named after its table and partition, so writers of different
partitions run side by side and two writers of the same partition take turns; DDL (the schema, a result table's
first write, an added column) runs under one lock too. Connections are short-lived, as with DuckDB.
"""

from __future__ import annotations

import contextlib
import re
from typing import Iterator

import pandas as pd

from .backend import StoreBackend, StoreUnavailable, mask_url
from .pg_frames import frame_rows, result_frame, sql_type

_DDL_WORDS = [
    (re.compile(r"\bDOUBLE\b(?!\s+PRECISION)", re.IGNORECASE), "DOUBLE PRECISION"),
    (re.compile(r"\bUTINYINT\b", re.IGNORECASE), "SMALLINT"),
    (re.compile(r"\bisfinite\((\w+)\)", re.IGNORECASE), r"\1 < 'Infinity'"),
]
SCHEMA_LOCK = "tinybench:ddl"


def pg_ddl(schema: str) -> str:
    """The schema's DuckDB DDL in PostgreSQL's words (types and ``isfinite``; everything else is the same SQL)."""
    for pattern, repl in _DDL_WORDS:
        schema = pattern.sub(repl, schema)
    return schema


def pg_sql(sql: str) -> str:
    """``?`` placeholders as psycopg's ``%s`` (a literal ``%`` doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")


def _plain(params) -> list:
    return [p.item() if hasattr(p, "item") and not isinstance(p, (str, bytes)) else p for p in params]


class PgConnection:
    """A psycopg connection that speaks the store's SQL: ``execute(sql, params)`` with ``?`` placeholders, returning
    the cursor (``fetchone`` / ``fetchall``). ``raw`` is the psycopg connection."""

    def __init__(self, raw):
        self.raw = raw

    def execute(self, sql: str, params: list | None = None):
        cur = self.raw.cursor()
        if params is None:
            cur.execute(sql)  # no placeholders: several statements may run at once (the schema)
        else:
            cur.execute(pg_sql(sql), _plain(params))
        return cur


class PostgresDB(StoreBackend):
    """A PostgreSQL database reached through short-lived connections.

    Parameters
    ----------
    url : ``postgresql://user:password@host:port/database`` (libpq's URL; ``?host=/socket/dir`` for a unix socket).
    lock_timeout : seconds a writer waits for another writer's lock on the same partition (or DDL) before failing.
    schema : DuckDB-worded DDL run once, under a lock, before the first connection is handed out (``pg_ddl``).
    connect_timeout : seconds to wait for the server before ``StoreUnavailable``.
    """

    engine = "postgresql"

    def __init__(self, url: str, lock_timeout: float = 600.0, schema: str = "", connect_timeout: float = 10.0):
        self.url = url
        self.lock_timeout = lock_timeout
        self.schema = schema
        self.connect_timeout = connect_timeout
        self._ready = False

    @property
    def location(self) -> str:
        return mask_url(self.url)

    def _open(self):
        import psycopg

        try:
            raw = psycopg.connect(self.url, autocommit=True, connect_timeout=max(1, int(self.connect_timeout)))
        except psycopg.Error as exc:
            reason = " ".join(str(exc).split())
            if ":" in self.url and "@" in self.url:  # never echo the password, whatever libpq put in its message
                secret = self.url.split("://", 1)[-1].split("@", 1)[0].partition(":")[2]
                reason = reason.replace(secret, "***") if secret else reason
            raise StoreUnavailable(f"PostgreSQL results store {self.location} is unreachable: {reason}") from exc
        raw.execute(f"SET lock_timeout = {int(self.lock_timeout * 1000)}")
        return raw

    @contextlib.contextmanager
    def connect(self, read_only: bool = False) -> Iterator[PgConnection]:
        """A short-lived connection (autocommit: each statement commits unless inside ``transaction()``)."""
        if not self._ready:
            with contextlib.closing(self._open()) as raw, raw.transaction():
                con = PgConnection(raw)
                self.lock(con, SCHEMA_LOCK)
                if self.schema:
                    con.execute(pg_ddl(self.schema))
            self._ready = True
        raw = self._open()
        try:
            yield PgConnection(raw)
        finally:
            raw.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[PgConnection]:
        """One write transaction: everything inside commits together or not at all."""
        with self.connect() as con, con.raw.transaction():
            yield con

    def query(self, sql: str, params: list | None = None) -> pd.DataFrame:
        with self.connect(read_only=True) as con:
            cur = con.execute(sql, params or [])
            return result_frame(cur.fetchall(), cur.description)

    @contextlib.contextmanager
    def frame(self, con: PgConnection, name: str, df: pd.DataFrame, like: str | None = None) -> Iterator[None]:
        """``df`` as the temporary table ``name``, rows by COPY (NaN -> NULL). A column takes the type of the column of
        the same name in table ``like`` (the table the rows go to: an all-NULL column then fits it), else the type
        ``io.pg_frames.sql_type`` gives."""
        target = {}
        if like is not None:
            target = dict(
                con.execute(
                    "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
                    "WHERE c.relname = ? AND c.relnamespace = current_schema()::regnamespace AND a.attnum > 0 AND NOT a.attisdropped",
                    [like],
                ).fetchall()
            )
        cols = ", ".join(f'"{c}" {target.get(c) or sql_type(df[c])}' for c in df.columns)
        con.execute(f'CREATE TEMPORARY TABLE "{name}" ({cols})', None)
        if len(df):
            names = ", ".join(f'"{c}"' for c in df.columns)
            with con.raw.cursor().copy(f'COPY "{name}" ({names}) FROM STDIN') as copy:
                ints = {
                    c
                    for c in df.columns
                    if target.get(c) in ("smallint", "integer", "bigint") and df[c].dtype.kind == "f"
                }
                for row in frame_rows(df, as_int=ints):
                    copy.write_row(row)
        yield
        con.execute(f'DROP TABLE "{name}"', None)  # not reached after an error: the connection (and table) goes

    def frame_types(self, con, df: pd.DataFrame) -> dict[str, str]:
        return {c: sql_type(df[c]) for c in df.columns}

    def lock(self, con: PgConnection, name: str) -> None:
        """A transaction-level advisory lock on ``name`` (waits at most ``lock_timeout``)."""
        con.execute("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", [name])
