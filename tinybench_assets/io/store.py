"""The DuckDB store: schema, transactional writes, reads.

DuckDB allows one writing process per file. Every access here opens a short-lived connection and
retries while another process holds the lock, so concurrent Dagster runs wait instead of failing;
every write is one transaction, so a failure leaves what was stored before untouched.
The tables are documented in docs/schema.md (and in ``SCHEMA`` below, which creates them).
"""
from __future__ import annotations

import contextlib
import random
import time
from pathlib import Path
from typing import Iterator

import duckdb
import numpy as np
import pandas as pd

from .drops import Drop, partition_key, split_partition_key
from .queries import StoreQueries

SCHEMA = """
CREATE SEQUENCE IF NOT EXISTS drop_seq START 1;
CREATE TABLE IF NOT EXISTS drops (
    drop_id VARCHAR PRIMARY KEY,          -- sha256 of the file's bytes
    seq BIGINT NOT NULL,                  -- ingestion order; later drops win on conflicting cells
    path VARCHAR NOT NULL,                -- landing path, relative to the landing folder
    leaderboard VARCHAR NOT NULL,
    format VARCHAR NOT NULL,              -- long_csv | long_parquet | routerdc_json | tinybenchmarks_pickle
                                          -- | wide_csv | wide_parquet | matrix_csv | matrix_parquet
    kind VARCHAR NOT NULL,                -- responses | items | full_scores
    n_rows BIGINT NOT NULL,
    partitions VARCHAR NOT NULL,          -- comma-separated scenario partition keys
    status VARCHAR NOT NULL,              -- active | superseded (a newer version of the same path landed)
    ingested_at TIMESTAMP NOT NULL
);
CREATE TABLE IF NOT EXISTS landed_responses (
    drop_id VARCHAR NOT NULL, leaderboard VARCHAR NOT NULL, scenario VARCHAR NOT NULL,
    subscenario VARCHAR NOT NULL, item VARCHAR NOT NULL, model VARCHAR NOT NULL, score DOUBLE NOT NULL
);
CREATE TABLE IF NOT EXISTS landed_costs (  -- per-(model, item) cost from wide tables' <model>|total_cost columns
    drop_id VARCHAR NOT NULL, leaderboard VARCHAR NOT NULL, scenario VARCHAR NOT NULL,
    item VARCHAR NOT NULL, model VARCHAR NOT NULL, cost DOUBLE NOT NULL CHECK (cost >= 0 AND isfinite(cost))
);
CREATE TABLE IF NOT EXISTS items (
    leaderboard VARCHAR NOT NULL, scenario VARCHAR NOT NULL, item VARCHAR NOT NULL,
    subscenario VARCHAR NOT NULL, text VARCHAR, split VARCHAR, drop_id VARCHAR NOT NULL,
    PRIMARY KEY (leaderboard, scenario, item)
);
CREATE TABLE IF NOT EXISTS full_scores (
    leaderboard VARCHAR NOT NULL, scenario VARCHAR NOT NULL, model VARCHAR NOT NULL,
    full_score DOUBLE NOT NULL, split VARCHAR, drop_id VARCHAR NOT NULL,
    PRIMARY KEY (leaderboard, scenario, model)
);
CREATE TABLE IF NOT EXISTS scenarios (
    partition_key VARCHAR PRIMARY KEY, leaderboard VARCHAR NOT NULL, scenario VARCHAR NOT NULL,
    binarize_rule VARCHAR NOT NULL, registered_at TIMESTAMP NOT NULL
);
CREATE TABLE IF NOT EXISTS quarantine (
    path VARCHAR NOT NULL, sha256 VARCHAR, error VARCHAR NOT NULL, quarantined_to VARCHAR, quarantined_at TIMESTAMP NOT NULL
);
CREATE TABLE IF NOT EXISTS responses (
    partition_key VARCHAR NOT NULL, leaderboard VARCHAR NOT NULL, scenario VARCHAR NOT NULL,
    subscenario VARCHAR NOT NULL, item VARCHAR NOT NULL, model VARCHAR NOT NULL, score DOUBLE NOT NULL,
    drop_id VARCHAR NOT NULL
);
CREATE TABLE IF NOT EXISTS matrix_items (
    partition_key VARCHAR NOT NULL, col INTEGER NOT NULL, item VARCHAR NOT NULL, subscenario VARCHAR NOT NULL,
    balance_weight DOUBLE NOT NULL, split VARCHAR, mean_score DOUBLE
);
CREATE TABLE IF NOT EXISTS matrix_models (
    partition_key VARCHAR NOT NULL, "row" INTEGER NOT NULL, model VARCHAR NOT NULL,
    n_items INTEGER NOT NULL, accuracy DOUBLE
);
CREATE TABLE IF NOT EXISTS binarized (
    partition_key VARCHAR NOT NULL, model VARCHAR NOT NULL, item VARCHAR NOT NULL, y UTINYINT NOT NULL
);
CREATE TABLE IF NOT EXISTS binarization (
    partition_key VARCHAR PRIMARY KEY, rule VARCHAR NOT NULL, threshold DOUBLE,
    mean_raw DOUBLE, mean_binary DOUBLE, mean_abs_shift DOUBLE, updated_at TIMESTAMP NOT NULL
);
CREATE TABLE IF NOT EXISTS model_splits (
    partition_key VARCHAR NOT NULL, model VARCHAR NOT NULL, split VARCHAR NOT NULL, seed INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS irt_fits (
    partition_key VARCHAR PRIMARY KEY,     -- a scenario key (openllm.mmlu) or a leaderboard (openllm) for the joint fit
    scope VARCHAR NOT NULL,                -- scenario | joint
    dim INTEGER NOT NULL, n_models INTEGER NOT NULL, n_items INTEGER NOT NULL,
    loss DOUBLE, heldout_logloss DOUBLE, heldout_accuracy DOUBLE, heldout_score_mae DOUBLE, n_heldout_models INTEGER,
    val_bias DOUBLE, val_error DOUBLE, seconds DOUBLE, device VARCHAR, fitter VARCHAR, seed INTEGER, updated_at TIMESTAMP
);
CREATE TABLE IF NOT EXISTS irt_dims (
    partition_key VARCHAR NOT NULL, dim INTEGER NOT NULL, val_error DOUBLE NOT NULL, val_bias DOUBLE NOT NULL,
    val_error_sd DOUBLE, seconds DOUBLE, chosen BOOLEAN NOT NULL
);
CREATE TABLE IF NOT EXISTS irt_items (
    partition_key VARCHAR NOT NULL, item VARCHAR NOT NULL, scenario VARCHAR NOT NULL, subscenario VARCHAR NOT NULL,
    b DOUBLE NOT NULL, a DOUBLE[] NOT NULL
);
CREATE TABLE IF NOT EXISTS irt_models (
    partition_key VARCHAR NOT NULL, model VARCHAR NOT NULL, theta DOUBLE[] NOT NULL
);
CREATE TABLE IF NOT EXISTS anchors (
    leaderboard VARCHAR NOT NULL, scenario VARCHAR NOT NULL, clustering VARCHAR NOT NULL, n INTEGER NOT NULL,
    item VARCHAR NOT NULL, item_index INTEGER NOT NULL, weight DOUBLE NOT NULL
);
-- columns added after the first release: files created before them gain them here
ALTER TABLE anchors ADD COLUMN IF NOT EXISTS n_anchors INTEGER;  -- the scenario's anchor count at budget n
ALTER TABLE drops ADD COLUMN IF NOT EXISTS notes VARCHAR;  -- what the reader decided (matrix orientation, ignored columns)
CREATE TABLE IF NOT EXISTS gpirt_lambdas (
    leaderboard VARCHAR NOT NULL, scenario VARCHAR NOT NULL, clustering VARCHAR NOT NULL, n INTEGER NOT NULL,
    fit VARCHAR NOT NULL, lambda_tutorial DOUBLE, lambda_validation DOUBLE, b DOUBLE, v DOUBLE
);
CREATE TABLE IF NOT EXISTS estimator_selection (
    leaderboard VARCHAR NOT NULL, scenario VARCHAR NOT NULL, n INTEGER NOT NULL, selector VARCHAR NOT NULL,
    clustering_t1 VARCHAR, estimator_t1 VARCHAR, clustering_t2 VARCHAR, estimator_t2 VARCHAR
);
CREATE TABLE IF NOT EXISTS estimator_validation (
    leaderboard VARCHAR NOT NULL, scenario VARCHAR NOT NULL, clustering VARCHAR NOT NULL, n INTEGER NOT NULL,
    estimator VARCHAR NOT NULL, val_mae_t1 DOUBLE, val_mae_t2 DOUBLE, n_val INTEGER
);
CREATE TABLE IF NOT EXISTS estimates (
    leaderboard VARCHAR NOT NULL, model VARCHAR NOT NULL, scenario VARCHAR NOT NULL, clustering VARCHAR NOT NULL,
    estimator VARCHAR NOT NULL, n INTEGER NOT NULL, estimate DOUBLE, lower DOUBLE, upper DOUBLE,
    estimate_t2 DOUBLE, lower_t2 DOUBLE, upper_t2 DOUBLE, truth_t1 DOUBLE, truth_t2 DOUBLE
);
CREATE TABLE IF NOT EXISTS backtest_summary (
    leaderboard VARCHAR NOT NULL, scenario VARCHAR NOT NULL, clustering VARCHAR NOT NULL, estimator VARCHAR NOT NULL,
    n INTEGER NOT NULL, mae_t1 DOUBLE, sd_t1 DOUBLE, bias_t1 DOUBLE, coverage_t1 DOUBLE, width_t1 DOUBLE,
    mae_t2 DOUBLE, sd_t2 DOUBLE, coverage_t2 DOUBLE, width_t2 DOUBLE, n_models INTEGER, n_splits INTEGER
);
ALTER TABLE backtest_summary ADD COLUMN IF NOT EXISTS split_kind VARCHAR;  -- grouped (headline) | random
ALTER TABLE backtest_summary ADD COLUMN IF NOT EXISTS mae_t1_lo DOUBLE;  -- 95 % bootstrap interval over test models
ALTER TABLE backtest_summary ADD COLUMN IF NOT EXISTS mae_t1_hi DOUBLE;
ALTER TABLE backtest_summary ADD COLUMN IF NOT EXISTS mae_t2_lo DOUBLE;
ALTER TABLE backtest_summary ADD COLUMN IF NOT EXISTS mae_t2_hi DOUBLE;
"""


