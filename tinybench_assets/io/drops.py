"""Leaderboard drop readers and validation.

A *drop* is one file in the landing folder, ``<incoming>/<leaderboard>/<file>`` (a file directly in
``<incoming>`` belongs to the leaderboard ``default``). Formats are detected automatically:

- **long table** (``.csv``, ``.parquet``): one row per (model, item) with ``model, scenario, subscenario, item,
  score`` (``subscenario`` optional). Companions with the same loader: an **items table** (``item, scenario`` and
  ``prompt``/``text``/``question``, no ``model``) and a **full-score table** (``model, scenario, full_benchmark_score``).
  CSV: UTF-8 (a byte-order mark is fine), ``,`` or ``;`` (or tab) separated, as the header line shows.
- **RouterDC JSON** (``.json``): a list of ``{"question": str, "scores": {model: score}}``; the
  scenario and the train/test split come from the file name (``mmlu_train.json``, ``gsm8k-test.json``). Read by
  :mod:`tinybench_assets.io.routerdc_drops`.
- **tinyBenchmarks pickle** (``.pkl``, ``.pickle``): read by :mod:`tinybench_assets.io.pickle_drops`, and only
  when the operator trusts pickle drops (``TINYBENCH_TRUST_PICKLE_DROPS``; off by default: unpickling runs code).
- **lm-evaluation-harness samples** (``<leaderboard>/<org__name>/samples_<task>_<timestamp>.jsonl``, the
  harness's ``--output_path`` layout with ``--log_samples``): read by :mod:`tinybench_assets.io.harness_drops`.
- **wide table** and **plain 0/1 matrix** (``.csv``, ``.parquet``): read by :mod:`tinybench_assets.io.wide_drops`
  and :mod:`tinybench_assets.io.matrix_drops`; :func:`~tinybench_assets.io.table_layout.table_layout` decides which
  reader a table goes to.
- **prices file** (``prices.csv`` / ``prices.parquet``): each model's price, read by
  :mod:`tinybench_assets.io.price_drops` (recognised by its name, before any table layout is detected).

Every reader returns a :class:`Drop` or raises :class:`DropError`, whose message names the file,
the row or column, and the problem; both live in :mod:`tinybench_assets.io.drop_types` with the other names every
reader shares, re-exported here. Nothing here touches the store.
"""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path

import numpy as np
import pandas as pd

from tinybench_assets.hashing import file_sha256

from . import harness_drops, matrix_drops, price_drops, routerdc_drops, wide_drops
from .drop_types import (  # re-exported: importers write ``from tinybench_assets.io.drops import Drop, DropError``
    COST_COLUMNS,
    FULL_SCORE_COLUMNS,
    ITEM_COLUMNS,
    NAME_RE,
    RESPONSE_COLUMNS,
    ROUTERDC_NAME_RE,
    SIDECAR_SUFFIX,
    TEXT_COLUMNS,
    Drop,
    DropError,
    clean_name,
    dedupe_responses,
    drop_ids,
    partition_key,
    sidecar_path,
    split_partition_key,
)
from .evaluation_files import FOLDER as EVALUATIONS_FOLDER
from .routerdc_drops import routerdc_scenario  # re-exported, as the drop_types names
from .table_layout import table_layout

__all__ = [
    "COST_COLUMNS",
    "FULL_SCORE_COLUMNS",
    "ITEM_COLUMNS",
    "NAME_RE",
    "PARTIAL_SUFFIXES",
    "RESPONSE_COLUMNS",
    "ROUTERDC_NAME_RE",
    "SIDECAR_SUFFIX",
    "SUFFIXES",
    "TEXT_COLUMNS",
    "Drop",
    "DropError",
    "clean_name",
    "dedupe_responses",
    "drop_sha256",
    "file_sha256",
    "is_drop_candidate",
    "landing_files",
    "leaderboard_of",
    "partition_key",
    "read_drop",
    "routerdc_scenario",
    "sidecar_path",
    "drop_ids",
    "split_partition_key",
]

SUFFIXES = {".csv", ".parquet", ".json", ".jsonl", ".pkl", ".pickle"}


