"""The store's writes: drops landing, quarantine records, consolidated responses and partition replacements.

``StoreWrites`` is a mixin that ``io.store.Store`` inherits; every write is one transaction of ``DuckDBFile``, so a
failure leaves what was stored before untouched.
"""
from __future__ import annotations

import pandas as pd

from .connection import DuckDBFile
from .drops import Drop, partition_key, split_partition_key


class StoreWrites(DuckDBFile):
    """Transactional writes on the tinybench tables (mixed into ``Store``)."""

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
            _insert_frame(con, "resp_df", drop.responses, drop.sha256,
                          "INSERT INTO landed_responses SELECT drop_id, leaderboard, scenario, subscenario, item, model, score FROM resp_df")
            _insert_frame(con, "costs_df", drop.costs, drop.sha256,
                          "INSERT INTO landed_costs SELECT drop_id, leaderboard, scenario, item, model, CAST(cost AS DOUBLE) FROM costs_df")
            # a drop without text or split for an item (a 0/1 matrix) keeps the text/split stored before
            _insert_frame(con, "items_df", drop.items, drop.sha256,
                          "INSERT INTO items SELECT leaderboard, scenario, item, subscenario, CAST(text AS VARCHAR), CAST(split AS VARCHAR), "
                          "drop_id FROM items_df ON CONFLICT (leaderboard, scenario, item) DO UPDATE SET subscenario = excluded.subscenario, "
                          "text = coalesce(excluded.text, items.text), split = coalesce(excluded.split, items.split), drop_id = excluded.drop_id")
            _insert_frame(con, "fs_df", drop.full_scores, drop.sha256,
                          "INSERT OR REPLACE INTO full_scores SELECT leaderboard, scenario, model, full_score, CAST(split AS VARCHAR), drop_id "
                          "FROM fs_df")
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


def _insert_frame(con, name: str, df: pd.DataFrame, drop_id: str, sql: str) -> None:
    """Run ``sql`` (an INSERT reading the view ``name``) on a drop's frame with its ``drop_id`` column; nothing when empty."""
    if len(df):
        con.register(name, df.assign(drop_id=drop_id))
        con.execute(sql)
        con.unregister(name)
