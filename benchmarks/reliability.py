"""Faults, load and bad input, measured (issue 14): one command, figures printed and written as JSON.

    .venv/bin/python benchmarks/reliability.py --json benchmarks/results/reliability.json

Everything runs in a temporary project home (its own DuckDB files, landing folders, quarantine and Dagster
instances; never the project's data/), removed at the end (--keep leaves it):

* **50-file drop** (tinybench_assets/testing/reliability_data.py): 20 good long tables, 4 exact duplicates, 3
  changed versions, 8 good files of other shapes (BOM, ';' and tab separators, names with spaces and accents, items,
  full scores, RouterDC JSON), 14 malformed ones (missing column, score out of range, NaN, text score, conflicting
  duplicates, empty, header only, truncated parquet, not UTF-8, decimal comma, unusable scenario name, unknown
  suffix, broken JSON, an untrusted pickle whose unpickling would run code) and a valid 1,000,000-row long table.
  The refresh sensor ticks over it (cold, unchanged, the big file touched, the big file changed), then the ingest
  runs in a child process whose peak RSS is measured. ``rows_lost``: rows a good file holds that the store lacks,
  plus rows a partition should hold after consolidation that it lacks (must be 0).
* **kill recovery**: an ingest of a 300,000-row drop SIGKILLed inside the DuckDB write (during the INSERT, after it
  with the transaction open, around the commit): the store must open and hold all of the drop or none, and a
  re-run must give tables identical to a clean run; then a `tinybench run-all` SIGKILLed while a scenario run holds
  the DuckDB pool: its run must be STARTED, and the next run-all must mark it FAILED, give its pool slot back and
  complete.
* **concurrency**: two `tinybench run-all` started at the same moment on one new project, and `tinybench summary`
  beside them: both run-alls succeed (the second waits for the first, saying so), summary answers, and the store
  holds no duplicated response.
* **PostgreSQL profile** (``postgres_matches_duckdb``): a throwaway PostgreSQL server
  (tinybench_assets/testing/pg_server.py: initdb + pg_ctl in a temporary folder, no system service) holds the Dagster
  instance (deploy/dagster.yaml) and the results store; ingest and scenario partition openllm.arc's assets (raw
  responses, matrix, binarized, IRT model) run on it and on DuckDB, on the test suite's openllm slice (40 models of arc
  and mmlu), and every ingest table and every row of the partition are compared (tinybench_assets/testing/parity.py,
  as tinybench_assets_tests/test_deploy/test_postgres.py): true when they are identical (floats to 1e-12; the largest
  difference is printed). False, with the reason, when no PostgreSQL binaries are installed (scripts/env.sh installs
  Debian's postgresql package).
* **distributed** (``distributed``): the distributed profile through real processes
  (tinybench_assets/testing/distributed.py, as tinybench_assets_tests/test_deploy/test_celery.py): a throwaway Redis
  broker and PostgreSQL server, two Celery workers (``tinybench worker``, the default queue and ``gpu``), and
  partition openllm.arc and leaderboard openllm of an openllm slice (40 models of arc) run through them and in one
  process. ``steps`` / ``steps_on_workers``: steps run / run in a worker's pool process (the event log names the
  worker); ``gpu_ops_on_gpu_worker``: the GPU ops, and only they, on the gpu worker; ``tables_equal_in_process``:
  every stored row equal to the in-process run's (floats to 1e-12); ``worker_killed_recovered``: the gpu worker's
  process SIGKILLed inside ``anchor_sets`` fails the run, the store keeps what it held, the re-execution from the
  failure completes; ``seconds_workers`` / ``seconds_in_process``: the three runs' wall time each way. ``--only
  distributed`` runs this part alone (about 2-4 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from meta import run_meta  # noqa: E402  (benchmarks/meta.py: date, commit, machine)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BARS = {"rows_lost": 0, "peak_rss_gb": 3.0, "sensor_tick_seconds_max": 30.0}


def fifty_file_drop(root: Path) -> dict:
    import dagster as dg

    from tinybench_assets.definitions import build_defs
    from tinybench_assets.defs.resources import LandingResource, StoreResource
    from tinybench_assets.defs.sensors import refresh_sensor
    from tinybench_assets.io.drops import read_drop
    from tinybench_assets.io.landing import ingest_landing
    from tinybench_assets.io.store import Store
    from tinybench_assets.testing import reliability_data as rd

    db, incoming, quarantine = root / "tb.duckdb", root / "incoming", root / "quarantine"
    rd.write_first_versions(incoming)
    ingest_landing(Store(db), incoming, quarantine)
    t0 = time.perf_counter()
    exp = rd.write_fifty_file_drop(incoming, marker=root / "PICKLE_RAN")
    print(
        f"  50-file drop written in {time.perf_counter() - t0:.1f} s "
        f"({(incoming / exp.big).stat().st_size / 1e6:.0f} MB million-row CSV)",
        flush=True,
    )

    instance, ticks, repo = dg.DagsterInstance.ephemeral(), {}, build_defs().get_repository_def()
    resources = {
        "landing": LandingResource(incoming=str(incoming), quarantine=str(quarantine)),
        "store": StoreResource(database=str(db)),
    }

    def tick(label: str):
        t = time.perf_counter()
        with dg.build_sensor_context(instance=instance, resources=resources, repository_def=repo) as ctx:
            res = refresh_sensor(ctx)
        ticks[label] = round(time.perf_counter() - t, 3)
        return [] if isinstance(res, dg.SkipReason) else res

    first = tick("cold, 50 new files")
    tick("unchanged")
    big = incoming / exp.big
    os.utime(big, ns=(big.stat().st_atime_ns, big.stat().st_mtime_ns + 10**9))
    tick("big file touched (same bytes)")
    with open(big, "a") as fh:  # a new version of the big file: one more row
        fh.write("big_late,huge,huge_s0,q0,1.0\n")
    exp.good[exp.big] += 1
    exp.partition_rows["bench.huge"] += 1
    changed = tick("big file changed")
    requested = [
        [r.job_name for r in first],
        [r.job_name for r in changed],
    ]  # one ingest run each: it finds the partitions
    t = time.perf_counter()
    read_drop(big, "bench")  # what a tick would cost if the sensor parsed the big file
    whole_read_s = time.perf_counter() - t

    report, rss = rd.ingest_in_child(db, incoming, quarantine)
    store = Store(db)
    per_drop = (
        store.query(
            """SELECT d.path, (SELECT count(*) FROM landed_responses l WHERE l.drop_id = d.drop_id)
                        + (SELECT count(*) FROM items i WHERE i.drop_id = d.drop_id)
                        + (SELECT count(*) FROM full_scores f WHERE f.drop_id = d.drop_id) AS stored
           FROM drops d WHERE d.status = 'active'"""
        )
        .set_index("path")["stored"]
        .to_dict()
    )
    lost_files = {rel: n - per_drop.get(rel, 0) for rel, n in exp.good.items() if per_drop.get(rel, 0) < n}
    lost_parts = {k: n - c for k, n in exp.partition_rows.items() if (c := store.consolidate_responses(k)) < n}
    wrong = {
        "not ingested": sorted(set(exp.good) - set(report["ingested"])),
        "not quarantined": sorted(set(exp.bad) - set(report["quarantined"])),
        "duplicates not skipped": sorted(set(exp.duplicates) - set(report["skipped"])),
        "quarantine message without the problem": sorted(
            r for r, e in exp.bad.items() if e not in report["quarantined"].get(r, e)
        ),
    }
    return {
        "files": exp.n_files,
        "files_ingested": len(report["ingested"]),
        "files_skipped_duplicates": len(report["skipped"]),
        "files_quarantined": len(report["quarantined"]),
        "rows_expected": sum(exp.good.values()),
        "rows_lost": int(sum(lost_files.values()) + sum(lost_parts.values())),
        "sensor_tick_seconds": ticks,
        "sensor_tick_seconds_max": max(ticks.values()),
        "sensor_requested": requested,
        "big_file_whole_read_seconds": round(whole_read_s, 1),
        "ingest_seconds": round(report["seconds"], 1),
        "peak_rss_gb": round(rss, 3),
        "pickle_code_ran": (root / "PICKLE_RAN").exists(),
        "problems": {k: v for k, v in wrong.items() if v}
        | ({"rows lost": lost_files | lost_parts} if lost_files or lost_parts else {}),
    }


def kill_recovery(root: Path) -> dict:
    import dagster as dg

    from tinybench_assets.io.landing import ingest_landing
    from tinybench_assets.io.store import Store
    from tinybench_assets.testing import reliability_data as rd

    out: dict = {"ingest_kills": []}
    db, incoming, quarantine = root / "killed" / "tb.duckdb", root / "killed" / "incoming", root / "killed" / "q"
    small, big = rd.long_table(20, 50, scenario="small", seed=2), rd.long_table(300, 1000, scenario="big", seed=1)
    rd.write_table(small, incoming / "lb" / "small.csv")
    ingest_landing(Store(db), incoming, quarantine)
    before = rd.snapshot(db)
    rd.write_table(big, incoming / "lb" / "big.parquet")
    all_or_nothing = True
    for when, delay in (("WRITE", 0.02), ("WRITE", 0.08), ("WRITTEN", 0.0), ("COMMIT", 0.0)):
        res = rd.kill_during_ingest(db, incoming, quarantine, when=when, delay=delay)
        after = rd.snapshot(db)
        n = int((after["landed_responses"]["scenario"] == "big").sum())
        whole = n == len(big)
        all_or_nothing &= res["killed"] and (whole or (n == 0 and not rd.same_tables(after, before)))
        out["ingest_kills"].append({"at": f"{when}+{delay}s", "killed": res["killed"], "big_rows_after": n})
        if whole:
            break
    ingest_landing(Store(db), incoming, quarantine)
    cdb, cinc = root / "clean" / "tb.duckdb", root / "clean" / "incoming"
    rd.write_table(small, cinc / "lb" / "small.csv")
    ingest_landing(Store(cdb), cinc, root / "clean" / "q")
    rd.write_table(big, cinc / "lb" / "big.parquet")
    ingest_landing(Store(cdb), cinc, root / "clean" / "q")
    differ = rd.same_tables(rd.snapshot(db), rd.snapshot(cdb))
    out["ingest_rerun_identical_to_clean"] = not differ
    ingest_ok = all_or_nothing and not differ

    env = rd.small_project(root / "orphan", n_models=20, n_items=30)
    t0 = time.perf_counter()
    run_id, _ = rd.kill_run_all_mid_run(env)
    instance = rd.instance_for(env)
    stuck = instance.get_run_by_id(run_id).status == dg.DagsterRunStatus.STARTED
    held = run_id in instance.event_log_storage.get_concurrency_run_ids()  # run-all's runs claim no op slots now
    proc = subprocess.run(rd.run_all_cmd(), env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    instance = rd.instance_for(env)
    failed = instance.get_run_by_id(run_id).status == dg.DagsterRunStatus.FAILURE
    freed = run_id not in instance.event_log_storage.get_concurrency_run_ids()
    out["run_all_kill"] = {
        "orphan_was_started": stuck,
        "orphan_held_pool_slot": held,
        "next_run_all_rc": proc.returncode,
        "orphan_marked_failed": failed,
        "pool_slot_freed": freed,
        "message_printed": f"marked orphaned run {run_id} FAILED" in proc.stdout,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    orphan_ok = (
        stuck and failed and freed and not held and proc.returncode == 0 and out["run_all_kill"]["message_printed"]
    )
    out["kill_recovery_ok"] = bool(ingest_ok and orphan_ok)
    return out


def concurrency(root: Path) -> dict:
    from tinybench_assets.io.store import Store
    from tinybench_assets.testing import reliability_data as rd

    env = rd.small_project(root / "concurrent", n_models=20, n_items=30)
    t0 = time.perf_counter()
    procs = [
        subprocess.Popen(
            rd.run_all_cmd(), env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        for _ in range(2)
    ]
    time.sleep(8)  # both started; one holds the project lock
    ts = time.perf_counter()
    summ = subprocess.run(
        [sys.executable, "-m", "tinybench_assets.cli", "summary"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    summary_s = time.perf_counter() - ts
    outs = [p.communicate(timeout=900)[0] for p in procs]
    waited = sum("another tinybench run-all is running on this project" in o for o in outs)
    store = Store(env["TINYBENCH_DUCKDB"])
    dups = sum(len(store.response_duplicates(k)) for k in store.partition_keys())
    res = {
        "run_all_rcs": [p.returncode for p in procs],
        "one_waited_with_message": waited == 1,
        "summary_rc": summ.returncode,
        "summary_seconds": round(summary_s, 1),
        "duplicated_responses": dups,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    res["concurrent_ok"] = res["run_all_rcs"] == [0, 0] and waited == 1 and summ.returncode == 0 and dups == 0
    return res


def postgres_parity(root: Path) -> dict:
    from tinybench_assets.testing import parity
    from tinybench_assets.testing.pg_server import PostgresMissing, PostgresServer

    incoming = parity.write_openllm_slice(root / "incoming")
    try:
        server = PostgresServer()
    except PostgresMissing as exc:
        return {"match": False, "problems": {"server": str(exc)}}
    try:
        server.start()
        return parity.postgres_matches_duckdb(incoming, root, server)
    finally:
        server.stop()


DISTRIBUTED_KEYS = (
    "steps",
    "steps_on_workers",
    "gpu_ops_on_gpu_worker",
    "tables_equal_in_process",
    "worker_killed_recovered",
    "seconds_workers",
    "seconds_in_process",
)


def distributed(root: Path) -> dict:
    """The ``distributed`` figures and their details; every figure false / 0 with the reason when Redis or PostgreSQL
    is not installed (scripts/env.sh installs both)."""
    from tinybench_assets.testing.distributed import distributed_check
    from tinybench_assets.testing.openllm_slice import write_openllm_slice
    from tinybench_assets.testing.pg_server import PostgresMissing
    from tinybench_assets.testing.redis_server import RedisMissing

    incoming = write_openllm_slice(root / "incoming", n_models=40, scenarios=("arc",))
    try:
        return distributed_check(incoming, root / "run")
    except (RedisMissing, PostgresMissing) as exc:
        return {**dict.fromkeys(DISTRIBUTED_KEYS, 0), "details": {"problems": str(exc)}}


def distributed_ok(d: dict) -> bool:
    return bool(
        d["steps"] > 0
        and d["steps_on_workers"] == d["steps"]
        and d["gpu_ops_on_gpu_worker"]
        and d["tables_equal_in_process"]
        and d["worker_killed_recovered"]
    )


def distributed_note(d: dict) -> str:
    det = d.get("details", {})
    if "problems" in det and isinstance(det["problems"], str):
        return f"NOT RUN: {det['problems']}"
    kill = det.get("kill", {})
    return (
        f"{det.get('tables')} tables, {det.get('rows')} rows compared, largest float difference "
        f"{det.get('max_abs_float_diff')}; GPU steps {det.get('gpu_steps')}; kill: run {kill.get('run_status')}, "
        f"failed {kill.get('failed_steps')}, store unchanged {kill.get('store_unchanged')}, re-execution "
        f"{kill.get('rerun_success')} in {kill.get('seconds_rerun')} s; probes {det.get('probes')}"
        + (f"; PROBLEMS {det['problems']}" if det.get("problems") else "")
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--keep", action="store_true", help="keep the temporary project home")
    ap.add_argument("--only", choices=["distributed"], help="run this part alone (its figure printed and written)")
    args = ap.parse_args(argv)
    home = Path(tempfile.mkdtemp(prefix="tinybench-reliability-"))
    for var, name in (
        ("TINYBENCH_DUCKDB", "default.duckdb"),
        ("TINYBENCH_INCOMING", "incoming"),
        ("TINYBENCH_QUARANTINE", "quarantine"),
        ("TINYBENCH_ARTIFACTS", "artifacts"),
        ("DAGSTER_HOME", "dagster_home"),
    ):
        os.environ[var] = str(home / "default" / name)  # nothing here may fall back to the project's data/
    (home / "default" / "dagster_home").mkdir(parents=True)
    os.environ.pop("TINYBENCH_TRUST_PICKLE_DROPS", None)  # pickles off, as by default
    t0 = time.perf_counter()
    print(f"tinybench reliability benchmark in {home}", flush=True)
    if args.only == "distributed":
        try:
            print("distributed profile (Celery workers) ...", flush=True)
            dist = distributed(home / "distributed")
        finally:
            if not args.keep:
                shutil.rmtree(home, ignore_errors=True)
        figure = {k: dist[k] for k in DISTRIBUTED_KEYS}
        print(
            f"distributed {json.dumps(figure)}  {'ok' if distributed_ok(dist) else 'FAIL'}\n  {distributed_note(dist)}"
        )
        if args.json:
            Path(args.json).parent.mkdir(parents=True, exist_ok=True)
            out = {"distributed": figure, "meta": run_meta(), "details": {"distributed": dist.get("details")}}
            Path(args.json).write_text(json.dumps(out, indent=2, default=str) + "\n")
        return 0 if distributed_ok(dist) else 1
    try:
        print("50-file drop ...", flush=True)
        drop = fifty_file_drop(home / "fifty")
        print("kill recovery ...", flush=True)
        kill = kill_recovery(home / "kill")
        print("concurrency ...", flush=True)
        conc = concurrency(home)
        print("PostgreSQL profile ...", flush=True)
        pg = postgres_parity(home / "postgres")
        print("distributed profile (Celery workers) ...", flush=True)
        dist = distributed(home / "distributed")
    finally:
        if not args.keep:
            shutil.rmtree(home, ignore_errors=True)
    figures = {
        "files_ingested": drop["files_ingested"],
        "files_quarantined": drop["files_quarantined"],
        "rows_lost": drop["rows_lost"],
        "sensor_tick_seconds_max": drop["sensor_tick_seconds_max"],
        "peak_rss_gb": drop["peak_rss_gb"],
        "kill_recovery_ok": kill["kill_recovery_ok"],
        "concurrent_ok": conc["concurrent_ok"],
        "postgres_matches_duckdb": bool(pg["match"]),
        "distributed": {k: dist[k] for k in DISTRIBUTED_KEYS},
        "seconds": round(time.perf_counter() - t0, 1),
    }
    checks = {
        "rows_lost": figures["rows_lost"] == BARS["rows_lost"],
        "peak_rss_gb": figures["peak_rss_gb"] < BARS["peak_rss_gb"],
        "sensor_tick_seconds_max": figures["sensor_tick_seconds_max"] < BARS["sensor_tick_seconds_max"],
        "kill_recovery_ok": figures["kill_recovery_ok"],
        "concurrent_ok": figures["concurrent_ok"],
        "postgres_matches_duckdb": figures["postgres_matches_duckdb"],
        "distributed": distributed_ok(dist),
        "files_quarantined": not drop["problems"] and not drop["pickle_code_ran"],
    }
    print()
    notes = {
        "files_ingested": f"of {drop['files']} files; {drop['files_skipped_duplicates']} exact duplicates skipped",
        "files_quarantined": "each with an error report"
        + (f"; PROBLEMS {drop['problems']}" if drop["problems"] else ""),
        "rows_lost": f"bar 0; {drop['rows_expected']:,} rows expected",
        "sensor_tick_seconds_max": f"bar {BARS['sensor_tick_seconds_max']:.0f} s (Dagster's limit 60 s); ticks {drop['sensor_tick_seconds']}; "
        f"requested {drop['sensor_requested']} (the sensor hashes files; parsing the big file: {drop['big_file_whole_read_seconds']} s)",
        "peak_rss_gb": f"bar {BARS['peak_rss_gb']} GB; ingest of the 50 files in {drop['ingest_seconds']} s",
        "kill_recovery_ok": f"ingest kills {kill['ingest_kills']}; run-all kill {kill['run_all_kill']}",
        "concurrent_ok": f"{conc}",
        "postgres_matches_duckdb": (
            f"{pg.get('tables')} tables, {pg.get('rows')} rows of ingest + openllm.arc compared; largest "
            f"float difference {pg.get('max_abs_float_diff')}; PostgreSQL instance {pg.get('pg_instance')}; "
            f"seconds {pg.get('seconds')}" + (f"; PROBLEMS {pg['problems']}" if pg["problems"] else "")
        ),
        "distributed": distributed_note(dist),
        "seconds": "the whole benchmark",
    }
    for k, v in figures.items():
        flag = "" if k not in checks else ("  ok" if checks[k] else "  FAIL")
        print(f"{k:<24} {json.dumps(v):>8}{flag}   {notes[k]}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(
            json.dumps(
                {
                    **figures,
                    "meta": run_meta(),
                    "details": {
                        "fifty_file_drop": drop,
                        "kill_recovery": kill,
                        "concurrency": conc,
                        "postgres": pg,
                        "distributed": dist.get("details"),
                    },
                },
                indent=2,
                default=str,
            )
            + "\n"
        )
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