class StoreLockTimeout(RuntimeError):
    """Another process held the DuckDB file longer than the wait allowed."""


class Store(StoreQueries):
    """A DuckDB file with tinybench's tables; its named domain reads are in ``io.queries.StoreQueries``.

    Parameters
    ----------
    path : the DuckDB file (created with its parent folder on first use).
    lock_timeout : seconds to wait for another process's lock before giving up.
    """

    def __init__(self, path: str | Path, lock_timeout: float = 600.0):
        self.path = Path(path)
        self.lock_timeout = lock_timeout
        self._ready = False

    # ------------------------------------------------------------------ connections
    @contextlib.contextmanager
    def connect(self, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """A short-lived connection; waits (with jittered back-off) while another process holds the file."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self._ready:
            self._ready = True
            with self.connect() as con:
                con.execute(SCHEMA)
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
                delay = min(delay * 2, 2.0)
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

    def tables(self) -> list[str]:
        return self.query("SELECT table_name FROM information_schema.tables ORDER BY 1")["table_name"].tolist()

    # ------------------------------------------------------------------ drops
    def drop_status(self, sha256: str) -> str | None:
        df = self.query("SELECT status FROM drops WHERE drop_id = ?", [sha256])
        return None if df.empty else str(df["status"].iloc[0])

    def ingest_drop(self, drop: Drop, relpath: str) -> bool:
        """Store one validated drop in one transaction. Returns False if the same bytes were ingested before.

        A new version of a path supersedes the old one: the old version's landed rows are removed
        in the same transaction, so the store never holds half of either.
        """
        with self.transaction() as con:
            if con.execute("SELECT 1 FROM drops WHERE drop_id = ?", [drop.sha256]).fetchone():
                return False
            old = [r[0] for r in con.execute(
                "SELECT drop_id FROM drops WHERE path = ? AND leaderboard = ? AND status = 'active'", [relpath, drop.leaderboard]
            ).fetchall()]
            for old_id in old:
                con.execute("DELETE FROM landed_responses WHERE drop_id = ?", [old_id])
                con.execute("DELETE FROM landed_costs WHERE drop_id = ?", [old_id])
                con.execute("UPDATE drops SET status = 'superseded' WHERE drop_id = ?", [old_id])
            seq = con.execute("SELECT nextval('drop_seq')").fetchone()[0]
            con.execute(
                "INSERT INTO drops (drop_id, seq, path, leaderboard, format, kind, n_rows, partitions, status, ingested_at, notes) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'active', now(), ?)",
                [drop.sha256, seq, relpath, drop.leaderboard, drop.format, drop.kind, drop.n_rows, ",".join(drop.partition_keys()),
                 "\n".join(drop.notes) or None],
            )
            if len(drop.responses):
                resp = drop.responses.assign(drop_id=drop.sha256)
                con.register("resp_df", resp)
                con.execute(
                    "INSERT INTO landed_responses SELECT drop_id, leaderboard, scenario, subscenario, item, model, score FROM resp_df"
                )
                con.unregister("resp_df")
            if len(drop.costs):
                costs = drop.costs.assign(drop_id=drop.sha256)
                con.register("costs_df", costs)
                con.execute(
                    "INSERT INTO landed_costs SELECT drop_id, leaderboard, scenario, item, model, CAST(cost AS DOUBLE) FROM costs_df"
                )
                con.unregister("costs_df")
            if len(drop.items):
                items = drop.items.assign(drop_id=drop.sha256)
                con.register("items_df", items)
                # a drop without text or split for an item (a 0/1 matrix) keeps the text/split stored before
                con.execute(
                    "INSERT INTO items SELECT leaderboard, scenario, item, subscenario, CAST(text AS VARCHAR), CAST(split AS VARCHAR), "
                    "drop_id FROM items_df ON CONFLICT (leaderboard, scenario, item) DO UPDATE SET subscenario = excluded.subscenario, "
                    "text = coalesce(excluded.text, items.text), split = coalesce(excluded.split, items.split), drop_id = excluded.drop_id"
                )
                con.unregister("items_df")
            if len(drop.full_scores):
                fs = drop.full_scores.assign(drop_id=drop.sha256)
                con.register("fs_df", fs)
                con.execute(
                    "INSERT OR REPLACE INTO full_scores SELECT leaderboard, scenario, model, full_score, CAST(split AS VARCHAR), drop_id FROM fs_df"
                )
                con.unregister("fs_df")
            for scenario, rule in drop.binarize_rules.items():
                key = partition_key(drop.leaderboard, scenario)
                con.execute(
                    "INSERT INTO scenarios VALUES (?, ?, ?, ?, now()) ON CONFLICT (partition_key) DO UPDATE SET binarize_rule = excluded.binarize_rule",
                    [key, drop.leaderboard, scenario, rule],
                )
        return True

    def record_quarantine(self, relpath: str, sha256: str | None, error: str, moved_to: str | None) -> None:
        with self.transaction() as con:
            con.execute("INSERT INTO quarantine VALUES (?, ?, ?, ?, now())", [relpath, sha256, error, moved_to])

    def partition_keys(self, leaderboard: str | None = None) -> list[str]:
        """Scenario partitions that have responses landed."""
        sql = "SELECT partition_key FROM scenarios"
        if leaderboard:
            return self.query(sql + " WHERE leaderboard = ? ORDER BY 1", [leaderboard])["partition_key"].tolist()
        return self.query(sql + " ORDER BY 1")["partition_key"].tolist()

    # ------------------------------------------------------------------ partition tables
    def consolidate_responses(self, key: str) -> int:
        """Rebuild ``responses`` for one partition from the active drops; the latest drop wins per cell."""
        leaderboard, scenario = split_partition_key(key)
        with self.transaction() as con:
            con.execute("DELETE FROM responses WHERE partition_key = ?", [key])
            con.execute(
                """
                INSERT INTO responses
                SELECT ?, l.leaderboard, l.scenario, l.subscenario, l.item, l.model, l.score, l.drop_id
                FROM landed_responses l JOIN drops d USING (drop_id)
                WHERE l.leaderboard = ? AND l.scenario = ? AND d.status = 'active'
                QUALIFY row_number() OVER (PARTITION BY l.model, l.item ORDER BY d.seq DESC) = 1
                """,
                [key, leaderboard, scenario],
            )
            return con.execute("SELECT count(*) FROM responses WHERE partition_key = ?", [key]).fetchone()[0]

    def replace_partition(self, tables: dict[str, pd.DataFrame], key: str, column: str = "partition_key") -> None:
        """Replace one partition's rows of several tables in one transaction.

        Each DataFrame's columns are matched to the table's columns by name; the partition column is added.
        A column the stored table lacks (a result table written by an older version) is added to it, NULL in the
        rows already there, so nothing stored is lost.
        """
        with self.transaction() as con:
            for table, df in tables.items():
                if not con.execute("SELECT 1 FROM information_schema.tables WHERE table_name = ?", [table]).fetchone():
                    con.register("part_df", df)  # a result table without declared DDL takes the frame's columns
                    con.execute(f'CREATE TABLE "{table}" AS SELECT CAST(NULL AS VARCHAR) AS {column}, * FROM part_df LIMIT 0')
                    con.unregister("part_df")
                have = {r[0] for r in con.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [table]).fetchall()}
                if missing := [c for c in df.columns if c not in have]:
                    con.register("part_df", df)
                    types = {r[0]: r[1] for r in con.execute("DESCRIBE SELECT * FROM part_df").fetchall()}
                    con.unregister("part_df")
                    for c in missing:
                        con.execute(f'ALTER TABLE "{table}" ADD COLUMN "{c}" {types[c]}')
                con.execute(f'DELETE FROM "{table}" WHERE {column} = ?', [key])
                if len(df):
                    con.register("part_df", df)
                    cols = ", ".join(f'"{c}"' for c in df.columns)
                    con.execute(f'INSERT INTO "{table}" ({column}, {cols}) SELECT ?, {cols} FROM part_df', [key])
                    con.unregister("part_df")

    def costs(self, key: str) -> pd.DataFrame:
        """Per-(model, item) costs of one scenario partition (``leaderboard.scenario``): columns ``model, item, cost``.

        From the active drops; where several drops give a cell, the latest drop wins (as in ``responses``).
        Empty (same columns) when no drop of the partition carried costs.
        """
        leaderboard, scenario = split_partition_key(key)
        return self.query(
            """
            SELECT l.model, l.item, l.cost
            FROM landed_costs l JOIN drops d USING (drop_id)
            WHERE l.leaderboard = ? AND l.scenario = ? AND d.status = 'active'
            QUALIFY row_number() OVER (PARTITION BY l.model, l.item ORDER BY d.seq DESC) = 1
            ORDER BY l.model, l.item
            """,
            [leaderboard, scenario],
        )

    def responses(self, key: str) -> pd.DataFrame:
        return self.query(
            "SELECT model, scenario, subscenario, item, score FROM responses WHERE partition_key = ?", [key]
        )

    def binarized_long(self, key: str) -> pd.DataFrame:
        return self.query(
            """SELECT b.model, r.scenario, r.subscenario, b.item, CAST(b.y AS DOUBLE) AS score
               FROM binarized b JOIN (SELECT DISTINCT item, scenario, subscenario FROM responses WHERE partition_key = ?) r
               USING (item) WHERE b.partition_key = ?""",
            [key, key],
        )

    def execute(self, sql: str, params: list | None = None) -> None:
        with self.transaction() as con:
            con.execute(sql, params or [])


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
