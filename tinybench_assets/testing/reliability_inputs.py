"""Generated inputs for the fault, load and bad-input tests, shared with ``benchmarks/reliability.py`` through
``testing.reliability_data``: 2PL-like long tables, a pickle whose unpickling runs code, and a 50-file landing drop
with good, duplicate, changed and malformed files and a million-row table (:func:`write_fifty_file_drop`, with what
each file should give in :class:`FiftyFileDrop`). Nothing here writes outside the folders given."""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd


# ---------------------------------------------------------------------- tables
def long_table(
    n_models: int,
    n_items: int,
    scenario: str = "quiz",
    seed: int = 0,
    model_prefix: str = "m",
    item_prefix: str = "q",
    subscenarios: int = 3,
) -> pd.DataFrame:
    """A 2PL-like long table: n_models x n_items rows of model, scenario, subscenario, item, score (0/1)."""
    rng = np.random.default_rng(seed)
    theta, b = rng.normal(size=n_models), rng.normal(size=n_items)
    y = (rng.random((n_models, n_items)) < 1 / (1 + np.exp(-(theta[:, None] - b[None, :])))).astype(float)
    items = np.array([f"{item_prefix}{j}" for j in range(n_items)], dtype=object)
    return pd.DataFrame(
        {
            "model": np.repeat(np.array([f"{model_prefix}{i}" for i in range(n_models)], dtype=object), n_items),
            "scenario": scenario,
            "subscenario": np.tile(
                np.array([f"{scenario}_s{j % subscenarios}" for j in range(n_items)], dtype=object), n_models
            ),
            "item": np.tile(items, n_models),
            "score": y.reshape(-1),
        }
    )


def write_table(df: pd.DataFrame, path: Path, **csv_kw) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        df.to_parquet(path, index=False)
    else:
        df.to_csv(path, index=False, **csv_kw)
    return path


class Hostile:
    """Unpickling this runs code: it creates ``marker``."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('code from a pickle ran')",))


def hostile_pickle(path: Path, marker: Path) -> Path:
    """A file laid out like a tinyBenchmarks pickle whose unpickling would create ``marker``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(
        pickle.dumps({"models": ["a", "b"], "data": {"harness_arc_challenge_25": {"correctness": Hostile(marker)}}})
    )
    return path


# ---------------------------------------------------------------------- the 50-file drop
@dataclass
class FiftyFileDrop:
    """What the generated drop should give: rows landed per good file, duplicates skipped, bad files' errors."""

    good: dict[str, int] = field(default_factory=dict)  # rel path -> response/item/full-score rows it lands
    duplicates: list[str] = field(default_factory=list)  # exact copies of good files: skipped, nothing stored twice
    bad: dict[str, str] = field(default_factory=dict)  # rel path -> a piece of its quarantine message
    changed: list[str] = field(default_factory=list)  # paths whose first version landed before, now a new version
    big: str = ""  # the million-row table
    partition_rows: dict[str, int] = field(default_factory=dict)  # partition -> responses rows after consolidation

    @property
    def n_files(self) -> int:
        return len(self.good) + len(self.duplicates) + len(self.bad)


def write_first_versions(incoming: Path) -> list[str]:
    """The first versions of the files the 50-file drop changes (ingest these first)."""
    out = []
    for i in range(3):
        rel = f"bench/changed_{i}.csv"
        write_table(long_table(6, 20, scenario="evolving", seed=100 + i, model_prefix=f"c{i}_"), incoming / rel)
        out.append(rel)
    return out


@dataclass
class _DropWriter:
    """Writes the 50-file drop's files under ``incoming`` and records in ``exp`` what each should give."""

    incoming: Path
    exp: FiftyFileDrop
    rows: dict[str, pd.DataFrame] = field(default_factory=dict)  # partition -> responses expected (latest drop wins)

    def good(self, rel: str, df: pd.DataFrame, board: str = "bench", **kw) -> None:
        write_table(df, self.incoming / rel, **kw)
        self.exp.good[rel] = len(df)
        if "score" in df:
            key = f"{board}.{df['scenario'].iloc[0]}"
            self.rows[key] = pd.concat([self.rows.get(key), df[["model", "item"]]]).drop_duplicates()

    def bad(self, rel: str, content: bytes, expected: str) -> None:
        (self.incoming / rel).parent.mkdir(parents=True, exist_ok=True)
        (self.incoming / rel).write_bytes(content)
        self.exp.bad[rel] = expected


def _write_long_tables(w: _DropWriter) -> None:
    """20 good long tables, 4 exact duplicates of the first ones and 3 new versions of write_first_versions' files."""
    for i in range(20):
        suffix = "parquet" if i % 2 else "csv"
        w.good(f"bench/good_{i:02d}.{suffix}", long_table(8, 30, scenario=f"s{i % 5}", seed=i, model_prefix=f"g{i}_"))
    for i in range(4):
        src = w.incoming / f"bench/good_{i:02d}.{'parquet' if i % 2 else 'csv'}"
        rel = f"bench/zz copy of good_{i:02d}{src.suffix}"  # sorts after its original: the copy is the one skipped
        (w.incoming / rel).write_bytes(src.read_bytes())
        w.exp.duplicates.append(rel)
    for i in range(3):  # new versions of write_first_versions' files: other models, so the old rows must go
        rel = f"bench/changed_{i}.csv"
        w.good(rel, long_table(5, 20, scenario="evolving", seed=200 + i, model_prefix=f"c{i}_v2_"))
        w.exp.changed.append(rel)


