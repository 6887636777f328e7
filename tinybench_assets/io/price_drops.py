"""A leaderboard's prices file: each model's price, from which ``Store.costs`` gives every question a cost where the
leaderboard's drops carry none.

``<incoming>/<leaderboard>/prices.csv`` (or ``prices.parquet``: any ``.csv`` / ``.parquet`` whose stem is ``prices``)
holds one row per model, in dollars:

- ``model, cost_per_question``: a flat price per question; or
- ``model, input_per_mtok, output_per_mtok``: prices per million input and output tokens, with an optional
  ``output_tokens`` (the model's answer length in tokens; empty or absent: :data:`DEFAULT_OUTPUT_TOKENS`).

Rows may mix the two kinds: a row needs ``cost_per_question`` or both token prices (``cost_per_question`` wins where
a row has both). Prices and token counts are finite and >= 0, a model is listed once; other columns are ignored and
named in the drop's notes. A question's input tokens are estimated from its text (:func:`estimate_tokens`); a cell's
output tokens from the model's response text where a drop carries it (``io.wide_responses``), else the model's
``output_tokens``, else :data:`DEFAULT_OUTPUT_TOKENS`. Errors are ``DropError``s naming the file, the row (1 = first
data row), the column and the problem.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from .drop_types import PRICE_COLUMNS, Drop, DropError

#: the file stem that makes a ``.csv`` / ``.parquet`` a prices file
PRICES_STEM = "prices"
PRICE_VALUES = ("cost_per_question", "input_per_mtok", "output_per_mtok", "output_tokens")
#: characters per token of English text (the common rule of thumb for GPT-style tokenizers)
CHARS_PER_TOKEN = 4.0
#: an answer's length in tokens where the prices file gives no ``output_tokens``: a short worked answer
DEFAULT_OUTPUT_TOKENS = 256


def is_prices_file(path: Path) -> bool:
    """Whether a landing file is a prices file: a ``.csv`` / ``.parquet`` named ``prices`` (any case)."""
    path = Path(path)
    return path.suffix.lower() in (".csv", ".parquet") and path.stem.lower() == PRICES_STEM


def estimate_tokens(text) -> float:
    """A question's input tokens, estimated from its text: one per :data:`CHARS_PER_TOKEN` characters, rounded up
    (NaN when the question has no text)."""
    return float(math.ceil(len(text) / CHARS_PER_TOKEN)) if isinstance(text, str) else float("nan")


def read_prices(path: Path, leaderboard: str, sha: str, df: pd.DataFrame) -> Drop:
    """A prices file's table (as loaded by ``io.drops``) as a ``Drop`` whose ``prices`` frame has ``PRICE_COLUMNS``."""
    df = df.rename(columns=lambda c: str(c).strip().lower())
    if dup := next((c for i, c in enumerate(df.columns) if c in df.columns[:i]), None):
        raise DropError(path, "column listed twice in the header", column=dup)
    if "model" not in df.columns:
        raise DropError(path, f"a prices file needs a 'model' column; found {list(df.columns)}", column="model")
    known = [c for c in PRICE_VALUES if c in df.columns]
    if not set(known) - {"output_tokens"}:
        other = [c for c in df.columns if c != "model"]
        raise DropError(
            path,
            "no price column: a prices file needs cost_per_question, or input_per_mtok and "
            f"output_per_mtok; found {list(df.columns)}",
            column=other[0] if other else None,
        )
    values = {c: _numbers(df, path, c) if c in known else np.full(len(df), np.nan) for c in PRICE_VALUES}
    _check_rows(values, path)
    prices = pd.DataFrame({"leaderboard": leaderboard, "model": _models(df, path), **values})[PRICE_COLUMNS]
    drop = Drop(
        path=path,
        leaderboard=leaderboard,
        format="prices_" + path.suffix.lower().lstrip("."),
        sha256=sha,
        prices=prices,
    )
    drop.notes.append(f"prices for {len(prices)} model(s)")
    if ignored := [c for c in df.columns if c != "model" and c not in PRICE_VALUES]:
        drop.notes.append(f"ignored columns: {', '.join(map(repr, ignored))}")
    return drop


