"""The store's writes: drops landing, quarantine records, consolidated responses and partition replacements.

``StoreWrites`` is a mixin that ``io.store.Store`` inherits; every write is one transaction of the store's engine
(``io.backend.StoreBackend``: a DuckDB file or PostgreSQL), so a failure leaves what was stored before untouched. The
SQL is written once for both engines; a DataFrame reaches it through ``self.frame`` (a view on DuckDB, a temporary
table on PostgreSQL), and writers that may run at once on PostgreSQL take ``self.lock`` (a no-op on DuckDB).
"""

from __future__ import annotations

import pandas as pd

from .backend import NULL_TYPE, StoreBackend
from .drops import Drop, drop_ids, partition_key, split_partition_key
from .price_drops import PRICE_VALUES

#: the tables that hold a drop's landed rows (a superseded version's rows are removed from each)
LANDED_TABLES = ("landed_responses", "landed_costs", "landed_response_tokens", "landed_prices")

#: (``Drop`` frame, its name in the SQL, the INSERT that lands it), in landing order. A drop without text or split for
#: an item (a 0/1 matrix) keeps the text/split stored before.
DROP_FRAME_INSERTS = (
    (
        "responses",
        "resp_df",
        "INSERT INTO landed_responses SELECT drop_id, leaderboard, scenario, subscenario, item, model, score "
        "FROM resp_df",
    ),
    (
        "costs",
        "costs_df",
        "INSERT INTO landed_costs SELECT drop_id, leaderboard, scenario, item, model, "
        "CAST(cost AS DOUBLE PRECISION) FROM costs_df",
    ),
    (
        "response_tokens",
        "tokens_df",
        "INSERT INTO landed_response_tokens SELECT drop_id, leaderboard, scenario, item, model, "
        "CAST(tokens AS BIGINT) FROM tokens_df",
    ),
    (
        "prices",
        "prices_df",
        "INSERT INTO landed_prices SELECT drop_id, leaderboard, model, "
        + ", ".join(f"CAST({c} AS DOUBLE PRECISION)" for c in PRICE_VALUES)
        + " FROM prices_df",
    ),
    (
        "items",
        "items_df",
        "INSERT INTO items SELECT leaderboard, scenario, item, subscenario, CAST(text AS VARCHAR), CAST(split AS VARCHAR), "
        "drop_id FROM items_df ON CONFLICT (leaderboard, scenario, item) DO UPDATE SET subscenario = excluded.subscenario, "
        "text = coalesce(excluded.text, items.text), split = coalesce(excluded.split, items.split), drop_id = excluded.drop_id",
    ),
    (
        "full_scores",
        "fs_df",
        "INSERT INTO full_scores SELECT leaderboard, scenario, model, full_score, CAST(split AS VARCHAR), drop_id "
        "FROM fs_df ON CONFLICT (leaderboard, scenario, model) DO UPDATE SET full_score = excluded.full_score, "
        "split = excluded.split, drop_id = excluded.drop_id",
    ),
)


def _supersede(con, relpath: str, leaderboard: str) -> None:
    """Mark the active versions of ``relpath`` on the leaderboard superseded and remove their landed rows."""
    old = [
        r[0]
        for r in con.execute(
            "SELECT drop_id FROM drops WHERE path = ? AND leaderboard = ? AND status = 'active'", [relpath, leaderboard]
        ).fetchall()
    ]
    for old_id in old:
        for table in LANDED_TABLES:
            con.execute(f"DELETE FROM {table} WHERE drop_id = ?", [old_id])
        con.execute("UPDATE drops SET status = 'superseded' WHERE drop_id = ?", [old_id])


def _landing_id(con, drop: Drop) -> tuple[str, bool] | None:
    """``(id, stored before)`` the drop lands under (:func:`~tinybench_assets.io.drop_types.drop_ids`): the sha256 of
    its bytes, or, when another leaderboard landed the same bytes first, the sha256 bound to this leaderboard. A version
    the leaderboard stored and has superseded since (a file reverted, an older version put back under any name) lands
    again under its id (its landed rows went when it was superseded). None when the leaderboard holds these bytes
    active: nothing to land."""
    for drop_id in drop_ids(drop.sha256, drop.leaderboard):
        row = con.execute("SELECT leaderboard, status FROM drops WHERE drop_id = ?", [drop_id]).fetchone()
        if row is None:
            return drop_id, False
        if row[0] == drop.leaderboard:
            return None if row[1] == "active" else (drop_id, True)
    raise AssertionError(f"drop id {drop_id} bound to leaderboard {drop.leaderboard!r} is stored for {row[0]!r}")


