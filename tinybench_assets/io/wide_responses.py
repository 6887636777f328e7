"""Response text columns of wide tables: a model's answer to each question, whose length prices its output tokens.

A column is model ``m``'s response column when ``m`` is a model column (the rule of
:mod:`~tinybench_assets.io.wide_drops`) and the column is named ``m + "_response"`` (RouteLLM) or
``m + "|model_response"`` (RouterBench), the suffix matched case-insensitively. For every scored cell whose response text is present (not empty or NaN), ``Drop.response_tokens``
keeps the answer's length in tokens, :func:`~tinybench_assets.io.price_drops.estimate_tokens` of the text as read.
``Store.costs`` uses it as that cell's output tokens for token prices (docs/leaderboards.md, "Prices").
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .drop_types import RESPONSE_TOKEN_COLUMNS
from .price_drops import estimate_tokens
from .wide_rows import _present

#: a response column's name is its model's followed by one of these (compared lower-case; the first wins for a model
#: that has both)
RESPONSE_SUFFIXES = ("_response", "|model_response")


def response_columns(columns, models: list[str]) -> dict[str, str]:
    """``{model: its response column}`` for the model columns that have one."""
    model_set, out = set(models), {}
    for suffix in RESPONSE_SUFFIXES:
        for c in map(str, columns):
            base = c[: -len(suffix)]
            if c.lower().endswith(suffix) and base in model_set and c not in model_set:
                out.setdefault(base, c)
    return out


def response_note(response_of: dict[str, str]) -> list[str]:
    """The drop's note naming the response columns (none when there are none)."""
    if not response_of:
        return []
    return [
        "response columns: "
        + "; ".join(
            f"{c!r} (response text of model {m!r}: its length prices output tokens)"
            for m, c in list(response_of.items())[:20]
        )
    ]


def response_token_frame(
    df: pd.DataFrame, response_of: dict[str, str], scored: dict[str, np.ndarray], scenario, items, leaderboard: str
) -> pd.DataFrame:
    """``Drop.response_tokens`` (``RESPONSE_TOKEN_COLUMNS``): one row per scored cell (``scored``: model -> mask of its
    scored rows) whose response text is present."""
    frames = []
    for m, col in response_of.items():
        rows = scored[m] & _present(df[col])
        text = df[col].to_numpy(dtype=object)[rows]
        frames.append(
            pd.DataFrame(
                {
                    "scenario": np.asarray(scenario, dtype=object)[rows],
                    "item": np.asarray(items, dtype=object)[rows],
                    "model": m,
                    "tokens": np.array([int(estimate_tokens(str(t))) for t in text], dtype=np.int64),
                }
            )
        )
    if not frames:
        return pd.DataFrame(columns=RESPONSE_TOKEN_COLUMNS)
    return pd.concat(frames, ignore_index=True).assign(leaderboard=leaderboard)[RESPONSE_TOKEN_COLUMNS]
