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
     "values": "binary" | "scores", "header": true | false}

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

**No header row** (CSV only, :func:`headerless`): ``"header": false`` in the sidecar says the first line is data; without
the key, a first line whose cells after the first are all numbers in [0, 1] with a value repeated is taken for data (a
header names each column once, so it cannot repeat a name; a header of distinct numeric ids such as ``id,0,1,2`` stays
a header); ``"header": true`` turns the detection off. In such a file the first column holds row ids when any of its
cells is not a number in [0, 1], else it is data like the others; rows and columns in errors are counted from 1.
Missing ids are generated once the orientation is known, from the file's scenario and split (``<scenario>.<split>``,
or ``<scenario>`` without a split) and the position counted from 0: items ``<scenario>.<split>.<i>`` (the wide-table
and RouterDC rule), models ``<scenario>.<split>.model<i>``. Generated model ids name their file's scenario and split,
so two files never share a model by position; give the file a header and an id column to name models.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from .drop_types import ITEM_COLUMNS, RESPONSE_COLUMNS, Drop, DropError, clean_name, sidecar_path
from .wide_drops import _ids, _name_rule, _numeric, _raw_header_duplicates, frame_with_index, read_without_header

MODEL_ROW_HEADERS = frozenset({"model", "models", "model_id", "model_name"})
ITEM_ROW_HEADERS = frozenset({"item", "items", "sample_id", "question_id", "item_id"})
SIDECAR_KEYS = frozenset({"header", "rows", "scenario", "split", "subscenario", "values"})


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
    if not isinstance(meta.get("header", True), bool):
        raise DropError(path, f"sidecar {side.name}: 'header' is {meta['header']!r}, expected true or false")
    if meta.get("header") is False and Path(path).suffix.lower() != ".csv":
        raise DropError(
            path, f'sidecar {side.name}: "header": false is for CSV files (a parquet file names its columns)'
        )
    return meta, side


def _unit_numbers(cells) -> pd.Series | None:
    """The non-empty cells as numbers when every one is a number in [0, 1], else None."""
    text = pd.Series([str(c).strip() for c in cells], dtype=object)
    vals = pd.to_numeric(text[text != ""], errors="coerce")
    return vals if vals.notna().all() and vals.between(0, 1).all() else None


def _data_like(cells) -> bool:
    """Whether header cells (the first, the row ids' column, left out) are data: numbers in [0, 1], one repeated."""
    vals = _unit_numbers(cells[1:])
    return vals is not None and bool(vals.duplicated().any())


def headerless(path: Path, cells: list[str]) -> bool:
    """Whether a CSV's first line (``cells``) is data, not column names: the sidecar's ``header`` when it has one, else
    the detection rule of the module docstring."""
    meta, _ = read_sidecar(path)
    return not meta["header"] if "header" in meta else _data_like(cells)


def header_hint(path: Path, cells: list[str]) -> str:
    """What to add to a "listed twice in the header" error when the header's cells after the first are all numbers:
    how to declare that the file has no header row."""
    text = pd.Series([str(c).strip() for c in cells[1:]], dtype=object)
    text = text[text != ""]
    if text.empty or pd.to_numeric(text, errors="coerce").isna().any():
        return ""
    return (
        f" (if the first line is data, not column names, add a sidecar {Path(path).name}.meta.json with "
        '{"header": false})'
    )


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


def _frame(df: pd.DataFrame) -> tuple[pd.DataFrame, bool]:
    """The table with text column names, and whether it was read without a header row (then its columns are numbered
    from 1)."""
    no_header = read_without_header(df)
    df = frame_with_index(df)
    if no_header:
        return df.set_axis([str(j + 1) for j in range(df.shape[1])], axis=1), True
    return df.rename(columns=str), False


def _id_column(df: pd.DataFrame, no_header: bool) -> str | None:
    """The row ids' column: the first; in a file without a header row, only when one of its cells is not a number in
    [0, 1] (else every column is data and the row ids are generated)."""
    first = df.columns[0]
    vals, nonnum = _numeric(df[first])
    if no_header and not nonnum.any() and not ((vals < 0) | (vals > 1)).any():
        return None
    return first


def _row_ids(path: Path, df: pd.DataFrame, id_col: str | None) -> np.ndarray | None:
    """The row ids from the id column (each listed once), or None without one."""
    if id_col is None:
        return None
    row_ids = _ids(df, id_col, path)
    dup = pd.Series(row_ids).duplicated(keep=False).to_numpy()
    if dup.any():
        rows = np.flatnonzero(row_ids == row_ids[int(np.argmax(dup))])
        raise DropError(
            path,
            f"row id {row_ids[rows[0]]!r} listed twice (rows {', '.join(str(r + 1) for r in rows[:5])})",
            row=int(rows[1]) + 1,
            column=id_col,
        )
    return row_ids


def _body(path: Path, df: pd.DataFrame, data_cols: list[str], binary: bool) -> np.ndarray:
    """The data columns as floats (NaN = missing), each cell checked: 0/1, or a score in [0, 1] when not ``binary``.
    Numeric columns convert at once; only text columns are parsed one by one. Errors name the first bad column."""
    frame = df[data_cols]
    if all(pd.api.types.is_numeric_dtype(t) for t in frame.dtypes):
        body = frame.to_numpy(dtype=float)
    else:
        body = np.empty((len(df), len(data_cols)))
        for j, c in enumerate(data_cols):
            body[:, j], nonnum = _numeric(df[c])
            if nonnum.any():
                i = int(np.argmax(nonnum))
                raise DropError(path, f"value {df[c].iloc[i]!r} is not a number", row=i + 1, column=c)
    bad = ~np.isnan(body) & ((body != 0) & (body != 1) if binary else (body < 0) | (body > 1))
    if bad.any():
        j, i = (int(k) for k in np.argwhere(bad.T)[0])
        value = float(body[i, j])
        problem = (
            f'value {value!r} is not 0 or 1 (a plain matrix holds 0/1; a sidecar with "values": "scores" '
            "allows scores in [0, 1])"
            if binary
            else f"score {value!r} outside [0, 1]"
        )
        raise DropError(path, problem, row=i + 1, column=data_cols[j])
    return body