def _models(df: pd.DataFrame, path: Path) -> np.ndarray:
    """The model names, stripped: none empty, none listed twice."""
    names = df["model"].astype(str).str.strip()
    empty = (df["model"].isna() | (names == "")).to_numpy()
    if empty.any():
        raise DropError(path, "missing model name", row=int(np.argmax(empty)) + 1, column="model")
    dup = names.duplicated().to_numpy()
    if dup.any():
        i = int(np.argmax(dup))
        first = int(np.argmax((names == names.iloc[i]).to_numpy()))
        raise DropError(
            path, f"model {names.iloc[i]!r} listed twice (rows {first + 1} and {i + 1})", row=i + 1, column="model"
        )
    return names.to_numpy()


def _numbers(df: pd.DataFrame, path: Path, column: str) -> np.ndarray:
    """A price or token column as floats, NaN where the cell is empty; non-numbers, infinities and negatives raise."""
    raw = df[column]
    vals = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
    given = raw.notna().to_numpy() & (raw.astype(str).str.strip() != "").to_numpy()
    for bad, problem in (
        (np.isnan(vals) & given, "is not a number"),
        (np.isinf(vals), "is not finite"),
        (vals < 0, "is negative"),
    ):
        if bad.any():
            i = int(np.argmax(bad))
            raise DropError(path, f"{column} {raw.iloc[i]!r} {problem}", row=i + 1, column=column)
    return vals


def _check_rows(values: dict[str, np.ndarray], path: Path) -> None:
    """Every row has cost_per_question or both token prices."""
    flat = ~np.isnan(values["cost_per_question"])
    has_in, has_out = ~np.isnan(values["input_per_mtok"]), ~np.isnan(values["output_per_mtok"])
    half = ~flat & (has_in ^ has_out)
    if half.any():
        i = int(np.argmax(half))
        given, missing = ("input_per_mtok", "output_per_mtok") if has_in[i] else ("output_per_mtok", "input_per_mtok")
        raise DropError(
            path,
            f"{given} without {missing}: a row needs cost_per_question or both token prices",
            row=i + 1,
            column=missing,
        )
    none = ~flat & ~has_in & ~has_out
    if none.any():
        raise DropError(
            path,
            "no price (empty or NaN): a row needs cost_per_question or input_per_mtok and output_per_mtok",
            row=int(np.argmax(none)) + 1,
            column="cost_per_question",
        )


def question_costs(
    prices: pd.DataFrame, questions: pd.DataFrame, response_tokens: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The cost of every (priced model, question): columns ``model, item, cost``.

    ``prices``: rows of ``PRICE_COLUMNS`` (as ``Store.prices`` returns them); ``questions``: columns ``item, text``;
    ``response_tokens``, optional: columns ``model, item, tokens``, one row per cell at most (``Store.response_tokens``).
    ``cost_per_question`` where a model has one, else ``input_per_mtok * in_tokens / 1e6 + output_per_mtok *
    out_tokens / 1e6`` with in_tokens from the question's text (:func:`estimate_tokens`) and out_tokens, first found:
    the cell's ``response_tokens``, the model's ``output_tokens``, :data:`DEFAULT_OUTPUT_TOKENS`. A question without
    text gets no token-priced cost."""
    tokens_in = questions["text"].map(estimate_tokens).to_numpy(dtype=float)
    frames = []
    for p in prices.itertuples(index=False):
        flat, rate_in, rate_out, out = (
            float(x) for x in (p.cost_per_question, p.input_per_mtok, p.output_per_mtok, p.output_tokens)
        )
        out = np.full(len(tokens_in), DEFAULT_OUTPUT_TOKENS if math.isnan(out) else out)
        if response_tokens is not None and len(response_tokens):
            own = response_tokens[response_tokens["model"] == p.model].set_index("item")["tokens"].astype(float)
            known = questions["item"].map(own).to_numpy(dtype=float)
            out = np.where(np.isnan(known), out, known)
        cost = np.full(len(tokens_in), flat) if not math.isnan(flat) else (rate_in * tokens_in + rate_out * out) / 1e6
        frames.append(pd.DataFrame({"model": p.model, "item": questions["item"].to_numpy(), "cost": cost}))
    if not frames:
        return pd.DataFrame(
            {"model": pd.Series(dtype=object), "item": pd.Series(dtype=object), "cost": pd.Series(dtype=float)}
        )
    return pd.concat(frames, ignore_index=True).dropna(subset=["cost"]).reset_index(drop=True)
