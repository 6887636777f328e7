"""Generated inputs and process helpers for the fault, load and bad-input tests (issue 14), shared with
``benchmarks/reliability.py``: a 50-file landing drop with good, duplicate, changed and malformed files and a
million-row table; a child process that ingests and can be SIGKILLed at a chosen point of the DuckDB write; a
`tinybench run-all` in a subprocess on a small generated project. Nothing here writes outside the folders given."""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from tinybench_assets.paths import PROJECT_ROOT as ROOT


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


def write_fifty_file_drop(incoming: Path, big_rows: int = 1_000_000, marker: Path | None = None) -> FiftyFileDrop:
    """Fill ``incoming`` with 50 files (after :func:`write_first_versions` was ingested): 20 good long tables, 4 exact
    duplicates, 3 changed versions, 8 more good ones of other shapes (BOM, ';' and tab separators, a name with spaces
    and accents, a folder name with accents, items and full-score tables, RouterDC JSON), 14 malformed ones and one
    valid long table of ``big_rows`` rows."""
    exp = FiftyFileDrop()
    rows: dict[str, pd.DataFrame] = {}  # partition -> the responses expected after consolidation (latest drop wins)

    def good(rel: str, df: pd.DataFrame, board: str = "bench", **kw) -> None:
        write_table(df, incoming / rel, **kw)
        exp.good[rel] = len(df)
        if "score" in df:
            key = f"{board}.{df['scenario'].iloc[0]}"
            rows[key] = pd.concat([rows.get(key), df[["model", "item"]]]).drop_duplicates()

    for i in range(20):
        suffix = "parquet" if i % 2 else "csv"
        good(f"bench/good_{i:02d}.{suffix}", long_table(8, 30, scenario=f"s{i % 5}", seed=i, model_prefix=f"g{i}_"))
    for i in range(4):
        src = incoming / f"bench/good_{i:02d}.{'parquet' if i % 2 else 'csv'}"
        rel = f"bench/zz copy of good_{i:02d}{src.suffix}"  # sorts after its original: the copy is the one skipped
        (incoming / rel).write_bytes(src.read_bytes())
        exp.duplicates.append(rel)
    for i in range(3):  # new versions of write_first_versions' files: other models, so the old rows must go
        rel = f"bench/changed_{i}.csv"
        good(rel, long_table(5, 20, scenario="evolving", seed=200 + i, model_prefix=f"c{i}_v2_"))
        exp.changed.append(rel)
    base = long_table(4, 10, scenario="formats", seed=7, model_prefix="f")
    good("bench/bom.csv", base.assign(model=base.model + "_bom"), encoding="utf-8-sig")
    good("bench/semicolon.csv", base.assign(model=base.model + "_semi"), sep=";")
    good("bench/tabs.csv", base.assign(model=base.model + "_tab"), sep="\t")
    good("bench/résultats été 2024.csv", base.assign(model=base.model + "_été"))
    good("Bénch Ü/quiz.csv", long_table(5, 12, scenario="quiz", seed=8), board="b_nch")
    items = pd.DataFrame(
        {"item": [f"q{j}" for j in range(30)], "scenario": "s0", "prompt": [f"question {j}?" for j in range(30)]}
    )
    good("bench/s0.items.csv", items)
    good(
        "bench/s0.full_scores.csv",
        pd.DataFrame(
            {"model": [f"g0_{i}" for i in range(8)], "scenario": "s0", "full_benchmark_score": np.linspace(0.2, 0.9, 8)}
        ),
    )
    recs = [{"question": f"q{j}", "scores": {"r1": float(j % 2), "r2": 1.0}} for j in range(25)]
    (incoming / "bench" / "trivia_train.json").write_text(json.dumps(recs))
    exp.good["bench/trivia_train.json"] = 50 + 25  # responses + items
    rows["bench.trivia"] = pd.DataFrame(
        {"model": ["r1", "r2"] * 25, "item": [f"trivia.train.{j // 2}" for j in range(50)]}
    )

    small = long_table(3, 6, scenario="broken", seed=9)

    def bad(rel: str, content: bytes, expected: str) -> None:
        (incoming / rel).parent.mkdir(parents=True, exist_ok=True)
        (incoming / rel).write_bytes(content)
        exp.bad[rel] = expected

    csv = lambda df, **kw: df.to_csv(index=False, **kw).encode()  # noqa: E731
    bad("bench/missing_score.csv", csv(small.drop(columns=["score"])), "missing column(s) ['score']")
    bad("bench/out_of_range.csv", csv(small.assign(score=[0.0, 1.5] + [1.0] * 16)), "outside [0, 1]")
    bad("bench/nan.csv", csv(small.assign(score=[np.nan] + [1.0] * 17)), "score is NaN")
    bad("bench/text_score.csv", csv(small.assign(score=["high"] + ["1"] * 17)), "score 'high' is not a number")
    bad(
        "bench/conflict.csv",
        csv(pd.concat([small, small.head(1).assign(score=1 - small.score.iloc[0])])),
        "conflicting duplicate rows",
    )
    bad("bench/empty.csv", b"", "empty file (0 bytes)")
    bad("bench/header_only.csv", b"model,scenario,subscenario,item,score\n", "header but no data rows")
    pq_bytes = (incoming / "bench/good_01.parquet").read_bytes()
    bad("bench/truncated.parquet", pq_bytes[: len(pq_bytes) // 2], "unreadable file")
    bad("bench/latin1.csv", "model,scenario,item,score\nmodèle,broken,q1,1\n".encode("latin-1"), "not UTF-8 text")
    bad("bench/decimal_comma.csv", b"model;scenario;item;score\nm1;broken;q1;0,5\n", "score '0,5' is not a number")
    bad("bench/no_scenario_name.csv", csv(small.assign(scenario="???")), "empty name from '???'")
    bad("bench/scores.xlsx", b"PK\x03\x04 not a spreadsheet reader", "unknown format")
    bad("bench/broken_train.json", b'[{"question": ', "unreadable JSON")
    hostile = hostile_pickle(incoming / "bench" / "lb.pickle", marker or incoming.parent / "PICKLE_RAN")
    exp.bad[str(hostile.relative_to(incoming))] = "TINYBENCH_TRUST_PICKLE_DROPS"

    exp.big = "bench/big_long_table.csv"
    n_models = 1000
    big = long_table(n_models, big_rows // n_models, scenario="huge", seed=11, model_prefix="big_")
    good(exp.big, big)
    exp.partition_rows = {k: len(v) for k, v in rows.items()}
    assert exp.n_files == 50, exp.n_files
    return exp


# ---------------------------------------------------------------------- store snapshots
#: tables an ingest writes, with the columns that hold wall-clock times or run-specific paths (left out of comparisons)
INGEST_TABLES = {
    "drops": ["ingested_at"],
    "landed_responses": [],
    "items": [],
    "full_scores": [],
    "scenarios": ["registered_at"],
    "landed_costs": [],
    "quarantine": ["quarantined_at", "quarantined_to"],
}


def snapshot(db: Path) -> dict[str, pd.DataFrame]:
    """Every ingest table of a DuckDB file, sorted, opened read-only (fails if the file does not open cleanly)."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return {
            t: con.execute(
                f"SELECT * EXCLUDE ({', '.join(skip)}) FROM {t} ORDER BY ALL"
                if skip
                else f"SELECT * FROM {t} ORDER BY ALL"
            ).df()
            for t, skip in INGEST_TABLES.items()
        }
    finally:
        con.close()


def same_tables(a: dict, b: dict) -> list[str]:
    """The ingest tables that differ between two snapshots (empty: identical)."""
    return [t for t in INGEST_TABLES if not a[t].reset_index(drop=True).equals(b[t].reset_index(drop=True))]


# ---------------------------------------------------------------------- processes
INGEST_CHILD = r"""
import json, resource, sys, time
from tinybench_assets.io.landing import ingest_landing
from tinybench_assets.io.store import Store
t0 = time.perf_counter()
r = ingest_landing(Store(sys.argv[1]), sys.argv[2], sys.argv[3])
print(json.dumps({"ingested": r.ingested, "skipped": r.skipped, "quarantined": r.quarantined,
                  "partitions": sorted(r.partitions), "seconds": time.perf_counter() - t0,
                  "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2}))
"""


def ingest_in_child(db: Path, incoming: Path, quarantine: Path, env: dict | None = None) -> tuple[dict, float]:
    """``ingest_landing`` in a fresh process: (its report, its peak RSS in GB, as the child measured it itself)."""
    proc = subprocess.run(
        [sys.executable, "-c", INGEST_CHILD, str(db), str(incoming), str(quarantine)],
        capture_output=True,
        text=True,
        env=env or child_env(),
        cwd=ROOT,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"ingest child failed (rc {proc.returncode}):\n{proc.stderr[-3000:]}")
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    return report, report["peak_rss_gb"]


#: a child that ingests and announces the store's write: "WRITE resp_df" just before the landed_responses INSERT
#: runs, "WRITTEN resp_df" after it (the transaction still open), then waits there a while so it can be killed
KILL_CHILD = r"""
import sys, time, duckdb
from tinybench_assets.io import connection as connection_mod, store as store_mod
from tinybench_assets.io.landing import ingest_landing

class Announcing:
    def __init__(self, con): self._con = con
    def __getattr__(self, name): return getattr(self._con, name)
    def cursor(self): return Announcing(self._con.cursor())  # the store's accesses are cursors of one instance
    def register(self, name, df):
        print(f"WRITE {name} {len(df)}", flush=True)
        return self._con.register(name, df)
    def unregister(self, name):
        print(f"WRITTEN {name}", flush=True)
        time.sleep(float(sys.argv[4]))
        return self._con.unregister(name)

real_connect = duckdb.connect
connection_mod.duckdb = type("duckdb_shim", (), {"connect": staticmethod(lambda *a, **k: Announcing(real_connect(*a, **k))),
                                                 "IOException": duckdb.IOException})
r = ingest_landing(store_mod.Store(sys.argv[1]), sys.argv[2], sys.argv[3])
print("DONE", r.ingested, flush=True)
"""


def kill_during_ingest(
    db: Path, incoming: Path, quarantine: Path, when: str = "WRITTEN", delay: float = 0.0, timeout: float = 300.0
) -> dict:
    """Start an ingest in a child and SIGKILL it ``delay`` s after it prints a line starting with ``when``:
    ``WRITE`` (the big INSERT is starting), ``WRITTEN`` (it is done, the transaction open: the child waits there) or
    ``COMMIT`` (as WRITTEN, but the child goes on at once to commit: the kill lands around the commit). Returns what
    it printed and whether it was killed before it finished."""
    pause = "0" if when == "COMMIT" else "30"
    when = "WRITTEN" if when == "COMMIT" else when
    proc = subprocess.Popen(
        [sys.executable, "-c", KILL_CHILD, str(db), str(incoming), str(quarantine), pause],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
        cwd=ROOT,
    )
    lines, deadline = [], time.monotonic() + timeout
    try:
        for line in proc.stdout:
            lines.append(line.strip())
            if line.startswith(when) and "resp_df" in line:
                time.sleep(delay)
                break
            if time.monotonic() > deadline:
                break
        finished = proc.poll() is not None
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(30)
    return {
        "lines": lines,
        "killed": not finished and proc.returncode == -signal.SIGKILL,
        "stderr": proc.stderr.read()[-2000:],
    }


def child_env(extra: dict | None = None) -> dict:
    env = dict(os.environ)
    env.update(
        {
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "PYTHONPATH": str(ROOT),
        }
    )
    env.update(extra or {})
    return env


def project_env(root: Path) -> dict:
    """Environment of a throwaway tinybench project under ``root``: store, landing, quarantine, artifacts, Dagster home."""
    home = root / "dagster_home"
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text((ROOT / "dagster.yaml.template").read_text())
    return child_env(
        {
            "TINYBENCH_DUCKDB": str(root / "tinybench.duckdb"),
            "TINYBENCH_INCOMING": str(root / "incoming"),
            "TINYBENCH_QUARANTINE": str(root / "quarantine"),
            "TINYBENCH_ARTIFACTS": str(root / "artifacts"),
            "TINYBENCH_DEFAULT_DATA": str(root / "no_default_data"),
            "DAGSTER_HOME": str(home),
        }
    )


def small_project(root: Path, n_models: int = 30, n_items: int = 60) -> dict:
    """A tiny project (one leaderboard, one scenario) ready for `tinybench run-all --no-seed`; returns its environment."""
    write_table(long_table(n_models, n_items, scenario="quiz", seed=3), root / "incoming" / "tiny" / "quiz.parquet")
    return project_env(root)


def run_all_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "tinybench_assets.cli", "run-all", "--no-seed", *args]


def instance_for(env: dict):
    import dagster as dg

    return dg.DagsterInstance.from_config(env["DAGSTER_HOME"])


def kill_run_all_mid_run(env: dict, job: str = "refresh_scenario", timeout: float = 180.0) -> tuple[str, str]:
    """Start `tinybench run-all` in a subprocess, SIGKILL it as soon as the instance shows a STARTED run of ``job``
    whose first step has started; returns (that run's id, what run-all printed)."""
    import dagster as dg

    proc = subprocess.Popen(
        run_all_cmd(), env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    instance = instance_for(env)
    run_id, deadline = None, time.monotonic() + timeout
    try:
        while run_id is None and time.monotonic() < deadline and proc.poll() is None:
            runs = instance.get_runs(dg.RunsFilter(job_name=job, statuses=[dg.DagsterRunStatus.STARTED]), limit=1)
            started = (
                runs
                and instance.get_records_for_run(
                    runs[0].run_id, of_type=dg.DagsterEventType.STEP_START, limit=1
                ).records
            )
            run_id = runs[0].run_id if started else None
            time.sleep(0.05)
        alive = proc.poll() is None
        proc.send_signal(signal.SIGKILL)
        out = proc.communicate(timeout=30)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if run_id is None or not alive:
        raise RuntimeError(f"no STARTED {job} run seen before run-all ended (rc {proc.returncode}):\n{out[-3000:]}")
    return run_id, out
