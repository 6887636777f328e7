"""Which reader a ``.csv`` / ``.parquet`` drop goes to: long table, wide table or plain 0/1 matrix
(:func:`table_layout`), and which columns of a wide table are models' scores (:func:`wide_columns`).

:mod:`tinybench_assets.io.drops`' ``read_drop`` asks :func:`table_layout` where a loaded table goes; the wide-table
reader (:mod:`tinybench_assets.io.wide_drops`) takes its model and cost columns from :func:`wide_columns`. Known
column names (meta names, cost suffixes, long-table columns) are matched case-insensitively.

Model column rule (:func:`wide_columns`)
----------------------------------------
A column is a model's score column when all of these hold:

1. its name is not a known meta name (:data:`META_COLUMNS`, or pandas' ``Unnamed: N`` index column)
   and contains no ``|`` (RouterBench's ``<model>|model_response`` and similar per-model fields);
2. it is numeric: more than half of its non-empty cells parse as numbers (so a string column such as
   ``oracle_model_to_route_to`` is ignored, while a score column with one typo stays a model column
   and the typo is reported);
3. it has a cost column (``<name>|total_cost`` / ``<name>|cost``), or more than half of its numeric
   values lie in [0, 1] (so a token count or a row number is not taken for a model).

A model with both cost columns takes ``<model>|total_cost``; its ``<model>|cost`` is ignored (and named so).

Layout detection (:func:`table_layout`)
---------------------------------------
- a sidecar exists, or the CSV has no header row (:func:`~tinybench_assets.io.matrix_drops.headerless`) -> matrix;
- a ``model`` column next to ``score``/``full_benchmark_score``/``item``/``scenario`` -> long table
  (its reader: responses, full scores);
- a text column and no ``model`` column: with >= 2 model columns (rule above) -> wide table; else with
  ``item`` and ``scenario`` -> items table; else -> wide table (whose reader reports "no model score
  columns", naming the columns found);
- no text column, a first id column and a body of >= 1 column, none named like a long-table column,
  whose non-empty cells are mostly (more than half) 0 or 1 -> matrix (then every cell is checked);
- a table with any long-table column name -> long table (its reader names the missing columns);
- anything else -> :class:`DropError` "unknown layout", naming the columns found.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from .drop_types import DropError, sidecar_path
from .wide_rows import _numeric, _present

ID_COLUMNS = ("sample_id", "item", "id")
WIDE_TEXT_COLUMNS = ("prompt", "question", "text")
SCENARIO_COLUMNS = ("eval_name", "scenario")
COST_SUFFIXES = ("total_cost", "cost")  # first wins
#: names never taken for a model (compared lower-case)
META_COLUMNS = frozenset(
    ID_COLUMNS
    + WIDE_TEXT_COLUMNS
    + SCENARIO_COLUMNS
    + (
        "split",
        "subscenario",
        "oracle_model_to_route_to",
        "index",
        "level_0",
        "row",
        "row_id",
        "question_id",
        "answer",
        "answers",
        "gold",
        "target",
        "label",
        "reference",
        "category",
        "source",
        "cluster_id",
    )
)
USED_META = frozenset(ID_COLUMNS + WIDE_TEXT_COLUMNS + SCENARIO_COLUMNS + ("split", "subscenario"))
LONG_COLUMNS = frozenset({"model", "scenario", "subscenario", "item", "score", "full_benchmark_score"})
UNNAMED_RE = re.compile(r"^unnamed: \d+$")


# ---------------------------------------------------------------------- column names
def is_cost_column(name: str) -> tuple[str, str] | None:
    """(model, suffix) of a cost column ``<model>|total_cost`` / ``<model>|cost`` (suffix lower-case), else None."""
    base, sep, suffix = str(name).rpartition("|")
    if sep and base and suffix.strip().lower() in COST_SUFFIXES:
        return base, suffix.strip().lower()
    return None


def _is_meta(name: str) -> bool:
    low = str(name).strip().lower()
    return low in META_COLUMNS or bool(UNNAMED_RE.match(low))


def read_without_header(df: pd.DataFrame) -> bool:
    """Whether a table was read without a header row: pandas then numbers its columns 0, 1, ... (integers, which no
    CSV header or parquet schema gives)."""
    return pd.api.types.is_integer_dtype(df.columns)


def frame_with_index(df: pd.DataFrame) -> pd.DataFrame:
    """A parquet file written with a pandas index comes back with it as the index: make it a column again."""
    if isinstance(df.index, pd.RangeIndex) and df.index.name is None:
        return df
    return df.reset_index()


# ---------------------------------------------------------------------- model columns and layout
def wide_columns(df: pd.DataFrame) -> tuple[list[str], dict[str, str], dict[str, str]]:
    """Apply the model column rule: (model columns, {model: cost column}, {ignored column: why})."""
    by_base: dict[str, dict[str, str]] = {}
    for c in df.columns:
        parsed = is_cost_column(c)
        if parsed:
            by_base.setdefault(parsed[0], {})[parsed[1]] = str(c)
    cost_of: dict[str, str] = {}
    ignored: dict[str, str] = {}
    for base, found in by_base.items():
        chosen = next(found[s] for s in COST_SUFFIXES if s in found)
        cost_of[base] = chosen
        for other in found.values():
            if other != chosen:
                ignored[other] = f"{chosen!r} is used for this model's cost"
    models: list[str] = []
    for c in df.columns:
        name = str(c)
        if is_cost_column(name):
            continue  # read with its model
        if _is_meta(name):
            if name.strip().lower() not in USED_META:
                ignored[name] = (
                    "an unnamed index column (pandas' to_csv with its index)"
                    if UNNAMED_RE.match(name.strip().lower())
                    else "a known non-model column"
                )
            continue
        if "|" in name:
            ignored[name] = "a per-model field other than a score or cost"
            continue
        vals, nonnum = _numeric(df[c])
        n_present = int(_present(df[c]).sum())
        if n_present == 0:
            if name in cost_of:
                models.append(name)  # a model with costs but no responses: kept, not silently dropped
            else:
                ignored[name] = "empty column"
            continue
        if (n_present - int(nonnum.sum())) * 2 <= n_present:
            ignored[name] = "not numeric"
            continue
        num = vals[~np.isnan(vals)]
        if name in cost_of or np.count_nonzero((num >= 0) & (num <= 1)) * 2 > len(num):
            models.append(name)
        else:
            ignored[name] = "numeric, but mostly outside [0, 1] and no cost column"
    return models, {m: cost_of[m] for m in models if m in cost_of}, ignored


def _mostly_binary(df: pd.DataFrame) -> bool:
    body = df.iloc[:, 1:]
    n_present = n_binary = 0
    for c in body.columns:
        vals, _ = _numeric(body[c])
        n_present += int(_present(body[c]).sum())
        n_binary += int(np.count_nonzero((vals == 0) | (vals == 1)))
    return n_present > 0 and n_binary * 2 > n_present


def table_layout(path: Path, df: pd.DataFrame) -> str:
    """``"long"``, ``"wide"`` or ``"matrix"`` for a loaded ``.csv``/``.parquet`` table; raises DropError for an unknown layout."""
    if sidecar_path(path) is not None or read_without_header(df):
        return "matrix"
    lower = {str(c).strip().lower() for c in df.columns}
    if "model" in lower and lower & {"score", "full_benchmark_score", "item", "scenario"}:
        return "long"
    has_text = bool(lower & set(WIDE_TEXT_COLUMNS))
    if has_text and "model" not in lower:
        wdf = frame_with_index(df)
        if len(wide_columns(wdf)[0]) >= 2:
            return "wide"
        return "long" if {"item", "scenario"} <= lower else "wide"
    body_names = {str(c).strip().lower() for c in df.columns[1:]}
    if not has_text and len(df.columns) >= 2 and not body_names & LONG_COLUMNS and _mostly_binary(frame_with_index(df)):
        return "matrix"
    if lower & LONG_COLUMNS:
        return "long"
    raise DropError(
        path,
        f"unknown layout: columns found {[str(c) for c in df.columns][:30]}; expected a long table "
        "(model, scenario, item, score), an items table (item, scenario, prompt), a full-score table "
        "(model, scenario, full_benchmark_score), a wide table (prompt/question + one score column per model) "
        "or a 0/1 matrix (id column + 0/1 body, or a <file>.meta.json sidecar)",
    )