def _write_other_shapes(w: _DropWriter) -> None:
    """8 good files of other shapes: BOM, ';' and tab separators, a name with spaces and accents, a folder name with
    accents, an items and a full-score table, RouterDC JSON."""
    base = long_table(4, 10, scenario="formats", seed=7, model_prefix="f")
    w.good("bench/bom.csv", base.assign(model=base.model + "_bom"), encoding="utf-8-sig")
    w.good("bench/semicolon.csv", base.assign(model=base.model + "_semi"), sep=";")
    w.good("bench/tabs.csv", base.assign(model=base.model + "_tab"), sep="\t")
    w.good("bench/résultats été 2024.csv", base.assign(model=base.model + "_été"))
    w.good("Bénch Ü/quiz.csv", long_table(5, 12, scenario="quiz", seed=8), board="b_nch")
    items = pd.DataFrame(
        {"item": [f"q{j}" for j in range(30)], "scenario": "s0", "prompt": [f"question {j}?" for j in range(30)]}
    )
    w.good("bench/s0.items.csv", items)
    w.good(
        "bench/s0.full_scores.csv",
        pd.DataFrame(
            {"model": [f"g0_{i}" for i in range(8)], "scenario": "s0", "full_benchmark_score": np.linspace(0.2, 0.9, 8)}
        ),
    )
    recs = [{"question": f"q{j}", "scores": {"r1": float(j % 2), "r2": 1.0}} for j in range(25)]
    (w.incoming / "bench" / "trivia_train.json").write_text(json.dumps(recs))
    w.exp.good["bench/trivia_train.json"] = 50 + 25  # responses + items
    w.rows["bench.trivia"] = pd.DataFrame(
        {"model": ["r1", "r2"] * 25, "item": [f"trivia.train.{j // 2}" for j in range(50)]}
    )


def _write_malformed(w: _DropWriter, marker: Path) -> None:
    """14 malformed files, each with a piece of the quarantine message it should get (the truncated parquet is cut
    from ``bench/good_01.parquet``, so the long tables come first)."""
    small = long_table(3, 6, scenario="broken", seed=9)
    csv = lambda df, **kw: df.to_csv(index=False, **kw).encode()  # noqa: E731
    w.bad("bench/missing_score.csv", csv(small.drop(columns=["score"])), "missing column(s) ['score']")
    w.bad("bench/out_of_range.csv", csv(small.assign(score=[0.0, 1.5] + [1.0] * 16)), "outside [0, 1]")
    w.bad("bench/nan.csv", csv(small.assign(score=[np.nan] + [1.0] * 17)), "score is NaN")
    w.bad("bench/text_score.csv", csv(small.assign(score=["high"] + ["1"] * 17)), "score 'high' is not a number")
    w.bad(
        "bench/conflict.csv",
        csv(pd.concat([small, small.head(1).assign(score=1 - small.score.iloc[0])])),
        "conflicting duplicate rows",
    )
    w.bad("bench/empty.csv", b"", "empty file (0 bytes)")
    w.bad("bench/header_only.csv", b"model,scenario,subscenario,item,score\n", "header but no data rows")
    pq_bytes = (w.incoming / "bench/good_01.parquet").read_bytes()
    w.bad("bench/truncated.parquet", pq_bytes[: len(pq_bytes) // 2], "unreadable file")
    w.bad("bench/latin1.csv", "model,scenario,item,score\nmodèle,broken,q1,1\n".encode("latin-1"), "not UTF-8 text")
    w.bad("bench/decimal_comma.csv", b"model;scenario;item;score\nm1;broken;q1;0,5\n", "score '0,5' is not a number")
    w.bad("bench/no_scenario_name.csv", csv(small.assign(scenario="???")), "empty name from '???'")
    w.bad("bench/scores.xlsx", b"PK\x03\x04 not a spreadsheet reader", "unknown format")
    w.bad("bench/broken_train.json", b'[{"question": ', "unreadable JSON")
    hostile = hostile_pickle(w.incoming / "bench" / "lb.pickle", marker)
    w.exp.bad[str(hostile.relative_to(w.incoming))] = "TINYBENCH_TRUST_PICKLE_DROPS"


def write_fifty_file_drop(incoming: Path, big_rows: int = 1_000_000, marker: Path | None = None) -> FiftyFileDrop:
    """Fill ``incoming`` with 50 files (after :func:`write_first_versions` was ingested): 20 good long tables, 4 exact
    duplicates, 3 changed versions, 8 more good ones of other shapes (BOM, ';' and tab separators, a name with spaces
    and accents, a folder name with accents, items and full-score tables, RouterDC JSON), 14 malformed ones and one
    valid long table of ``big_rows`` rows."""
    w = _DropWriter(incoming, FiftyFileDrop())
    _write_long_tables(w)
    _write_other_shapes(w)
    _write_malformed(w, marker or incoming.parent / "PICKLE_RAN")
    w.exp.big = "bench/big_long_table.csv"
    n_models = 1000
    big = long_table(n_models, big_rows // n_models, scenario="huge", seed=11, model_prefix="big_")
    w.good(w.exp.big, big)
    w.exp.partition_rows = {k: len(v) for k, v in w.rows.items()}
    assert w.exp.n_files == 50, w.exp.n_files
    return w.exp