# ---------------------------------------------------------------------- landing files
def leaderboard_of(path: Path, incoming: Path) -> str:
    """The leaderboard of a landing file: its folder's clean name (``default`` directly in the landing folder). The
    path is taken as listed under ``incoming`` (not resolved: a link cannot lead the name elsewhere)."""
    rel = Path(path).relative_to(Path(incoming))
    try:
        return clean_name(rel.parts[0]) if len(rel.parts) > 1 else "default"
    except ValueError:
        raise DropError(
            path, f"folder name {rel.parts[0]!r} gives no leaderboard name (use letters a-z, digits, _ or -)"
        ) from None


#: files in the landing folder that are never drops: partial uploads still being written, notes
PARTIAL_SUFFIXES = {".tmp", ".part", ".partial", ".crdownload", ".swp"}


def is_drop_candidate(path: Path) -> bool:
    """Whether a file in the landing folder is a drop to read (and quarantine when it is bad): every file, whatever its
    suffix (an unknown format is quarantined with a report, not left unnoticed), except hidden files, partial uploads
    (``.tmp``, ``.part``, ...), ``README*`` notes and matrix sidecars (``*.meta.json``, read with their matrix)."""
    name = path.name
    return not (
        name.startswith(".")
        or path.suffix.lower() in PARTIAL_SUFFIXES
        or name.upper().startswith("README")
        or name.lower().endswith(SIDECAR_SUFFIX)
    )


def drop_sha256(path: Path | str) -> str:
    """A drop's id: the sha256 of its bytes, or, for a file with a sidecar, of both (a changed sidecar is a new version);
    for a harness samples file, of its bytes and its model folder's name (the model is not in the file)."""
    sha, side = file_sha256(path), sidecar_path(Path(path))
    if harness_drops.is_harness_file(Path(path)):
        return hashlib.sha256(sha.encode() + b"\0harness-model\0" + Path(path).parent.name.encode()).hexdigest()
    return sha if side is None else hashlib.sha256(sha.encode() + b"\0sidecar\0" + side.read_bytes()).hexdigest()


def landing_files(incoming: Path) -> list[Path]:
    """Drop files under the landing folder (one level of leaderboard folders, and the harness's model folders
    ``<leaderboard>/<org__name>/samples_*.jsonl`` below them), sorted: a task's runs oldest first."""
    incoming = Path(incoming)
    if not incoming.exists():
        return []
    found = [p for p in incoming.glob("*") if p.is_file()] + [p for p in incoming.glob("*/*") if p.is_file()]
    found += [p for p in incoming.glob("*/*/samples_*.jsonl") if p.is_file() and harness_drops.is_harness_file(p)]
    # the evaluations folder holds new models' answers (io/evaluation_files.py), never a leaderboard's drops
    evaluations = incoming / EVALUATIONS_FOLDER
    return sorted(p for p in found if is_drop_candidate(p) and not p.is_relative_to(evaluations))


# ---------------------------------------------------------------------- entry point
def read_drop(
    path: Path | str, leaderboard: str, *, trust_pickles: bool | str | None = None, sample_rows: int | None = None
) -> Drop:
    """Read and validate one drop file; raises DropError (also for a name or value a reader cannot use).

    ``trust_pickles``: whether a pickle may be unpickled (None: ``TINYBENCH_TRUST_PICKLE_DROPS``, default off).
    ``sample_rows``: read only the first rows of a table (a sample, for a quick look; not for ingesting)."""
    path = Path(path)
    if not path.exists():
        raise DropError(path, "file does not exist")
    if path.stat().st_size == 0:
        raise DropError(path, "empty file (0 bytes)")
    suffix, sha = path.suffix.lower(), drop_sha256(path)
    try:
        if suffix in (".csv", ".parquet"):
            drop = _read_table(path, leaderboard, sha, sample_rows)
        elif suffix == ".json":
            drop = routerdc_drops.read_routerdc(path, leaderboard, sha)
        elif suffix == ".jsonl":
            drop = harness_drops.read_harness(path, leaderboard, sha)
        elif suffix in (".pkl", ".pickle"):
            from .pickle_drops import read_tinybenchmarks  # checks the trust setting before it opens the file

            drop = read_tinybenchmarks(path, leaderboard, sha, trusted=trust_pickles)
        else:
            raise DropError(path, f"unknown format: suffix {suffix!r} is none of {sorted(SUFFIXES)}")
    except DropError:
        raise
    except ValueError as exc:  # a name that cleans to nothing, a value pandas cannot convert: the file's problem
        raise DropError(path, f"cannot read the file ({type(exc).__name__}: {str(exc)[:300]})") from exc
    if drop.n_rows == 0:
        raise DropError(path, "empty file: no data rows")
    return drop


