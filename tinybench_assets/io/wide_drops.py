"""Wide-table and plain 0/1-matrix drops: the layouts routing data usually comes in.

Both are ``.csv`` or ``.parquet`` files in the landing folder, read into the same :class:`Drop` and
rejected with the same :class:`DropError` (file, row, column, problem) as the formats of
:mod:`tinybench_assets.io.drops`, whose ``read_drop`` sends a table here when
:func:`~tinybench_assets.io.table_layout.table_layout` says so. Rows are numbered from 1 = the first data row (the
header is not counted).

Wide table (``format`` ``wide_csv`` / ``wide_parquet``; RouterBench style)
---------------------------------------------------------------------------
One row per question. Columns (names matched case-insensitively):

- item id, optional: the first of ``sample_id``, ``item``, ``id``. Without one, item ids are
  ``<scenario>.<split>.<row>`` (``<scenario>.<row>`` when there is no split), row counted from 0: the
  RouterDC JSON rule, so the same questions get the same ids in either format. Rows that repeat an id
  within a scenario are merged into one, or rejected when they conflict (:mod:`~tinybench_assets.io.wide_rows`).
- text, required: the first of ``prompt``, ``question``, ``text``; no empty cells.
- scenario, optional: ``eval_name`` or ``scenario`` (per row). Without it the scenario comes from the
  file name, the RouterDC rule: ``mmlu_train.csv`` -> scenario ``mmlu``, split ``train``;
  ``gsm8k-test.parquet`` -> ``gsm8k``/``test``; ``arc.csv`` -> ``arc``, no split.
- ``split``, optional (empty cell = none); without the column, the file name's split if it has one.
- ``subscenario``, optional; defaults to the scenario.
- model score columns and per-model cost columns ``<model>|total_cost`` (or ``<model>|cost``;
  ``total_cost`` wins when both are there); per-model response text ``<model>_response`` or
  ``<model>|model_response``, whose length prices output tokens (:mod:`~tinybench_assets.io.wide_responses`).

A column is a model's score column by the model column rule of :mod:`~tinybench_assets.io.table_layout`
(numeric, not a meta name, with a cost column or mostly in [0, 1]). Every other column but the response columns is
ignored and named in ``drop.notes``. A model column is then validated strictly: each non-empty cell must be a
number in [0, 1]; an empty/NaN cell is a missing response (left out). A cost is kept for every scored cell whose
model has a cost column and must be a finite number >= 0 there (empty, NaN, inf, negative or text: error); a cost
column whose model has no score column is an error. Scores binarize with the ``auto`` rule (0/1 data stays unchanged).

Plain 0/1 matrices are read by :mod:`tinybench_assets.io.matrix_drops`.

Which reader a ``.csv`` / ``.parquet`` table goes to (long, wide or matrix) is decided by
:func:`~tinybench_assets.io.table_layout.table_layout`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .drop_types import COST_COLUMNS, ITEM_COLUMNS, RESPONSE_COLUMNS, ROUTERDC_NAME_RE, Drop, DropError, clean_name
from .table_layout import (
    ID_COLUMNS,
    SCENARIO_COLUMNS,
    WIDE_TEXT_COLUMNS,
    frame_with_index,
    is_cost_column,
    wide_columns,
)
from .table_layout import read_without_header as read_without_header  # re-exported: matrix_drops imports it from here
from .table_layout import table_layout as table_layout  # re-exported: the readers' docstrings name it here
from .wide_responses import response_columns, response_note, response_token_frame
from .wide_rows import _numeric, _present, merge_duplicate_rows, rejected_rows, repeated_text_note


# ---------------------------------------------------------------------- helpers
def _lower_map(df: pd.DataFrame) -> dict[str, str]:
    out: dict[str, str] = {}
    for c in df.columns:
        out.setdefault(str(c).strip().lower(), c)
    return out


def _pick(df: pd.DataFrame, names: tuple[str, ...]) -> str | None:
    lower = _lower_map(df)
    return next((lower[n] for n in names if n in lower), None)


def _name_rule(path: Path) -> tuple[str | None, str | None]:
    """(scenario, split) from the file name: ``mmlu_train.csv`` -> (mmlu, train), ``arc.csv`` -> (arc, None)."""
    stem = path.name[: -len(path.suffix)] if path.suffix else path.name
    m = ROUTERDC_NAME_RE.match(stem)
    try:
        return (clean_name(m["scenario"]), m["split"].lower()) if m else (clean_name(stem), None)
    except ValueError:
        return None, None


def _raw_header_duplicates(path: Path, df: pd.DataFrame) -> None:
    """pandas renames a repeated CSV header ``m`` to ``m.1``; a repeated column is an error, not a second model."""
    if path.suffix.lower() == ".csv":
        try:
            header = [str(h) for h in pd.read_csv(path, header=None, nrows=1, dtype=str).iloc[0].tolist()]
        except Exception:  # noqa: BLE001 - the full read succeeded; nothing more to learn here
            return
    else:
        header = [str(c) for c in df.columns]
    seen: set[str] = set()
    for h in header:
        if h in seen and h != "nan":
            raise DropError(path, "column listed twice in the header", column=h)
        seen.add(h)


def _ids(df: pd.DataFrame, column: str, path: Path) -> np.ndarray:
    s = df[column]
    missing = ~_present(s)
    if missing.any():
        raise DropError(path, "missing id (NaN/empty) not allowed", row=int(np.argmax(missing)) + 1, column=str(column))
    if pd.api.types.is_float_dtype(s) and np.all(np.mod(s.to_numpy(dtype=float), 1) == 0):
        s = s.astype(np.int64)
    return s.astype(str).str.strip().to_numpy(dtype=object)


# ---------------------------------------------------------------------- wide table
def _wide_columns_checked(path: Path, df: pd.DataFrame) -> tuple:
    """(text column, model columns, {model: cost column}, {ignored column: why}, {model: response column}); a
    DropError for no text column, a cost column without its model, or no model column."""
    text_col = _pick(df, WIDE_TEXT_COLUMNS)
    if text_col is None:
        raise DropError(
            path, f"wide table without a text column (one of {list(WIDE_TEXT_COLUMNS)}); found {list(df.columns)[:30]}"
        )
    models, cost_of, ignored = wide_columns(df)
    for c in df.columns:  # a cost column in use must belong to a model column
        parsed = is_cost_column(c)
        if parsed and c not in ignored and parsed[0] not in models:
            why = f"its score column {parsed[0]!r} " + (
                f"is ignored ({ignored[parsed[0]]})"
                if parsed[0] in ignored
                else "is a meta column"
                if parsed[0] in df.columns
                else "is missing"
            )
            raise DropError(path, f"cost column without a model: {why}", column=c)
    if not models:
        raise DropError(
            path,
            "no model score columns: a model column is numeric, not a meta name, and has a '<model>|total_cost' "
            f"column or values in [0, 1]; columns found {list(df.columns)[:30]}"
            + (f" (ignored: {dict(list(ignored.items())[:10])})" if ignored else ""),
        )
    response_of = response_columns(df.columns, models)
    for col in response_of.values():
        ignored.pop(col, None)
    missing = ~_present(df[text_col])
    if missing.any():
        raise DropError(path, "missing question text (NaN/empty)", row=int(np.argmax(missing)) + 1, column=text_col)
    return text_col, models, cost_of, ignored, response_of


def _row_labels(path: Path, df: pd.DataFrame) -> tuple:
    """(scenario, split, subscenario per row, the scenario column or None, the subscenario column or None), from
    the columns where present, else from the file name's rule."""
    n = len(df)
    name_scen, name_split = _name_rule(path)
    scen_col = _pick(df, SCENARIO_COLUMNS)
    if scen_col is not None:
        missing = ~_present(df[scen_col])
        if missing.any():
            raise DropError(path, "missing scenario (NaN/empty)", row=int(np.argmax(missing)) + 1, column=scen_col)
        scen = np.empty(n, dtype=object)
        for raw in pd.unique(df[scen_col].astype(str)):
            rows = (df[scen_col].astype(str) == raw).to_numpy()
            try:
                scen[rows] = clean_name(raw)
            except ValueError:
                raise DropError(
                    path, f"scenario {raw!r} has no usable name", row=int(np.argmax(rows)) + 1, column=scen_col
                ) from None
    elif name_scen is None:
        raise DropError(path, "no scenario column (eval_name/scenario) and no usable scenario in the file name")
    else:
        scen = np.full(n, name_scen, dtype=object)
    split_col = _pick(df, ("split",))
    if split_col is not None:
        split = np.array(
            [str(v).strip().lower() if ok else None for v, ok in zip(df[split_col], _present(df[split_col]))],
            dtype=object,
        )
    else:
        split = np.full(n, name_split, dtype=object)
    sub_col = _pick(df, ("subscenario",))
    if sub_col is not None:
        missing = ~_present(df[sub_col])
        if missing.any():
            raise DropError(path, "missing subscenario (NaN/empty)", row=int(np.argmax(missing)) + 1, column=sub_col)
        sub = df[sub_col].astype(str).to_numpy(dtype=object)
    else:
        sub = scen
    return scen, split, sub, scen_col, split_col, sub_col


