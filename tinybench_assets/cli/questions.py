"""The questions ``tinybench route`` routes: a question file read as (id, text) pairs (``read_questions``), or a
question typed on the command line checked (``clean_question``). Bad input is a one-line UsageError naming the file,
the row and the problem."""

from __future__ import annotations

import json
import math
from pathlib import Path

from tinybench_assets.cli.errors import UsageError

# cli: lazy (see cli/__init__.py): subcommands import what they run inside their functions

TEXT_COLUMNS = ("question", "prompt", "text")
ID_COLUMNS = ("id", "item")


def clean_question(text, where: str) -> str:
    """``text`` as given; a UsageError naming ``where`` when it is missing, not a string or blank."""
    if text is None or (isinstance(text, float) and math.isnan(text)):
        raise UsageError(f"{where}: empty question text")
    if not isinstance(text, str):
        raise UsageError(f"{where}: question text is not a string ({type(text).__name__})")
    if not text.strip():
        raise UsageError(f"{where}: empty question text")
    return text


def _from_frame(df, path: Path) -> list[tuple[str, str]]:
    """(id, text) pairs of a table's rows: its first text column, its id column or the 1-based row number."""
    cols = {str(c).strip().lower(): c for c in df.columns}
    text_col = next((cols[c] for c in TEXT_COLUMNS if c in cols), None)
    if text_col is None:
        raise UsageError(
            f"{path}: no text column (need one of {', '.join(TEXT_COLUMNS)}; "
            f"found {', '.join(map(str, df.columns)) or 'none'})"
        )
    id_col = next((cols[c] for c in ID_COLUMNS if c in cols), None)
    out = []
    for i, (text, ident) in enumerate(
        zip(df[text_col].tolist(), df[id_col].tolist() if id_col is not None else [None] * len(df)), start=1
    ):
        text = clean_question(text, f"{path}: row {i}")
        if id_col is not None and (
            ident is None or (isinstance(ident, float) and math.isnan(ident)) or str(ident).strip() == ""
        ):
            raise UsageError(f"{path}: row {i}: empty {id_col}")
        out.append((str(i) if id_col is None else str(ident), text))
    return out


def read_questions(path) -> list[tuple[str, str]]:
    """Questions from a file as (id, text) pairs, in file order.

    ``.csv`` / ``.parquet``: a text column ``question``, ``prompt`` or ``text`` (the first present), an optional
    ``id`` / ``item`` column (else the 1-based row number). ``.jsonl`` / ``.ndjson`` / ``.json``: JSON lines
    (or one JSON list), each a string or an object with the same columns. ``.txt``: one question per line
    (blank lines skipped; id = line number). Raises a ``ValueError`` naming the file, the row and the problem.
    """
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    suffix = path.suffix.lower()
    try:
        if suffix == ".txt":
            lines = path.read_text(encoding="utf-8").splitlines()
            out = [(str(i), ln) for i, ln in enumerate(lines, start=1) if ln.strip()]
        elif suffix in (".csv", ".parquet"):
            try:
                df = pd.read_csv(path, dtype=str, keep_default_na=False) if suffix == ".csv" else pd.read_parquet(path)
            except pd.errors.EmptyDataError:
                raise UsageError(f"{path}: empty file") from None
            out = _from_frame(df, path)
        elif suffix in (".jsonl", ".ndjson", ".json"):
            raw = path.read_text(encoding="utf-8")
            if suffix == ".json" and raw.lstrip().startswith("["):
                recs = json.loads(raw)
            else:
                recs = []
                for i, ln in enumerate(raw.splitlines(), start=1):
                    if ln.strip():
                        try:
                            recs.append(json.loads(ln))
                        except json.JSONDecodeError as e:
                            raise UsageError(f"{path}: line {i}: not JSON ({e.msg})") from None
            if all(isinstance(r, str) for r in recs):
                out = [(str(i), clean_question(r, f"{path}: row {i}")) for i, r in enumerate(recs, start=1)]
            elif all(isinstance(r, dict) for r in recs):
                out = _from_frame(pd.DataFrame.from_records(recs), path)
            else:
                raise UsageError(
                    f"{path}: each JSON row must be a string or an object with a {'/'.join(TEXT_COLUMNS)} field"
                )
        else:
            raise UsageError(
                f"{path}: unsupported file type {suffix or '(none)'!r} (use .csv, .parquet, .jsonl/.json or .txt)"
            )
    except UsageError:
        raise
    except Exception as e:  # OS, decoding, pandas / pyarrow / JSON parse errors
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise UsageError(f"{path}: cannot read: {msg}") from None
    if not out:
        raise UsageError(f"{path}: no questions in the file")
    return out