# ---------------------------------------------------------------------- long tables
def _csv_header(path: Path) -> tuple[str, list[str]]:
    """(separator, header names) from a CSV's first line: ``,`` unless the line has none and has ``;`` or tabs."""
    with open(path, "rb") as fh:
        line = fh.readline(1 << 20)
    try:
        line = line.decode("utf-8-sig").rstrip("\r\n")
    except UnicodeDecodeError as exc:
        raise DropError(
            path, f"not UTF-8 text (byte {line[exc.start]:#04x} in the header line); save it as UTF-8"
        ) from exc
    sep = (
        ","
        if "," in line or not (";" in line or "\t" in line)
        else (";" if line.count(";") >= line.count("\t") else "\t")
    )
    return sep, next(csv.reader([line], delimiter=sep), [])


def _load_table(path: Path, nrows: int | None = None) -> pd.DataFrame:
    """A .csv (UTF-8 with or without BOM; separator from the header line) or .parquet table; ``nrows``: the first rows only."""
    try:
        if path.suffix.lower() != ".csv":
            if nrows is None:
                return pd.read_parquet(path)
            import pyarrow.parquet as pq

            pf = pq.ParquetFile(path)
            first = next(pf.iter_batches(batch_size=nrows), None)
            return first.to_pandas() if first is not None else pf.schema_arrow.empty_table().to_pandas()
        sep, header = _csv_header(path)
        if matrix_drops.headerless(path, header):  # a matrix whose first line is data: every line is a row
            return pd.read_csv(path, sep=sep, header=None, encoding="utf-8-sig", nrows=nrows)
        if dup := next((h for i, h in enumerate(header) if h.strip() and h in header[:i]), None):
            raise DropError(
                path, "column listed twice in the header" + matrix_drops.header_hint(path, header), column=dup
            )
        return pd.read_csv(path, sep=sep, encoding="utf-8-sig", nrows=nrows)
    except DropError:
        raise
    except pd.errors.EmptyDataError as exc:
        raise DropError(path, "empty file: no header or rows") from exc
    except UnicodeDecodeError as exc:
        raise DropError(path, f"not UTF-8 text (byte {exc.object[exc.start]:#04x}); save it as UTF-8") from exc
    except Exception as exc:  # noqa: BLE001 - any parser failure is an unreadable file
        raise DropError(path, f"unreadable file ({type(exc).__name__}: {str(exc)[:200]})") from exc


