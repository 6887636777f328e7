"""What a results store's engine gives ``io.store.Store``: the interface both engines implement, and how a target
names its engine.

A store target is a DuckDB file path (the embedded default) or a ``postgresql://`` URL (the scale-out profile,
deploy/postgres.md). The tables' SQL is written once (``io.store_schema``, ``io.store_writes``, ``io.queries``) in the
standard SQL both engines accept, with ``?`` placeholders; what differs between the engines sits behind the methods
below: connections and transactions, reading a result into a DataFrame, a DataFrame as a table the SQL can read
(``frame``), the column types of a frame, and the locks a writer takes where the engine lets writers run at once.
"""

from __future__ import annotations

import contextlib
import re
from typing import Iterator

import pandas as pd

POSTGRES_SCHEMES = ("postgresql://", "postgres://")

NULL_TYPE = '"NULL"'  # DuckDB's type of an all-None frame column, to which no later value can be cast


class StoreUnavailable(RuntimeError):
    """The store's server could not be reached (the message names the target, password masked)."""


def is_postgres_url(target: object) -> bool:
    """True for a ``postgresql://`` (or ``postgres://``) URL; False for a path (a DuckDB file)."""
    return isinstance(target, str) and target.strip().lower().startswith(POSTGRES_SCHEMES)


def mask_url(url: str) -> str:
    """The URL with its password replaced by ``***`` (``postgresql://user:***@host/db``), also in ``?password=``."""
    masked = re.sub(r"^([a-z]+://[^:/@]*:)[^@]*@", r"\1***@", url, flags=re.IGNORECASE)
    return re.sub(r"(?i)(password=)[^&]*", r"\1***", masked)


class StoreBackend:
    """The engine interface the store's writes and reads use (``DuckDBFile``, ``PostgresDB`` implement it).

    ``connect()`` / ``transaction()`` yield a connection whose ``execute(sql, params)`` takes ``?`` placeholders and
    returns a cursor (``fetchone`` / ``fetchall``); ``query`` answers a DataFrame; ``frame`` exposes a DataFrame as a
    table named ``name`` to the SQL run on ``con`` while the block lasts.
    """

    #: the engine's name: "duckdb" or "postgresql"
    engine = ""

    @property
    def location(self) -> str:
        """Where the store lives, for messages (a path, or a URL with its password masked)."""
        raise NotImplementedError

    def connect(self, read_only: bool = False):
        raise NotImplementedError

    def transaction(self):
        raise NotImplementedError

    def query(self, sql: str, params: list | None = None) -> pd.DataFrame:
        raise NotImplementedError

    def execute(self, sql: str, params: list | None = None) -> None:
        with self.transaction() as con:
            con.execute(sql, params or [])

    def tables(self) -> list[str]:
        """The store's tables (its own schema only), sorted."""
        return self.query(
            "SELECT table_name FROM information_schema.tables WHERE table_catalog = current_database() "
            "AND table_schema = current_schema() "
            "ORDER BY 1"
        )["table_name"].tolist()

    @contextlib.contextmanager
    def frame(self, con, name: str, df: pd.DataFrame, like: str | None = None) -> Iterator[None]:
        """``df`` readable as the table ``name`` by the SQL run on ``con`` inside the block; ``like``: the table its rows
        go to, whose column types an engine may give the frame's columns of the same names."""
        raise NotImplementedError
        yield

    def frame_types(self, con, df: pd.DataFrame) -> dict[str, str]:
        """Column name -> the engine's SQL type for the columns of ``df`` (for ``ALTER TABLE ... ADD COLUMN``)."""
        raise NotImplementedError

    def lock(self, con, name: str) -> None:
        """Hold a lock named ``name`` until ``con``'s transaction ends (writers of the same partition, DDL).

        A no-op where the engine has one writer at a time (DuckDB)."""
