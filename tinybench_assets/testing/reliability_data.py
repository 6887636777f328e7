"""Process helpers for the fault, load and bad-input tests, shared with ``benchmarks/reliability.py``:
snapshots of a store's ingest tables; a child process that ingests and can be SIGKILLed at a chosen point of the
DuckDB write; `tinybench run-all` in a subprocess on a small generated project, and killed mid-run. The generated
inputs (long tables, the hostile pickle, the 50-file drop) live in ``testing.reliability_inputs`` and are re-exported
here, so the tests and the benchmark reach everything as ``reliability_data.<name>``. Nothing here writes outside the
folders given."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import duckdb
import pandas as pd

from tinybench_assets.paths import PROJECT_ROOT as ROOT
from tinybench_assets.testing.reliability_inputs import (  # re-exported: callers use ``reliability_data.<name>``
    FiftyFileDrop,
    Hostile,
    hostile_pickle,
    long_table,
    write_fifty_file_drop,
    write_first_versions,
    write_table,
)

__all__ = [
    "INGEST_CHILD",
    "INGEST_TABLES",
    "KILL_CHILD",
    "ROOT",
    "FiftyFileDrop",
    "Hostile",
    "child_env",
    "hostile_pickle",
    "ingest_in_child",
    "instance_for",
    "kill_during_ingest",
    "kill_run_all_mid_run",
    "long_table",
    "project_env",
    "run_all_cmd",
    "same_tables",
    "small_project",
    "snapshot",
    "write_fifty_file_drop",
    "write_first_versions",
    "write_table",
]


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

    return dg.DagsterInstance.from_config(env["DAGSTER_HOME"])


def kill_run_all_mid_run(env: dict, job: str = "refresh_scenario", timeout: float = 180.0) -> tuple[str, str]:
    """Start `tinybench run-all` in a subprocess, SIGKILL it as soon as the instance shows a STARTED run of ``job``
    whose first step has started; returns (that run's id, what run-all printed)."""

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
