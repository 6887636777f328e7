"""Cell and row helpers of the wide-table reader (``io.wide_drops``): present / numeric cells, one question listed in
several rows (merged, collapsed, or its conflicting rows rejected), and the rejected rows' share limit.

**Rows that share a question id** (scenario + id) are one question. The group's *kept row* is the row that scores the
most models (the first of them on a tie). Every other row of the group, in file order, is compared with the kept row
as merged so far:

- it *conflicts* when its text, split or subscenario differs from the kept row's, or when it gives a score or cost
  the kept row also has a different value. A conflicting row is rejected whole: it is left out and listed in
  ``Drop.rejected`` with the reason (RouterBench's ARC-Challenge files hold such rows: one model's score under the id
  of a complete row, with the question twice in the prompt);
- otherwise it merges into the kept row: identical rows collapse to one, and a question split over rows that score
  disjoint sets of models (RouterBench: one row with one model's score, another with the rest) gets each model's
  score and cost from the row that has it; a response text (``io.wide_responses``) the kept row lacks comes from the
  first merged row that has one.

Rows left with no score at all are skipped. A file loses rows only while they are at most a set share of its data rows
(:func:`max_rejected_share`: ``TINYBENCH_MAX_REJECTED_SHARE``, default 5 %); above it the whole file is quarantined
with an error naming the count and the first conflicting row.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from .drop_types import DropError

REJECTED_SHARE_ENV = "TINYBENCH_MAX_REJECTED_SHARE"
DEFAULT_MAX_REJECTED_SHARE = 0.05


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


def max_rejected_share() -> float:
    """The largest share of a file's data rows that may be rejected while the rest lands: ``TINYBENCH_MAX_REJECTED_SHARE``
    as a fraction (``0.05``) or a percentage (``5%``), default 5 %; ``0`` quarantines a file with any conflicting row.
    An unusable value raises RuntimeError (a setting to fix, not a file to quarantine)."""
    raw = os.environ.get(REJECTED_SHARE_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_REJECTED_SHARE
    try:
        share = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        share = float("nan")
    if not 0 <= share <= 1:
        raise RuntimeError(f"{REJECTED_SHARE_ENV}={raw!r}: expected a fraction in [0, 1] (0.05) or a percentage (5%)")
    return share


# ---------------------------------------------------------------------- one question in several rows
class _Group:
    """One question id's rows: the kept row, its merged values (``num``: column -> float array, updated in place)."""

    def __init__(self, df: pd.DataFrame, kept: int, num: dict, same_cols: list[str], where: str, text_cols=()):
        self.df, self.kept, self.num, self.same_cols, self.where = df, kept, num, same_cols, where
        self.text_cols = text_cols

    def conflict(self, pos: int, id_col: str) -> tuple[str, str] | None:
        """(column, reason) when row ``pos`` disagrees with the kept row, else None."""
        for col in self.same_cols:
            if str(self.df[col].iat[pos]).strip() != str(self.df[col].iat[self.kept]).strip():
                return id_col, f"{self.where} listed twice with different {col!r} (kept: row {self.kept + 1})"
        for col, vals in self.num.items():
            a, b = float(vals[self.kept]), float(vals[pos])
            if not np.isnan(a) and not np.isnan(b) and a != b:
                return col, (
                    f"{self.where}: {col!r} scored twice with different values ({a!r}, {b!r}) "
                    f"(kept: row {self.kept + 1})"
                )
        return None

    def merge(self, pos: int) -> bool:
        """Fill the kept row's empty cells from row ``pos``; whether both rows had the same cells filled."""
        same = True
        for col, vals in self.num.items():
            if np.isnan(vals[pos]) != np.isnan(vals[self.kept]):
                same = False
                if np.isnan(vals[self.kept]):
                    vals[self.kept] = vals[pos]
                    self.df.iat[self.kept, self.df.columns.get_loc(col)] = vals[pos]
        for col in self.text_cols:
            j = self.df.columns.get_loc(col)
            cells = self.df.iloc[[self.kept, pos], j]
            if not _present(cells)[0] and _present(cells)[1]:
                self.df.iat[self.kept, j] = cells.iat[1]
        return same


def _groups(key: pd.Series) -> list[np.ndarray]:
    """Positions of the rows of each question id listed more than once."""
    groups: dict[str, list[int]] = {}
    for pos in np.flatnonzero(key.duplicated(keep=False).to_numpy()):  # a dict, not pd.unique: pandas' string
        groups.setdefault(key.iloc[pos], []).append(int(pos))  # hashtable stops at a NUL in the key
    return [np.asarray(rows) for rows in groups.values()]