def _require(df: pd.DataFrame, path: Path, columns: list[str], what: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise DropError(path, f"missing column(s) {missing} for a {what}; found {list(df.columns)}", column=missing[0])


def _no_nan(df: pd.DataFrame, path: Path, columns: list[str]) -> None:
    for c in columns:
        bad = df[c].isna().to_numpy() | (df[c].astype(str).str.strip() == "").to_numpy()
        if bad.any():
            raise DropError(path, "missing value (NaN/empty) not allowed", row=int(np.argmax(bad)) + 1, column=c)


def _scores(df: pd.DataFrame, path: Path, column: str) -> np.ndarray:
    vals = pd.to_numeric(df[column], errors="coerce").to_numpy(dtype=float)
    nonnum = np.isnan(vals) & df[column].notna().to_numpy()
    if nonnum.any():
        i = int(np.argmax(nonnum))
        raise DropError(path, f"score {df[column].iloc[i]!r} is not a number", row=i + 1, column=column)
    nan = np.isnan(vals)
    if nan.any():
        raise DropError(
            path,
            "score is NaN; missing cells are left out, not written as NaN",
            row=int(np.argmax(nan)) + 1,
            column=column,
        )
    out = (vals < 0) | (vals > 1)
    if out.any():
        i = int(np.argmax(out))
        raise DropError(path, f"score {float(vals[i])!r} outside [0, 1]", row=i + 1, column=column)
    return vals


def _read_table(path: Path, leaderboard: str, sha: str, nrows: int | None = None) -> Drop:
    """A .csv/.parquet drop: a prices file (stem ``prices``), else a long table, wide table or 0/1 matrix, as
    ``table_layout`` decides."""
    df = _load_table(path, nrows)
    if len(df) == 0:
        raise DropError(path, "empty file: header but no data rows")
    if price_drops.is_prices_file(path):
        return price_drops.read_prices(path, leaderboard, sha, df)
    reader = {"wide": wide_drops.read_wide, "matrix": matrix_drops.read_matrix}.get(table_layout(path, df), _read_long)
    return reader(path, leaderboard, sha, df)


def _clean_names(col: pd.Series) -> np.ndarray:
    """clean_name of every value, computed once per distinct value (a million-row table has a few scenarios)."""
    return col.map({v: clean_name(v) for v in col.unique()}).to_numpy()


def _read_long(path: Path, leaderboard: str, sha: str, df: pd.DataFrame) -> Drop:
    cols = set(df.columns)
    fmt = "long_" + path.suffix.lower().lstrip(".")
    drop = Drop(path=path, leaderboard=leaderboard, format=fmt, sha256=sha)
    if "model" in cols and "full_benchmark_score" in cols:
        _require(df, path, ["model", "scenario", "full_benchmark_score"], "full-score table")
        _no_nan(df, path, ["model", "scenario"])
        score = _scores(df, path, "full_benchmark_score")
        split = df["metabench_split"] if "metabench_split" in cols else df.get("split", pd.Series([None] * len(df)))
        drop.full_scores = pd.DataFrame(
            {
                "leaderboard": leaderboard,
                "scenario": _clean_names(df["scenario"]),
                "model": df["model"].astype(str).to_numpy(),
                "full_score": score,
                "split": split.to_numpy(),
            }
        ).drop_duplicates(["scenario", "model"], keep="last")
        return drop
    if "model" not in cols and "item" in cols and cols & set(TEXT_COLUMNS):
        _require(df, path, ["item", "scenario"], "items table")
        text_col = next(c for c in TEXT_COLUMNS if c in cols)
        _no_nan(df, path, ["item", "scenario"])
        dup = df["item"].duplicated(keep=False).to_numpy()
        if dup.any():
            raise DropError(
                path,
                f"item {df['item'].iloc[int(np.argmax(dup))]!r} listed twice",
                row=int(np.argmax(dup)) + 1,
                column="item",
            )
        scen = _clean_names(df["scenario"])
        drop.items = pd.DataFrame(
            {
                "leaderboard": leaderboard,
                "scenario": scen,
                "subscenario": df["subscenario"].astype(str).to_numpy() if "subscenario" in cols else scen,
                "item": df["item"].astype(str).to_numpy(),
                "text": df[text_col].astype(str).to_numpy(),
                "split": df["split"].to_numpy() if "split" in cols else None,
            }
        )
        return drop
    _require(df, path, ["model", "scenario", "item", "score"], "long response table")
    _no_nan(df, path, ["model", "scenario", "item"] + (["subscenario"] if "subscenario" in cols else []))
    score = _scores(df, path, "score")
    scen = _clean_names(df["scenario"])
    resp = pd.DataFrame(
        {
            "leaderboard": leaderboard,
            "scenario": scen,
            "subscenario": df["subscenario"].astype(str).to_numpy() if "subscenario" in cols else scen,
            "item": df["item"].astype(str).to_numpy(),
            "model": df["model"].astype(str).to_numpy(),
            "score": score,
        }
    )
    drop.responses = dedupe_responses(resp, path)
    # an item belongs to one subscenario
    n_sub = drop.responses.groupby(["scenario", "item"])["subscenario"].nunique()
    if (n_sub > 1).any():
        item = n_sub[n_sub > 1].index[0]
        row = int(np.argmax((resp["item"] == item[1]).to_numpy())) + 1
        raise DropError(
            path, f"item {item[1]!r} appears under more than one subscenario", row=row, column="subscenario"
        )
    if text_col := next((c for c in TEXT_COLUMNS if c in cols), None):
        drop.items = resp.assign(text=df[text_col].astype(str).to_numpy(), split=None)[ITEM_COLUMNS].drop_duplicates(
            ["scenario", "item"]
        )
    drop.binarize_rules = {s: "auto" for s in sorted(set(scen))}
    return drop