def _scores_and_costs(path: Path, df: pd.DataFrame, models: list, cost_of: dict, scen, sub, items, keep) -> tuple:
    """(response frames, cost frames, {model: scored rows}) of the kept rows; a DropError naming the row and column
    of a score that is not a number in [0, 1] or of a cost that is not a finite non-negative number where scored."""
    resp_frames, cost_frames, scored_of = [], [], {}
    for m in models:
        vals, nonnum = _numeric(df[m])
        if nonnum.any():
            i = int(np.argmax(nonnum))
            raise DropError(path, f"score {df[m].iloc[i]!r} is not a number", row=i + 1, column=m)
        out = (vals < 0) | (vals > 1)
        if out.any():
            i = int(np.argmax(out))
            raise DropError(path, f"score {float(vals[i])!r} outside [0, 1]", row=i + 1, column=m)
        scored = scored_of[m] = ~np.isnan(vals) & keep
        resp_frames.append(
            pd.DataFrame(
                {
                    "scenario": scen[scored],
                    "subscenario": sub[scored],
                    "item": items[scored],
                    "model": m,
                    "score": vals[scored],
                }
            )
        )
        if m in cost_of:
            cc = cost_of[m]
            cost, cnonnum = _numeric(df[cc])
            checks = [
                (cnonnum & scored, lambda i, cc=cc: f"cost {df[cc].iloc[i]!r} is not a number"),
                (
                    np.isnan(cost) & ~cnonnum & scored,
                    lambda i, m=m: f"cost is missing (NaN/empty) for a scored cell of model {m!r}",
                ),
                (np.isinf(cost) & scored, lambda i, cost=cost: f"cost {float(cost[i])!r} is not finite"),
                ((cost < 0) & scored, lambda i, cost=cost: f"cost {float(cost[i])!r} is negative"),
            ]
            for bad, problem in checks:
                if bad.any():
                    i = int(np.argmax(bad))
                    raise DropError(path, problem(i), row=i + 1, column=cc)
            cost_frames.append(
                pd.DataFrame({"scenario": scen[scored], "item": items[scored], "model": m, "cost": cost[scored]})
            )
    return resp_frames, cost_frames, scored_of


