"""The store's reads of costs and prices: ``CostQueries``, a mixin that ``io.store.Store`` inherits beside
``io.queries.StoreQueries`` (the same rules: standard SQL both engines run, ``?`` placeholders, an empty result with
the same columns when nothing is stored).

A scenario partition's costs come from the drops that carry them (wide tables' ``<model>|total_cost``) and, for every
(model, item) none of them prices, from the leaderboard's prices file (``io.price_drops``), token prices counting a
cell's output tokens from the response text its drop carries (``io.wide_responses``) where there is one.
"""

from __future__ import annotations

import pandas as pd

from .backend import StoreBackend
from .drops import split_partition_key
from .price_drops import PRICE_VALUES, question_costs

# a partition's cells of one landed per-(model, item) table, the latest active drop winning per (model, item);
# format with (table, value column); params: leaderboard, scenario
LATEST_CELLS = """
    SELECT model, item, {1} FROM (
        SELECT l.model, l.item, l.{1}, row_number() OVER (PARTITION BY l.model, l.item ORDER BY d.seq DESC) AS latest
        FROM {0} l JOIN drops d USING (drop_id)
        WHERE l.leaderboard = ? AND l.scenario = ? AND d.status = 'active') AS landed
    WHERE latest = 1
    ORDER BY model, item
"""
LATEST_COSTS = LATEST_CELLS.format("landed_costs", "cost")
LATEST_RESPONSE_TOKENS = LATEST_CELLS.format("landed_response_tokens", "tokens")
# a leaderboard's active prices, the latest prices drop winning per model; param: leaderboard
LATEST_PRICES = """
    SELECT model, cost_per_question, input_per_mtok, output_per_mtok, output_tokens FROM (
        SELECT p.*, row_number() OVER (PARTITION BY p.model ORDER BY d.seq DESC) AS latest
        FROM landed_prices p JOIN drops d USING (drop_id)
        WHERE p.leaderboard = ? AND d.status = 'active') AS landed
    WHERE latest = 1
    ORDER BY model
"""
# the distinct models or items of a partition's active drops; params: leaderboard, scenario
LANDED_DISTINCT = """
    SELECT DISTINCT l.{0} FROM landed_responses l JOIN drops d USING (drop_id)
    WHERE l.leaderboard = ? AND l.scenario = ? AND d.status = 'active'
"""


class CostQueries(StoreBackend):
    """Named reads of landed costs and prices (mixed into ``Store``)."""

    def costs(self, key: str) -> pd.DataFrame:
        """Per-(model, item) costs of one scenario partition (``leaderboard.scenario``): columns ``model, item, cost``,
        sorted by model and item.

        From the active drops; where several drops give a cell, the latest drop wins (as in ``responses``). A
        (model, item) no drop gives a cost is priced from the leaderboard's prices file (``prices``,
        ``io.price_drops.question_costs``) for the partition's models that have a price, token prices counting the
        cell's ``response_tokens`` as its output tokens where there are some; the other models get no rows.
        Empty (same columns) when neither costs nor prices landed.
        """
        board, scenario = split_partition_key(key)
        landed = self.query(LATEST_COSTS, [board, scenario])
        prices = self.prices(board)
        if len(prices):
            prices = prices[
                prices["model"].isin(self.query(LANDED_DISTINCT.format("model"), [board, scenario])["model"])
            ]
        if prices.empty:
            return landed
        priced = question_costs(prices, self.partition_questions(key), self.response_tokens(key))
        both = pd.concat([landed, priced], ignore_index=True) if len(landed) else priced
        return (
            both.drop_duplicates(["model", "item"], keep="first")  # landed costs first: they win
            .sort_values(["model", "item"])
            .reset_index(drop=True)
        )

    def response_tokens(self, key: str) -> pd.DataFrame:
        """Per-(model, item) answer lengths in tokens of one scenario partition, from the response text its drops
        carry (``io.wide_responses``): columns ``model, item, tokens``, the latest active drop winning per cell."""
        return self.query(LATEST_RESPONSE_TOKENS, list(split_partition_key(key)))

    def prices(self, board: str) -> pd.DataFrame:
        """A leaderboard's active prices, the latest prices drop winning per model: columns ``model,
        cost_per_question, input_per_mtok, output_per_mtok, output_tokens`` (floats, NaN where not given)."""
        df = self.query(LATEST_PRICES, [board])
        return df.astype({c: float for c in PRICE_VALUES})

    def price_drops(self, board: str) -> pd.DataFrame:
        """A leaderboard's active prices drops in landing order: columns ``drop_id, seq``."""
        return self.query(
            "SELECT drop_id, seq FROM drops WHERE leaderboard = ? AND kind = 'prices' "
            "AND status = 'active' ORDER BY seq",
            [board],
        )

    def partition_questions(self, key: str) -> pd.DataFrame:
        """The items of a scenario partition's active drops with their landed text: columns ``item, text`` (text NULL
        where none landed), sorted by item."""
        board, scenario = split_partition_key(key)
        return self.query(
            f"""SELECT q.item, i.text FROM ({LANDED_DISTINCT.format("item")}) q
                              LEFT JOIN items i ON i.leaderboard = ? AND i.scenario = ? AND i.item = q.item
                              ORDER BY q.item""",
            [board, scenario, board, scenario],
        )
