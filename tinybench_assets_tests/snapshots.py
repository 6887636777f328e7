"""Stored rows of a DuckDB file without run times, sorted, so that two runs can be compared exactly (issue 14's
fault and re-materialization tests)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandas as pd

#: the columns a table names its partition by (scenario tables: partition_key; leaderboard result tables: either)
PARTITION_COLUMNS = ("partition_key", "leaderboard")


def is_run_time(name: str) -> bool:
    """A column or field that records when or how long (updated_at, created, seconds, fit_time, ...)."""
    return name.endswith("_at") or name == "created" or "seconds" in name or "time" in name


def _timeless(df: pd.DataFrame) -> pd.DataFrame:
    keep = [c for c in df.columns if not is_run_time(c) and not pd.api.types.is_datetime64_any_dtype(df[c])]
    df = df[keep]
    sortable = [c for c in df.columns if df[c].map(lambda v: isinstance(v, (str, int, float, bool)) or v is None).all()]
    return df.sort_values(sortable).reset_index(drop=True) if sortable and len(df) else df.reset_index(drop=True)


def stored_rows(db: str | Path, key: str | None = None) -> dict[str, pd.DataFrame]:
    """Every table's rows (``key``: only the rows whose partition column is ``key``, tables without one left out),
    run times left out, sorted. Opens the file read-only, so it fails if the file does not open cleanly."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        out = {}
        for (table,) in con.execute("SELECT table_name FROM information_schema.tables ORDER BY 1").fetchall():
            cols = [r[0] for r in con.execute(f'DESCRIBE "{table}"').fetchall()]
            if key is None:
                out[table] = _timeless(con.execute(f'SELECT * FROM "{table}"').df())
                continue
            part = next((c for c in PARTITION_COLUMNS if c in cols), None)
            if part is not None:
                out[table] = _timeless(con.execute(f'SELECT * FROM "{table}" WHERE "{part}" = ?', [key]).df())
        return out
    finally:
        con.close()


def differences(a: dict[str, pd.DataFrame], b: dict[str, pd.DataFrame]) -> list[str]:
    """The tables whose rows differ between two snapshots (a table in only one of them counts); empty: identical."""
    out = []
    for table in sorted(set(a) | set(b)):
        if table not in a or table not in b:
            out.append(table)
            continue
        try:
            pd.testing.assert_frame_equal(a[table], b[table], check_exact=True, obj=table)
        except AssertionError:
            out.append(table)
    return out


def explain(a: dict[str, pd.DataFrame], b: dict[str, pd.DataFrame], table: str) -> str:
    """pandas' description of how one table differs (for assertion messages)."""
    try:
        pd.testing.assert_frame_equal(a[table], b[table], check_exact=True, obj=table)
    except (AssertionError, KeyError) as e:
        return str(e)[:2000]
    return "identical"