def _write_drop_row(con, drop: Drop, relpath: str, drop_id: str, stored_before: bool) -> None:
    """The drop's ``drops`` row: active, numbered by ``drop_seq`` (landing order); a version stored before gets its row
    back, updated in place (no delete and insert of one key in a transaction: DuckDB before 1.2 refuses it)."""
    seq = con.execute("SELECT nextval('drop_seq')").fetchone()[0]
    values = [seq, relpath, drop.leaderboard, drop.format, drop.kind, drop.n_rows, ",".join(drop.partition_keys())]
    notes = "\n".join(drop.notes) or None
    if stored_before:
        con.execute(
            "UPDATE drops SET seq = ?, path = ?, leaderboard = ?, format = ?, kind = ?, n_rows = ?, partitions = ?, "
            "status = 'active', ingested_at = now(), notes = ? WHERE drop_id = ?",
            [*values, notes, drop_id],
        )
    else:
        con.execute(
            "INSERT INTO drops (drop_id, seq, path, leaderboard, format, kind, n_rows, partitions, status, ingested_at, "
            "notes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'active', now(), ?)",
            [drop_id, *values, notes],
        )


def _register_scenarios(con, drop: Drop) -> None:
    """Register the drop's scenario partitions with the binarization rule it declares (the latest drop's rule wins)."""
    for scenario, rule in drop.binarize_rules.items():
        key = partition_key(drop.leaderboard, scenario)
        con.execute(
            "INSERT INTO scenarios VALUES (?, ?, ?, ?, now()) ON CONFLICT (partition_key) DO UPDATE SET binarize_rule = excluded.binarize_rule",
            [key, drop.leaderboard, scenario, rule],
        )