def _orientation(path: Path, meta: dict, side: Path | None, id_header: str, row_ids, col_ids) -> tuple[str, str]:
    """(what the rows are, how that was decided): the sidecar's ``rows``, else :func:`detect_orientation`."""
    if "rows" in meta:
        return meta["rows"], f"sidecar {side.name}"
    rows_are, how = detect_orientation(id_header, row_ids, col_ids)
    if rows_are is None:
        raise DropError(
            path,
            f"cannot tell whether rows are models or items: {how}; add a sidecar "
            f'{path.name}.meta.json with {{"rows": "models"}} or {{"rows": "items"}}',
        )
    return rows_are, "detected: " + how


def _generated_ids(prefix: str, n: int, what: str) -> np.ndarray:
    """Ids for a side the file does not name: items ``<prefix>.<i>``, models ``<prefix>.model<i>``, i from 0."""
    tag = "" if what == "items" else "model"
    return np.array([f"{prefix}.{tag}{i}" for i in range(n)], dtype=object)


def read_matrix(path: Path, leaderboard: str, sha: str, df: pd.DataFrame) -> Drop:
    """Read and validate a plain 0/1 matrix (see the module docstring); raises DropError."""
    meta, side = read_sidecar(path)
    df, no_header = _frame(df)
    if len(df) == 0:
        raise DropError(path, "empty file: header but no data rows")
    id_col = _id_column(df, no_header)
    data_cols = [c for c in df.columns if c != id_col]
    if not data_cols:
        raise DropError(path, f"a matrix needs an id column and at least one data column; found {list(df.columns)}")
    if not no_header:
        _raw_header_duplicates(path, df)
    row_ids = _row_ids(path, df, id_col)
    col_ids = None if no_header else np.array([c.strip() for c in data_cols], dtype=object)
    body = _body(path, df, data_cols, meta.get("values", "binary") == "binary")
    rows_are, how = _orientation(
        path,
        meta,
        side,
        "" if no_header else id_col,
        [""] * len(df) if row_ids is None else row_ids,
        [""] * len(data_cols) if col_ids is None else col_ids,
    )
    name_scen, name_split = _name_rule(path)
    try:
        scenario = clean_name(meta["scenario"]) if "scenario" in meta else name_scen
    except ValueError:
        scenario = None
    if scenario is None:
        raise DropError(path, 'no usable scenario: give "scenario" in the sidecar or a file name like mmlu_train.csv')
    split = meta["split"].strip().lower() if "split" in meta else name_split
    sub = meta.get("subscenario", scenario)
    prefix, cols_are = f"{scenario}.{split}" if split else scenario, "items" if rows_are == "models" else "models"
    row_arr = np.asarray(row_ids, dtype=object) if row_ids is not None else _generated_ids(prefix, len(df), rows_are)
    col_arr = col_ids if col_ids is not None else _generated_ids(prefix, len(data_cols), cols_are)
    r, c = np.nonzero(~np.isnan(body))
    models, items = (row_arr[r], col_arr[c]) if rows_are == "models" else (col_arr[c], row_arr[r])
    if len(r) == 0:
        raise DropError(path, "empty matrix: every cell is missing")
    drop = Drop(path=path, leaderboard=leaderboard, format="matrix_" + path.suffix.lower().lstrip("."), sha256=sha)
    drop.responses = pd.DataFrame(
        {
            "leaderboard": leaderboard,
            "scenario": scenario,
            "subscenario": sub,
            "item": items,
            "model": models,
            "score": body[r, c],
        }
    )[RESPONSE_COLUMNS]
    if split is not None:  # items carry nothing else here (no text)
        all_items = col_arr if rows_are == "models" else row_arr
        drop.items = pd.DataFrame(
            {
                "leaderboard": leaderboard,
                "scenario": scenario,
                "subscenario": sub,
                "item": all_items,
                "text": None,
                "split": split,
            }
        )[ITEM_COLUMNS]
    drop.binarize_rules = {scenario: "auto"}
    n_models = len(row_arr) if rows_are == "models" else len(col_arr)
    drop.notes.append(
        f"matrix orientation: rows are {rows_are} ({how}); {n_models} models x "
        f"{len(row_arr) + len(col_arr) - n_models} items, {int(np.isnan(body).sum())} missing cells"
    )
    if no_header:
        drop.notes.append(_headerless_note(meta, side, prefix, [rows_are, cols_are] if row_ids is None else [cols_are]))
    return drop


def _headerless_note(meta: dict, side: Path | None, prefix: str, generated: list[str]) -> str:
    """The note of a matrix read without a header row: why, and the ids generated for ``generated`` (models, items)."""
    why = (
        f'sidecar {side.name} says "header": false'
        if "header" in meta
        else ("detected: its first line holds only numbers in [0, 1], one of them repeated, so it is data")
    )
    scheme = {"items": f"items {prefix}.<i>", "models": f"models {prefix}.model<i>"}
    ids = ", ".join(scheme[w] for w in generated) + ("" if len(generated) == 2 else " (row ids from the first column)")
    return (
        f"no header row ({why}); ids generated, counted from 0: {ids}; add a header row and an id column to name them"
    )
