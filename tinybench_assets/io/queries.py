"""The store's named reads: the domain queries the assets, checks, schedules and CLI ask of the results store.

``StoreQueries`` is a mixin that ``io.store.Store`` inherits (with the reads of the response matrix, model splits
and IRT fits it inherits from ``io.matrix_queries.MatrixQueries``); every method reads through ``self.query`` (a
short-lived read-only connection), so the SQL lives in these mixins and callers name what they want. It is standard
SQL that DuckDB and PostgreSQL both run (no QUALIFY, ``any_value``, ``starts_with``, list functions or
``round(double, n)``; ``?`` placeholders, which the PostgreSQL engine translates). Keys: a scenario partition key is
``leaderboard.scenario`` (``openllm.mmlu``); a leaderboard partition key is the leaderboard. Every method answers an
empty result (same columns) when nothing is stored, never an error.
"""

from __future__ import annotations

import pandas as pd

from .drops import drop_ids, split_partition_key
from .matrix_queries import MatrixQueries


class StoreQueries(MatrixQueries):
    """Named reads on the tinybench tables (mixed into ``Store``; ``query`` and ``tables`` come from its engine): the
    drops and landing, landed items and full scores, responses and their binarization here, the response matrix,
    model splits and IRT fits from ``MatrixQueries``."""

    def result_rows(self, table: str, where: str, params: list, columns: str = "*") -> pd.DataFrame:
        """Rows of a result table (one that assets create on first write, such as ``estimates``) matching ``where``
        (SQL with ``?`` placeholders for ``params``): ``columns`` of the table, or an empty frame without columns when
        no partition has created the table yet."""
        if table not in self.tables():
            return pd.DataFrame()
        return self.query(f'SELECT {columns} FROM "{table}" WHERE {where}', params)

    # ------------------------------------------------------------------ drops and landing
    def stored_drop(self, sha256: str, leaderboard: str) -> tuple[str, str, str] | None:
        """``(drop_id, status, path)`` of the version with these bytes the leaderboard stored before (``active`` /
        ``superseded``; the ids: :func:`~tinybench_assets.io.drop_types.drop_ids`), None for bytes new to it: the same
        bytes copied into another leaderboard's folder are new there."""
        ids = drop_ids(sha256, leaderboard)
        df = self.query(
            "SELECT drop_id, status, path FROM drops WHERE drop_id IN (?, ?) AND leaderboard = ?", [*ids, leaderboard]
        )
        return None if df.empty else tuple(str(df[c].iloc[0]) for c in ("drop_id", "status", "path"))

    def active_drops(self) -> pd.DataFrame:
        """The active drops in landing order: columns ``drop_id, seq, partitions`` (comma-separated scenario keys)."""
        return self.query("SELECT drop_id, seq, partitions FROM drops WHERE status = 'active' ORDER BY seq")

    def board_cells(self) -> dict[str, int]:
        """Leaderboard -> response cells landed in its active drops (the size of its refresh, cheaply)."""
        df = self.query(
            "SELECT leaderboard, sum(n_rows) FROM drops WHERE status = 'active' AND kind = 'responses' GROUP BY 1"
        )
        return {str(b): int(n) for b, n in df.itertuples(index=False)}

    def partition_landed_at(self) -> pd.Series:
        """Scenario partition key -> epoch seconds of the latest active drop that touches it (partitions without an
        active drop are absent)."""
        return self.query(
            "SELECT s.partition_key, CAST(extract(epoch FROM max(d.ingested_at)) AS DOUBLE PRECISION) AS landed "
            "FROM scenarios s JOIN drops d ON position(',' || s.partition_key || ',' IN ',' || d.partitions || ',') > 0 "
            "AND d.status = 'active' GROUP BY 1"
        ).set_index("partition_key")["landed"]

    def partition_keys(self, leaderboard: str | None = None) -> list[str]:
        """Scenario partitions that have responses landed."""
        sql = "SELECT partition_key FROM scenarios"
        if leaderboard:
            return self.query(sql + " WHERE leaderboard = ? ORDER BY 1", [leaderboard])["partition_key"].tolist()
        return self.query(sql + " ORDER BY 1")["partition_key"].tolist()

    def n_quarantined(self) -> int:
        """How many files were quarantined so far."""
        return int(self.query("SELECT count(*) AS n FROM quarantine")["n"].iloc[0])

    def board_drop_ids(self, board: str) -> list[str]:
        """The leaderboard's active drop ids, sorted (a tiny benchmark's version names them)."""
        return sorted(
            self.query("SELECT drop_id FROM drops WHERE leaderboard = ? AND status = 'active'", [board])["drop_id"]
        )

    def evaluations(self, board: str | None = None, model: str | None = None, latest: bool = True) -> pd.DataFrame:
        """Rows of the ``evaluations`` table: the latest evaluation of each model (``latest``; else its whole history,
        superseded rows too), of one leaderboard and model where given; oldest first."""
        where, params = ["TRUE"], []
        for col, val in (("leaderboard", board), ("model", model)):
            if val is not None:
                where.append(f"{col} = ?")
                params.append(val)
        if latest:
            where.append("NOT superseded")
        return self.query(
            f"SELECT * FROM evaluations WHERE {' AND '.join(where)} ORDER BY leaderboard, model, evaluated_at, scenario",
            params,
        )

    def board_accuracies(self, board: str) -> dict[str, list[float]]:
        """{scenario: the leaderboard's models' accuracies on its pool} (``matrix_models``), where an evaluated model
        would rank."""
        df = self.query(
            "SELECT partition_key, accuracy FROM matrix_models WHERE position(CAST(? AS VARCHAR) || '.' IN "
            "partition_key) = 1 AND accuracy IS NOT NULL",
            [board],
        )
        return {split_partition_key(k)[1]: g["accuracy"].tolist() for k, g in df.groupby("partition_key")}

    def quarantined_evaluations(self) -> pd.DataFrame:
        """Evaluation files quarantined so far (``evaluations/<leaderboard>/...``): columns ``path, error,
        quarantined_to, quarantined_at``, the latest first."""
        return self.query(
            "SELECT path, error, quarantined_to, quarantined_at FROM quarantine "
            "WHERE position('evaluations/' IN path) = 1 ORDER BY quarantined_at DESC"
        )

    def binarize_rule(self, key: str) -> str | None:
        """The binarization rule the drops declared for a scenario partition, or None when it is not registered."""
        df = self.query("SELECT binarize_rule FROM scenarios WHERE partition_key = ?", [key])
        return str(df["binarize_rule"].iloc[0]) if len(df) else None

    # ------------------------------------------------------------------ landed items and full scores
    def full_scores(self, board: str) -> pd.DataFrame:
        """The leaderboard's full-benchmark scores: columns ``model, scenario, full_score``."""
        return self.query("SELECT model, scenario, full_score FROM full_scores WHERE leaderboard = ?", [board])

    def item_texts(self, board: str, scenario: str | None = None) -> pd.DataFrame:
        """Landed items of a leaderboard (or of one of its scenarios): columns ``item, text`` (text NULL where none
        landed)."""
        if scenario is None:
            return self.query("SELECT item, text FROM items WHERE leaderboard = ?", [board])
        return self.query("SELECT item, text FROM items WHERE leaderboard = ? AND scenario = ?", [board, scenario])

    def landed_item_split(self, key: str) -> pd.Series:
        """Scenario partition key -> Series item -> split as landed with the items (``test`` = held-out question,
        None where the drop gave none)."""
        board, scenario = split_partition_key(key)
        return self.query(
            "SELECT item, split FROM items WHERE leaderboard = ? AND scenario = ?", [board, scenario]
        ).set_index("item")["split"]

    # ------------------------------------------------------------------ responses
    def responses(self, key: str) -> pd.DataFrame:
        return self.query(
            "SELECT model, scenario, subscenario, item, score FROM responses WHERE partition_key = ?", [key]
        )

    def binarized_long(self, key: str) -> pd.DataFrame:
        return self.query(
            """SELECT b.model, r.scenario, r.subscenario, b.item, CAST(b.y AS DOUBLE PRECISION) AS score
               FROM binarized b JOIN (SELECT DISTINCT item, scenario, subscenario FROM responses WHERE partition_key = ?) r
               USING (item) WHERE b.partition_key = ?""",
            [key, key],
        )

    def response_stats(self, key: str) -> pd.Series:
        """Figures of a scenario partition's ``responses``: ``n_rows, models, items, subscenarios, mean_score, drops,
        out_of_range`` (scores NULL, non-finite or outside [0, 1]), ``min_score, max_score`` (NaN when no rows)."""
        return self.query(
            """SELECT count(*) AS n_rows, count(DISTINCT model) AS models, count(DISTINCT item) AS items,
                      count(DISTINCT subscenario) AS subscenarios, avg(score) AS mean_score, count(DISTINCT drop_id) AS drops,
                      count(*) FILTER (WHERE score IS NULL OR score < 0 OR score > 1) AS out_of_range,
                      min(score) AS min_score, max(score) AS max_score
               FROM responses WHERE partition_key = ?""",
            [key],
        ).iloc[0]

    def response_duplicates(self, key: str) -> pd.DataFrame:
        """(model, item) pairs stored more than once in a partition's ``responses``: columns ``model, item, copies``,
        most copies first."""
        return self.query(
            """SELECT model, item, count(*) AS copies FROM responses WHERE partition_key = ?
               GROUP BY model, item HAVING count(*) > 1 ORDER BY copies DESC, model, item""",
            [key],
        )

    def responses_out_of_range(self, key: str, limit: int = 10) -> pd.DataFrame:
        """Up to ``limit`` responses whose score is NULL, non-finite or outside [0, 1]: columns ``model, item, score``
        (both engines order NaN above every number, so ``score > 1`` holds for NaN and +inf, ``score < 0`` for -inf)."""
        return self.query(
            """SELECT model, item, score FROM responses WHERE partition_key = ?
               AND (score IS NULL OR score < 0 OR score > 1) ORDER BY model, item LIMIT ?""",
            [key, int(limit)],
        )

    def binarized(self, key: str) -> pd.DataFrame:
        """A scenario partition's 0/1 responses: columns ``model, item, y`` (y as DOUBLE)."""
        return self.query(
            "SELECT model, item, CAST(y AS DOUBLE PRECISION) AS y FROM binarized WHERE partition_key = ?", [key]
        )

    def binarization(self, key: str) -> pd.DataFrame:
        """A scenario partition's binarization row (0 or 1 rows): columns ``partition_key, rule, threshold, mean_raw,
        mean_binary, mean_abs_shift, updated_at``."""
        return self.query("SELECT * FROM binarization WHERE partition_key = ?", [key])

    def board_binarization(self, board: str) -> pd.DataFrame:
        """The binarization of every scenario of a leaderboard: columns ``partition_key, rule, threshold``."""
        return self.query(
            "SELECT partition_key, rule, threshold FROM binarization "
            "WHERE position(CAST(? AS VARCHAR) || '.' IN partition_key) = 1",
            [board],
        )
