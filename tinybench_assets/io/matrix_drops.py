"""Plain 0/1-matrix drops (``.csv`` / ``.parquet``): rows = models or items, header = the other ids.

Read into the same :class:`~tinybench_assets.io.drop_types.Drop` and rejected with the same
:class:`~tinybench_assets.io.drop_types.DropError` (file, row, column, problem) as every other format;
:func:`tinybench_assets.io.wide_drops.table_layout` decides when a table is a matrix. Rows are numbered
from 1 = the first data row.

Plain 0/1 matrix (``format`` ``matrix_csv`` / ``matrix_parquet``)
------------------------------------------------------------------
First column = row ids, header = column ids, body = correctness. An optional sidecar next to the file,
``<file>.meta.json`` (``m.csv.meta.json``) or ``<stem>.meta.json`` (``m.meta.json``), holds::

    {"rows": "models" | "items", "scenario": "mmlu", "split": "train", "subscenario": "...",
     "values": "binary" | "scores"}

every key optional, no others allowed. ``scenario``/``split`` default to the file-name rule above,
``values`` to ``binary``: every non-empty cell must be 0 or 1; ``"values": "scores"`` allows any
score in [0, 1]. Empty/NaN cells are missing responses (left out). Write the sidecar before (or with)
the matrix: its bytes are part of the drop's id (:func:`~tinybench_assets.io.drops.drop_sha256`), so
changing it re-ingests the matrix on the next ingest.

**Orientation** without ``rows`` in a sidecar (:func:`detect_orientation`; the rule used is written
to ``drop.notes`` and logged by the ingest):

1. the id column's header says it: ``model``/``models`` -> rows are models; ``item``/``items``/
   ``sample_id``/``question_id`` -> rows are items;
2. Hugging Face style ids: when more than half of the row ids contain ``/`` and at most half of the
   column ids do, rows are models (and the mirror case: rows are items);
3. otherwise the shorter side is the models (leaderboards have more items than models): fewer rows
   than columns -> rows are models, more rows -> rows are items;
4. a square matrix with none of the above is refused (add a sidecar).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from .drop_types import ITEM_COLUMNS, RESPONSE_COLUMNS, Drop, DropError, clean_name, sidecar_path
from .wide_drops import _ids, _name_rule, _numeric, _raw_header_duplicates, frame_with_index

MODEL_ROW_HEADERS = frozenset({"model", "models", "model_id", "model_name"})
ITEM_ROW_HEADERS = frozenset({"item", "items", "sample_id", "question_id", "item_id"})
SIDECAR_KEYS = frozenset({"rows", "scenario", "split", "subscenario", "values"})



def read_sidecar(path: Path) -> tuple[dict, Path | None]:
    """The matrix's sidecar settings (validated) and its path, or ({}, None) without one."""
    side = sidecar_path(path)
    if side is None:
        return {}, None
    try:
        meta = json.loads(side.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DropError(path, f"sidecar {side.name} is not valid JSON ({exc})") from exc
    if not isinstance(meta, dict):
        raise DropError(path, f"sidecar {side.name} must be a JSON object, got {type(meta).__name__}")
    unknown = sorted(set(meta) - SIDECAR_KEYS)
    if unknown:
        raise DropError(path, f"sidecar {side.name}: unknown key(s) {unknown}; allowed {sorted(SIDECAR_KEYS)}")
    if meta.get("rows", "models") not in ("models", "items"):
        raise DropError(path, f"sidecar {side.name}: 'rows' is {meta['rows']!r}, expected 'models' or 'items'")
    if meta.get("values", "binary") not in ("binary", "scores"):
        raise DropError(path, f"sidecar {side.name}: 'values' is {meta['values']!r}, expected 'binary' or 'scores'")
    for k in ("scenario", "split", "subscenario"):
        if k in meta and (not isinstance(meta[k], str) or not meta[k].strip()):
            raise DropError(path, f"sidecar {side.name}: {k!r} must be a non-empty string, got {meta[k]!r}")
    return meta, side


def detect_orientation(id_header: str, row_ids, col_ids) -> tuple[str | None, str]:
    """(``"models"``/``"items"`` for what the rows are, or None when undecidable; the reason), see the module docstring."""
    head = str(id_header).strip().lower()
    if head in MODEL_ROW_HEADERS:
        return "models", f"the id column is named {id_header!r}"
    if head in ITEM_ROW_HEADERS:
        return "items", f"the id column is named {id_header!r}"
    r = float(np.mean(["/" in str(x) for x in row_ids])) if len(row_ids) else 0.0
    c = float(np.mean(["/" in str(x) for x in col_ids])) if len(col_ids) else 0.0
    if r > 0.5 and c <= 0.5:
        return "models", f"{r:.0%} of the row ids look like model ids (contain '/')"
    if c > 0.5 and r <= 0.5:
        return "items", f"{c:.0%} of the column ids look like model ids (contain '/')"
    if len(row_ids) < len(col_ids):
        return "models", f"fewer rows ({len(row_ids)}) than columns ({len(col_ids)}): the shorter side is the models"
    if len(row_ids) > len(col_ids):
        return "items", f"more rows ({len(row_ids)}) than columns ({len(col_ids)}): the shorter side is the models"
    return None, f"square matrix ({len(row_ids)} x {len(col_ids)}) with no model-like ids"


def read_matrix(path: Path, leaderboard: str, sha: str, df: pd.DataFrame) -> Drop:
    """Read and validate a plain 0/1 matrix (see the module docstring); raises DropError."""
    meta, side = read_sidecar(path)
    df = frame_with_index(df).rename(columns=str)
    if len(df) == 0:
        raise DropError(path, "empty file: header but no data rows")
    if df.shape[1] < 2:
        raise DropError(path, f"a matrix needs an id column and at least one data column; found {list(df.columns)}")
    _raw_header_duplicates(path, df)
    id_col = df.columns[0]
    row_ids = _ids(df, id_col, path)
    dup = pd.Series(row_ids).duplicated(keep=False).to_numpy()
    if dup.any():
        rows = np.flatnonzero(row_ids == row_ids[int(np.argmax(dup))])
        raise DropError(path, f"row id {row_ids[rows[0]]!r} listed twice (rows {', '.join(str(r + 1) for r in rows[:5])})",
                        row=int(rows[1]) + 1, column=id_col)
    col_ids = [c.strip() for c in df.columns[1:]]
    binary = meta.get("values", "binary") == "binary"
    body = np.empty((len(df), len(col_ids)))
    for j, c in enumerate(df.columns[1:]):
        vals, nonnum = _numeric(df[c])
        if nonnum.any():
            i = int(np.argmax(nonnum))
            raise DropError(path, f"value {df[c].iloc[i]!r} is not a number", row=i + 1, column=c)
        bad = ~np.isnan(vals) & ((vals != 0) & (vals != 1) if binary else (vals < 0) | (vals > 1))
        if bad.any():
            i = int(np.argmax(bad))
            problem = (f"value {float(vals[i])!r} is not 0 or 1 (a plain matrix holds 0/1; a sidecar with "
                       "\"values\": \"scores\" allows scores in [0, 1])" if binary else f"score {float(vals[i])!r} outside [0, 1]")
            raise DropError(path, problem, row=i + 1, column=c)
        body[:, j] = vals
    if "rows" in meta:
        rows_are, how = meta["rows"], f"sidecar {side.name}"
    else:
        rows_are, how = detect_orientation(id_col, row_ids, col_ids)
        if rows_are is None:
            raise DropError(path, f"cannot tell whether rows are models or items: {how}; add a sidecar "
                            f"{path.name}.meta.json with {{\"rows\": \"models\"}} or {{\"rows\": \"items\"}}")
        how = "detected: " + how
    name_scen, name_split = _name_rule(path)
    try:
        scenario = clean_name(meta["scenario"]) if "scenario" in meta else name_scen
    except ValueError:
        scenario = None
    if scenario is None:
        raise DropError(path, "no usable scenario: give \"scenario\" in the sidecar or a file name like mmlu_train.csv")
    split = meta["split"].strip().lower() if "split" in meta else name_split
    sub = meta.get("subscenario", scenario)
    r, c = np.nonzero(~np.isnan(body))
    row_arr, col_arr = np.asarray(row_ids, dtype=object), np.asarray(col_ids, dtype=object)
    models, items = (row_arr[r], col_arr[c]) if rows_are == "models" else (col_arr[c], row_arr[r])
    if len(r) == 0:
        raise DropError(path, "empty matrix: every cell is missing")
    drop = Drop(path=path, leaderboard=leaderboard, format="matrix_" + path.suffix.lower().lstrip("."), sha256=sha)
    drop.responses = pd.DataFrame({"leaderboard": leaderboard, "scenario": scenario, "subscenario": sub,
                                   "item": items, "model": models, "score": body[r, c]})[RESPONSE_COLUMNS]
    if split is not None:  # items carry nothing else here (no text)
        all_items = col_arr if rows_are == "models" else row_arr
        drop.items = pd.DataFrame({"leaderboard": leaderboard, "scenario": scenario, "subscenario": sub,
                                   "item": all_items, "text": None, "split": split})[ITEM_COLUMNS]
    drop.binarize_rules = {scenario: "auto"}
    n_models = len(row_ids) if rows_are == "models" else len(col_ids)
    drop.notes.append(f"matrix orientation: rows are {rows_are} ({how}); {n_models} models x "
                      f"{len(row_ids) + len(col_ids) - n_models} items, {int(np.isnan(body).sum())} missing cells")
    return drop