class StoreWrites(StoreBackend):
    """Transactional writes on the tinybench tables (mixed into ``Store``)."""

    def ingest_drop(self, drop: Drop, relpath: str) -> bool:
        """Store one validated drop in one transaction. Returns False if its leaderboard holds these bytes active.

        A new version of a path supersedes the old one: the old version's landed rows are removed
        in the same transaction, so the store never holds half of either.
        """
        with self.transaction() as con:
            self.lock(con, "tinybench:ingest")  # drops land one at a time (their seq and supersession)
            found = _landing_id(con, drop)
            if found is None:
                return False
            drop_id, stored_before = found
            _supersede(con, relpath, drop.leaderboard)
            _write_drop_row(con, drop, relpath, drop_id, stored_before)
            for attr, name, sql in DROP_FRAME_INSERTS:
                self._insert_frame(con, name, getattr(drop, attr), drop_id, sql)
            _register_scenarios(con, drop)
        return True

    def rename_drop(self, drop_id: str, relpath: str) -> None:
        """A stored version's file now goes by ``relpath`` (its old name is gone from the landing folder): a later change
        of that file supersedes it."""
        with self.transaction() as con:
            con.execute("UPDATE drops SET path = ? WHERE drop_id = ?", [relpath, drop_id])

    def record_quarantine(self, relpath: str, sha256: str | None, error: str, moved_to: str | None) -> None:
        with self.transaction() as con:
            con.execute("INSERT INTO quarantine VALUES (?, ?, ?, ?, now())", [relpath, sha256, error, moved_to])

    def write_evaluation(self, leaderboard: str, model: str, rows: pd.DataFrame) -> None:
        """Add one evaluation's rows (``io.evaluation_rows.EVALUATION_COLUMNS``) and mark the model's earlier rows on
        the leaderboard superseded, in one transaction: the history stays."""
        with self.transaction() as con:
            self.lock(con, f"evaluations:{leaderboard}/{model}")
            con.execute(
                "UPDATE evaluations SET superseded = TRUE WHERE leaderboard = ? AND model = ? AND NOT superseded",
                [leaderboard, model],
            )
            if len(rows):
                cols = ", ".join(f'"{c}"' for c in rows.columns)
                with self.frame(con, "eval_df", rows, like="evaluations"):
                    con.execute(
                        f"INSERT INTO evaluations ({cols}, superseded, evaluated_at) SELECT {cols}, FALSE, now() "
                        "FROM eval_df"
                    )

    def consolidate_responses(self, key: str) -> int:
        """Rebuild ``responses`` for one partition from the active drops; the latest drop wins per cell."""
        leaderboard, scenario = split_partition_key(key)
        with self.transaction() as con:
            self.lock(con, f"responses:{key}")
            con.execute("DELETE FROM responses WHERE partition_key = ?", [key])
            con.execute(
                """
                INSERT INTO responses
                SELECT CAST(? AS VARCHAR), leaderboard, scenario, subscenario, item, model, score, drop_id FROM (
                    SELECT l.*, row_number() OVER (PARTITION BY l.model, l.item ORDER BY d.seq DESC) AS latest
                    FROM landed_responses l JOIN drops d USING (drop_id)
                    WHERE l.leaderboard = ? AND l.scenario = ? AND d.status = 'active') AS landed
                WHERE latest = 1
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
                self.lock(con, f"{table}:{key}")  # writers of one partition take turns; other partitions run at once
                if self._needs_ddl(self._columns(con, table), df):
                    self.lock(con, "tinybench:ddl")  # one writer at a time creates a table or adds a column
                    self._create_or_widen(con, table, df, column)
                con.execute(f'DELETE FROM "{table}" WHERE {column} = ?', [key])
                if len(df):
                    cols = ", ".join(f'"{c}"' for c in df.columns)
                    with self.frame(con, "part_df", df, like=table):
                        con.execute(
                            f'INSERT INTO "{table}" ({column}, {cols}) SELECT CAST(? AS VARCHAR), {cols} FROM part_df',
                            [key],
                        )

    @staticmethod
    def _columns(con, table: str) -> dict[str, str]:
        """The table's columns and their types ({} when there is no such table)."""
        return {
            r[0]: r[1]
            for r in con.execute(
                "SELECT column_name, data_type FROM information_schema.columns WHERE "
                "table_name = ? AND table_catalog = current_database() AND "
                "table_schema = current_schema()",
                [table],
            ).fetchall()
        }

    @staticmethod
    def _needs_ddl(have: dict[str, str], df: pd.DataFrame) -> bool:
        """The table is missing, lacks a column of the frame, or holds one of them typed "NULL" (DuckDB's type of a
        column an older version created all-NULL, which no value can be cast to; none on PostgreSQL)."""
        return not have or any(c not in have or have[c] == NULL_TYPE for c in df.columns)

    def _create_or_widen(self, con, table: str, df: pd.DataFrame, column: str) -> None:
        """Create a result table without declared DDL from the frame's columns, add the columns it lacks, or give a
        "NULL"-typed column the frame's type (its stored values are all NULL, so nothing is lost)."""
        have = self._columns(con, table)  # again, under the DDL lock: another writer may have changed it meanwhile
        if not have:
            types = self.frame_types(con, df)
            cols = ", ".join([f"{column} VARCHAR"] + [f'"{c}" {types[c]}' for c in df.columns])
            con.execute(f'CREATE TABLE "{table}" ({cols})')
            return
        if missing := [c for c in df.columns if c not in have]:
            types = self.frame_types(con, df[missing])
            for c in missing:
                con.execute(f'ALTER TABLE "{table}" ADD COLUMN "{c}" {types[c]}')
        if untyped := [c for c in df.columns if have.get(c) == NULL_TYPE]:
            types = self.frame_types(con, df[untyped])
            for c in untyped:
                con.execute(f'ALTER TABLE "{table}" ALTER COLUMN "{c}" TYPE {types[c]}')

    def _insert_frame(self, con, name: str, df: pd.DataFrame, drop_id: str, sql: str) -> None:
        """Run ``sql`` (an INSERT reading the table ``name``) on a drop's frame with its ``drop_id`` column; nothing when
        empty."""
        if len(df):
            with self.frame(con, name, df.assign(drop_id=drop_id)):
                con.execute(sql)
