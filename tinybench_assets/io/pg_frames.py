"""DataFrames in and out of PostgreSQL as DuckDB moves them: the column types a frame gets, its rows as COPY takes
them, and a result's rows back into a DataFrame with the dtypes DuckDB's ``.df()`` gives.

DuckDB scans a pandas frame in place (NaN in a float column reads as NULL) and answers typed columns (INTEGER ->
int32, a NULL among them -> Int32, DOUBLE -> float64 with NaN for NULL, TIMESTAMP -> datetime64[us], a list ->
numpy arrays). ``io.pg_connection.PostgresDB`` goes through these functions so the assets see the same frames on
either engine. Only pandas / numpy here.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

# PostgreSQL type OIDs (pg_type.oid) of the types tinybench's tables use
BOOL, INT8, INT2, INT4, TEXT, FLOAT4, FLOAT8, VARCHAR, BPCHAR = 16, 20, 21, 23, 25, 700, 701, 1043, 1042
TIMESTAMP, TIMESTAMPTZ, NUMERIC = 1114, 1184, 1700
FLOAT4_ARRAY, FLOAT8_ARRAY, INT4_ARRAY, INT8_ARRAY = 1021, 1022, 1007, 1016
INT_DTYPES = {INT2: ("int16", "Int16"), INT4: ("int32", "Int32"), INT8: ("int64", "Int64")}
ARRAY_DTYPES = {FLOAT4_ARRAY: np.float32, FLOAT8_ARRAY: np.float64, INT4_ARRAY: np.int32, INT8_ARRAY: np.int64}

_KIND_TYPES = {"f": "DOUBLE PRECISION", "b": "BOOLEAN", "M": "TIMESTAMP"}
_INT_TYPES = {1: "SMALLINT", 2: "SMALLINT", 4: "INTEGER", 8: "BIGINT"}


def sql_type(col: pd.Series) -> str:
    """The PostgreSQL type of a frame column, after the type DuckDB gives the same column (UTINYINT -> SMALLINT,
    a list or array of floats -> DOUBLE PRECISION[] (REAL[] for float32), text or all NULL -> VARCHAR)."""
    dtype = col.dtype
    if isinstance(dtype, pd.DatetimeTZDtype):
        return "TIMESTAMPTZ"
    kind = getattr(dtype, "kind", "O")
    if kind in ("i", "u"):
        size = dtype.itemsize * (2 if kind == "u" else 1)  # an unsigned type needs the next signed size
        return _INT_TYPES.get(min(size, 8), "BIGINT")
    if kind == "f":
        return "REAL" if dtype.itemsize == 4 else "DOUBLE PRECISION"
    if kind in _KIND_TYPES:
        return _KIND_TYPES[kind]
    first = next(
        (v for v in col if v is not None and not (isinstance(v, float) and np.isnan(v)) and v is not pd.NA), None
    )
    if isinstance(first, (bool, np.bool_)):
        return "BOOLEAN"
    if isinstance(first, (int, np.integer)):
        return "BIGINT"
    if isinstance(first, (float, np.floating)):
        return "DOUBLE PRECISION"
    if isinstance(first, (pd.Timestamp, np.datetime64)):
        return "TIMESTAMP"
    if isinstance(first, (list, tuple, np.ndarray)):
        arr = np.asarray(first)
        if arr.dtype.kind in ("i", "u"):
            return "BIGINT[]"
        return "REAL[]" if arr.dtype == np.float32 else "DOUBLE PRECISION[]"
    return "VARCHAR"


def column_values(col: pd.Series) -> list:
    """The column as plain Python values for COPY: NULL (None) for NaN / NaT / NA, lists for arrays."""
    kind = getattr(col.dtype, "kind", "O")
    if kind == "M":
        return [None if pd.isna(v) else v.to_pydatetime() for v in col]
    if kind in ("f", "i", "u", "b") and not col.isna().any():
        return col.tolist()
    out = []
    for v in col.tolist():
        if isinstance(v, np.ndarray):
            out.append(v.tolist())
        elif isinstance(v, (list, tuple)):
            out.append([x.item() if isinstance(x, np.generic) else x for x in v])
        elif v is None or v is pd.NA or v is pd.NaT or (isinstance(v, float) and np.isnan(v)):
            out.append(None)
        elif isinstance(v, pd.Timestamp):
            out.append(v.to_pydatetime())
        elif isinstance(v, np.generic):
            out.append(v.item())
        else:
            out.append(v)
    return out


def frame_rows(df: pd.DataFrame, as_int: set[str] | frozenset = frozenset()) -> list[tuple]:
    """The frame's rows as tuples of plain Python values (``column_values`` per column); the float columns named in
    ``as_int`` (going to an integer column) as integers, as DuckDB's cast does."""
    cols = []
    for c in df.columns:
        values = column_values(df[c])
        cols.append([None if v is None else int(v) for v in values] if c in as_int else values)
    return list(zip(*cols)) if cols else []


def result_frame(rows: list[tuple], description) -> pd.DataFrame:
    """A DataFrame of a PostgreSQL result (psycopg's ``cursor.description``) with DuckDB's ``.df()`` dtypes."""
    names = [d.name for d in description or []]
    cols = list(zip(*rows)) if rows else [()] * len(names)
    data = {}
    for name, d, values in zip(names, description or [], cols):
        data[name] = _column(list(values), d.type_code)
    return pd.DataFrame(data, columns=names)


def _column(values: list, oid: int) -> pd.Series:
    has_null = any(v is None for v in values)
    if oid in (FLOAT8, NUMERIC):
        return pd.Series([np.nan if v is None else float(v) for v in values], dtype="float64")
    if oid == FLOAT4:
        return pd.Series([np.nan if v is None else float(v) for v in values], dtype="float32")
    if oid in INT_DTYPES:
        plain, nullable = INT_DTYPES[oid]
        return pd.Series(values, dtype=nullable if has_null else plain)
    if oid == BOOL:
        return pd.Series(values, dtype="boolean" if has_null else "bool")
    if oid in (TIMESTAMP, TIMESTAMPTZ):
        return pd.Series(pd.to_datetime(pd.Series(values, dtype="object"))).astype(
            "datetime64[us, UTC]" if oid == TIMESTAMPTZ else "datetime64[us]"
        )
    if oid in ARRAY_DTYPES:
        return pd.Series(
            [None if v is None else np.asarray(v, dtype=ARRAY_DTYPES[oid]) for v in values], dtype="object"
        )
    return pd.Series(values, dtype="object")
