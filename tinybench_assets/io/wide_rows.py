"""Cell and row helpers of the wide-table reader (``io.wide_drops``): present / numeric cells, and one question
listed in several rows (merged, collapsed or an error naming the rows)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .drop_types import DropError


def _present(s: pd.Series) -> np.ndarray:
    """Non-empty cells: not NaN/None and, for text, not blank."""
    mask = s.notna().to_numpy()
    if s.dtype == object:
        mask &= (s.astype(str).str.strip() != "").to_numpy()
    return mask


def _numeric(s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(values as float, NaN where empty or unparseable; mask of non-empty cells that are not numbers)."""
    if s.dtype == bool:
        s = s.astype(float)
    vals = pd.to_numeric(s, errors="coerce").to_numpy(dtype=float)
    return vals, np.isnan(vals) & _present(s)



def merge_duplicate_rows(df: pd.DataFrame, key: pd.Series, items, models: list[str], cost_of: dict, same_cols, path: Path,
                         id_col: str) -> tuple[np.ndarray, list[str]]:
    """Rows that share a question id (``key``: scenario + id) are one question: identical rows collapse to one; rows
    with the same text (and split, subscenario) that score disjoint sets of models are one question split over rows
    (RouterBench: one row with one model's score, another with the rest) and merge into the first, each model's score
    and cost from the row that has it. A model scored twice with different values, or different texts under one id,
    stays a DropError naming the rows. Rows left with no score at all are skipped. Returns (rows to keep, notes);
    ``df``'s first row of each merged group is updated in place (row numbers in later errors stay the file's)."""
    n = len(df)
    keep = np.ones(n, dtype=bool)
    notes, collapsed, merged = [], [], []
    dup = key.duplicated(keep=False).to_numpy()
    value_cols = [*models, *(cost_of[m] for m in models if m in cost_of)]
    groups: dict[str, list[int]] = {}
    for pos in np.flatnonzero(dup):  # a dict, not pd.unique: pandas' string hashtable stops at a NUL in the key
        groups.setdefault(key.iloc[pos], []).append(int(pos))
    for rows in map(np.asarray, groups.values()):
        where = f"question id {items[rows[0]]!r} (rows {', '.join(str(r + 1) for r in rows[:5])})"
        for col in [c for c in same_cols if c is not None]:
            vals = {str(v).strip() for v in df[col].iloc[rows]}
            if len(vals) > 1:
                raise DropError(path, f"{where} listed twice with different {col!r}", row=int(rows[1]) + 1, column=id_col)
        first, identical = rows[0], True
        for col in value_cols:
            vals, _ = _numeric(df[col].iloc[rows])
            present = ~np.isnan(vals)
            if present.any() and np.unique(vals[present]).size > 1:
                raise DropError(path, f"{where}: {col!r} scored twice with different values "
                                      f"({', '.join(repr(float(v)) for v in vals[present][:3])})",
                                row=int(rows[np.flatnonzero(present)[1]]) + 1, column=col)
            identical &= bool(present.all() or not present.any())
            if present.any():
                df.iat[first, df.columns.get_loc(col)] = vals[present][0]
        keep[rows[1:]] = False
        (collapsed if identical else merged).append(str(items[first]))
    if collapsed:
        notes.append(f"{len(collapsed)} question id(s) listed in identical rows, collapsed to one: {', '.join(collapsed[:8])}")
    if merged:
        notes.append(f"{len(merged)} question id(s) split over rows scoring different models, merged (each model's "
                     f"score and cost from the row that has it): {', '.join(merged[:8])}")
    unscored = keep & ~np.column_stack([~np.isnan(_numeric(df[m])[0]) for m in models]).any(axis=1)
    if unscored.any():
        keep &= ~unscored
        notes.append(f"{int(unscored.sum())} row(s) with no score at all skipped: rows "
                     f"{', '.join(str(r + 1) for r in np.flatnonzero(unscored)[:10])}")
    return keep, notes