def read_wide(path: Path, leaderboard: str, sha: str, df: pd.DataFrame) -> Drop:
    """Read and validate a wide table (see the module docstring); raises DropError."""
    df = frame_with_index(df).rename(columns=str)
    if len(df) == 0:
        raise DropError(path, "empty file: header but no data rows")
    _raw_header_duplicates(path, df)
    text_col, models, cost_of, ignored, response_of = _wide_columns_checked(path, df)
    scen, split, sub, scen_col, split_col, sub_col = _row_labels(path, df)
    id_col = _pick(df, ID_COLUMNS)
    if id_col is not None:
        items = _ids(df, id_col, path)
    else:
        items = np.array(
            [f"{s}.{sp}.{i}" if sp else f"{s}.{i}" for i, (s, sp) in enumerate(zip(scen, split))], dtype=object
        )
    key = pd.Series([f"{s}\x00{i}" for s, i in zip(scen, items)])
    keep, conflicts, row_notes = merge_duplicate_rows(
        df,
        key,
        items,
        models,
        cost_of,
        [text_col, split_col, sub_col],
        path,
        id_col or "(generated id)",
        list(response_of.values()),
    )
    rejected, rejected_notes = rejected_rows(df, conflicts, path)
    resp_frames, cost_frames, scored_of = _scores_and_costs(path, df, models, cost_of, scen, sub, items, keep)
    fmt = "wide_" + path.suffix.lower().lstrip(".")
    drop = Drop(path=path, leaderboard=leaderboard, format=fmt, sha256=sha)
    drop.responses = pd.concat(resp_frames, ignore_index=True).assign(leaderboard=leaderboard)[RESPONSE_COLUMNS]
    drop.items = pd.DataFrame(
        {
            "leaderboard": leaderboard,
            "scenario": scen,
            "subscenario": sub,
            "item": items,
            "text": df[text_col].astype(str).to_numpy(dtype=object),
            "split": split,
        }
    )[ITEM_COLUMNS][keep]
    if cost_frames:
        drop.costs = pd.concat(cost_frames, ignore_index=True).assign(leaderboard=leaderboard)[COST_COLUMNS]
    drop.response_tokens = response_token_frame(df, response_of, scored_of, scen, items, leaderboard)
    drop.binarize_rules = {s: "auto" for s in sorted(set(scen))}
    shown = ", ".join(models[:8]) + (f", ... ({len(models)} in all)" if len(models) > 8 else "")
    drop.notes.append(f"wide table: {len(models)} model column(s) [{shown}], cost columns for {len(cost_of)}")
    if ignored:
        drop.notes.append("ignored columns: " + "; ".join(f"{c!r} ({why})" for c, why in list(ignored.items())[:20]))
    drop.notes.extend(
        response_note(response_of) + row_notes + rejected_notes + repeated_text_note(df[text_col], scen, keep)
    )
    drop.rejected = rejected
    drop.notes.append(
        f"scenario from {'column ' + repr(scen_col) if scen_col else 'the file name'}; "
        f"item ids from {'column ' + repr(id_col) if id_col else 'scenario.split.row'}"
    )
    return drop
