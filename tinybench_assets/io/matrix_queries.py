"""The store's reads of a partition's response matrix (``matrix_items``, ``matrix_models``), its model split
(``model_splits``) and its IRT fit (``irt_fits``, ``irt_items``, ``irt_models``).

``MatrixQueries`` is the mixin ``io.queries.StoreQueries`` builds on, so ``io.store.Store`` inherits these reads with
the other named reads; the same rules hold (standard SQL both engines run, ``?`` placeholders, an empty result with
the same columns when nothing is stored). Keys: a scenario partition key is ``leaderboard.scenario``; a leaderboard's
(joint fit's) key is the leaderboard.
"""

from __future__ import annotations

import pandas as pd

from .backend import StoreBackend


class MatrixQueries(StoreBackend):
    """Named reads of the response matrices, model splits and IRT fits (``query`` comes from the store's engine)."""

    # ------------------------------------------------------------------ response matrix
    def matrix_items(self, key: str) -> pd.DataFrame:
        """A partition's matrix columns in matrix order: ``col, item, subscenario, balance_weight, split, mean_score``."""
        return self.query(
            "SELECT col, item, subscenario, balance_weight, split, mean_score FROM matrix_items "
            "WHERE partition_key = ? ORDER BY col",
            [key],
        )

    def matrix_models(self, key: str) -> pd.DataFrame:
        """A partition's matrix rows, by model name: columns ``row, model, n_items, accuracy``."""
        return self.query(
            'SELECT "row", model, n_items, accuracy FROM matrix_models WHERE partition_key = ? ORDER BY model', [key]
        )

    def item_split(self, key: str) -> pd.Series:
        """A partition's item -> split of its matrix items (``test`` = held-out question; None where none landed)."""
        return self.query("SELECT item, split FROM matrix_items WHERE partition_key = ?", [key]).set_index("item")[
            "split"
        ]

    def matrix_questions(self, key: str) -> pd.DataFrame:
        """A partition's matrix items in matrix order with their landed text: columns ``item, split, text`` (text NULL
        where none landed)."""
        return self.query(
            """SELECT mi.item, mi.split, i.text FROM matrix_items mi
               LEFT JOIN items i ON i.item = mi.item AND i.leaderboard || '.' || i.scenario = mi.partition_key
               WHERE mi.partition_key = ? ORDER BY mi.col""",
            [key],
        )

    def scenario_summary(self) -> pd.DataFrame:
        """One row per scenario partition with a response matrix: ``partition_key, models, items, mean_acc_pct``
        (mean model accuracy, %), ``binarization, threshold`` (NULL before binarization)."""
        df = self.query(
            """SELECT m.partition_key, count(*) AS models, max(i.items) AS items, 100 * avg(m.accuracy) AS mean_acc_pct,
                      max(b.rule) AS binarization, max(b.threshold) AS threshold
               FROM matrix_models m
               JOIN (SELECT partition_key, count(*) AS items FROM matrix_items GROUP BY 1) i USING (partition_key)
               LEFT JOIN binarization b USING (partition_key)
               GROUP BY 1 ORDER BY 1"""
        )
        return df.round({"mean_acc_pct": 2, "threshold": 3})

    # ------------------------------------------------------------------ model splits and IRT fits
    def model_split(self, key: str) -> pd.Series:
        """model -> ``train`` / ``test`` of the split stored for a leaderboard (joint fit) or a scenario partition."""
        return self.query("SELECT model, split FROM model_splits WHERE partition_key = ?", [key]).set_index("model")[
            "split"
        ]

    def n_models(self, key: str) -> int:
        """How many models the stored model split of a leaderboard (or scenario partition) holds; 0 when none."""
        return int(
            self.query("SELECT count(DISTINCT model) AS n FROM model_splits WHERE partition_key = ?", [key])["n"].iloc[
                0
            ]
        )

    def irt_fit_summary(self, key: str) -> pd.DataFrame:
        """The ``irt_fits`` row of a scenario partition or leaderboard (0 or 1 rows; all the table's columns)."""
        return self.query("SELECT * FROM irt_fits WHERE partition_key = ?", [key])

    def irt_items(self, key: str) -> pd.DataFrame:
        """Fitted item parameters: columns ``item, b, a`` (a: a list of D discriminations)."""
        return self.query("SELECT item, b, a FROM irt_items WHERE partition_key = ?", [key])

    def irt_models(self, key: str) -> pd.DataFrame:
        """Fitted abilities of the training models: columns ``model, theta`` (a list of D values)."""
        return self.query("SELECT model, theta FROM irt_models WHERE partition_key = ?", [key])

    def weighted_irt_items(self, key: str) -> pd.DataFrame:
        """Fitted item parameters with balance weights, by item id: columns ``item, b, a, w`` (w = 1.0 where the
        matrix holds no weight for the item)."""
        return self.query(
            "SELECT i.item, i.b, i.a, coalesce(m.balance_weight, 1.0) AS w FROM irt_items i "
            "LEFT JOIN matrix_items m ON m.partition_key = i.partition_key AND m.item = i.item "
            "WHERE i.partition_key = ? ORDER BY i.item",
            [key],
        )

    def irt_scenario_keys(self, board: str) -> list[str]:
        """The leaderboard's scenario partition keys that have a fitted IRT model, sorted (the joint fit excluded)."""
        return self.query(
            "SELECT DISTINCT partition_key FROM irt_items "
            "WHERE position(CAST(? AS VARCHAR) || '.' IN partition_key) = 1 ORDER BY 1",
            [board],
        )["partition_key"].tolist()