def merge_duplicate_rows(
    df: pd.DataFrame,
    key: pd.Series,
    items,
    models: list[str],
    cost_of: dict,
    same_cols,
    path: Path,
    id_col: str,
    text_cols=(),
) -> tuple[np.ndarray, list[tuple[int, str, str]], list[str]]:
    """Merge or reject the rows that share a question id (``key``: scenario + id), see the module docstring; skip rows
    with no score; ``text_cols``: response text columns, filled in the kept row from merged rows. Returns (rows to keep, rejected rows as (position, column, reason), notes). ``df``'s kept row of
    each merged group is updated in place (row numbers in later errors stay the file's)."""
    keep = np.ones(len(df), dtype=bool)
    rejected: list[tuple[int, str, str]] = []
    collapsed, merged = [], []
    value_cols = [*models, *(cost_of[m] for m in models if m in cost_of)]
    num = {col: _numeric(df[col])[0] for col in value_cols}
    n_scored = np.column_stack([~np.isnan(num[m]) for m in models]).sum(axis=1)
    for rows in _groups(key):
        kept = int(rows[np.argmax(n_scored[rows])])
        where = f"question id {items[kept]!r} (rows {', '.join(str(r + 1) for r in rows[:5])})"
        group = _Group(df, kept, num, [c for c in same_cols if c is not None], where, text_cols)
        identical, joined = True, 0
        for pos in (int(r) for r in rows if r != kept):
            keep[pos] = False
            if found := group.conflict(pos, id_col):
                rejected.append((pos, *found))
            else:
                identical &= group.merge(pos)
                joined += 1
        if joined:
            (collapsed if identical else merged).append(str(items[kept]))
    notes = []
    if collapsed:
        notes.append(
            f"{len(collapsed)} question id(s) listed in identical rows, collapsed to one: {', '.join(collapsed[:8])}"
        )
    if merged:
        notes.append(
            f"{len(merged)} question id(s) split over rows scoring different models, merged (each model's "
            f"score and cost from the row that has it): {', '.join(merged[:8])}"
        )
    unscored = keep & ~np.column_stack([~np.isnan(num[m]) for m in models]).any(axis=1)
    if unscored.any():
        keep &= ~unscored
        notes.append(
            f"{int(unscored.sum())} row(s) with no score at all skipped: rows "
            f"{', '.join(str(r + 1) for r in np.flatnonzero(unscored)[:10])}"
        )
    return keep, sorted(rejected), notes


# ---------------------------------------------------------------------- rejected rows
def rejected_rows(df: pd.DataFrame, rejected: list[tuple[int, str, str]], path: Path) -> tuple[pd.DataFrame, list[str]]:
    """``Drop.rejected`` (``row``, ``reason``, then the row's cells as read) and a note for the rejected rows; raises
    DropError, naming the count and the first conflicting row, when they are more than :func:`max_rejected_share` of
    the file's data rows."""
    if not rejected:
        return pd.DataFrame(columns=["row", "reason"]), []
    limit, n = max_rejected_share(), len(df)
    pos, column, reason = rejected[0]
    if len(rejected) / n > limit:
        raise DropError(
            path,
            f"{reason}; {len(rejected)} of {n} rows ({len(rejected) / n:.1%}) conflict with the kept "
            f"row of their question id, more than the {limit:.1%} a file may lose ({REJECTED_SHARE_ENV}): "
            "fix or remove the conflicting rows (this is the first)",
            row=pos + 1,
            column=column,
        )
    positions = [p for p, _, _ in rejected]
    meta = pd.DataFrame({"row": [p + 1 for p in positions], "reason": [r for _, _, r in rejected]})
    frame = pd.concat([meta, df.iloc[positions].reset_index(drop=True)], axis=1)
    note = (
        f"{len(rejected)} of {n} row(s) rejected: they conflict with the kept row of their question id; the ingest "
        f"writes them, with the reason per row, to <quarantine>/<leaderboard>/{path.name}.rejected.csv: rows "
        f"{', '.join(str(p + 1) for p in positions[:10])}"
    )
    return frame, [note]


def repeated_text_note(text: pd.Series, scenario, keep: np.ndarray) -> list[str]:
    """A note when rows under different ids repeat an earlier row's question text (RouteLLM's MMLU: 105 rows): they are
    kept as distinct questions, each with its own answers, and the note says so."""
    frame = pd.DataFrame({"scenario": np.asarray(scenario, dtype=object), "text": text.astype(str).to_numpy()})[keep]
    repeats = frame.duplicated(keep="first")
    if not repeats.any():
        return []
    rows = np.flatnonzero(keep)[repeats.to_numpy()] + 1
    return [
        f"{int(repeats.sum())} row(s) repeat an earlier row's question text under another id; kept as distinct "
        f"questions (each with its own answers): rows {', '.join(map(str, rows[:10]))}"
        + (" ..." if len(rows) > 10 else "")
    ]
