"""The daemon path measured against run-all, on one slice of the real data, in one run (issue: the way users run it).

    .venv/bin/python benchmarks/daemon.py --json benchmarks/results/daemon.json

Two throwaway project homes hold the same slice of ../shared/data (openllm arc + mmlu, ``--models`` models;
RouterDC mmlu + gsm8k, ``--records`` questions). One is brought up to date by ``tinybench run-all`` (as a user runs
it: worker processes per core), the other by a real ``dagster-daemon run`` alone (refresh sensor every
``--sensor-interval`` s at most; at once when a file or run changed). Then, on the daemon's project: a restart with nothing new, run-all after the daemon, one
changed drop, run-all started while the daemon refreshes a drop, and 20 runs queued at once (false orphans). Figures:
daemon_converge_seconds, runall_seconds (and their ratio), runs_after_restart, runs_after_runall, false_orphans,
duplicate_runs, rows_equal_runall, one_drop_partitions, seconds.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from meta import run_meta  # noqa: E402  (benchmarks/meta.py: date, commit, machine)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BARS = {
    "daemon_over_runall": 1.5,
    "runs_after_restart": 0,
    "runs_after_runall": 0,
    "false_orphans": 0,
    "duplicate_runs": 0,
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--models", type=int, default=60, help="openllm models in the slice (>= 50: estimation runs too)")
    ap.add_argument("--records", type=int, default=60, help="RouterDC questions per scenario")
    ap.add_argument(
        "--sensor-interval",
        type=int,
        default=30,
        help="seconds between the refresh sensor's full decisions (the product default, 30; a landing "
        "file or a run that changed triggers one at once)",
    )
    ap.add_argument("--queued", type=int, default=20, help="runs queued at once for the false-orphan count")
    ap.add_argument("--workdir", help="keep the two project homes here (default: a temporary folder)")
    args = ap.parse_args(argv)

    import dagster as dg
    import pandas as pd

    from tinybench_assets.testing.daemon_harness import (
        DaemonProject,
        assert_same_store,
        orphan_failures,
        queue_runs,
        stop_schedules,
        write_slice,
    )

    t_all = time.perf_counter()
    root = Path(args.workdir or tempfile.mkdtemp(prefix="tinybench-daemon-"))
    d, r = DaemonProject(root / "daemon", args.sensor_interval), DaemonProject(root / "runall", args.sensor_interval)
    for p in (d, r):
        write_slice(p.incoming, n_models=args.models, routerdc_records=args.records)
    out: dict = {"sensor_interval_s": args.sensor_interval, "models": args.models, "records": args.records}

    def ids(p):
        return {x.run_id for x in p.runs()}

    try:
        t0 = time.perf_counter()
        res = r.run_all()
        out["runall_seconds"] = round(time.perf_counter() - t0, 1)
        if res.returncode:
            raise SystemExit(f"run-all failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
        print(f"run-all cold: {out['runall_seconds']} s", flush=True)

        # the figures are the refresh sensor's runs: the nightly schedules (03:00, 03:15, 04:00) would add their own
        stop_schedules(d)
        d.start()
        out["daemon_converge_seconds"] = round(d.wait_converged(timeout_s=1800), 1)
        out["daemon_runs"] = len(d.runs())
        out["daemon_over_runall"] = round(out["daemon_converge_seconds"] / out["runall_seconds"], 2)
        print(
            f"daemon alone: {out['daemon_converge_seconds']} s in {out['daemon_runs']} runs "
            f"({out['daemon_over_runall']}x run-all)",
            flush=True,
        )
        try:
            assert_same_store(d.db, r.db)
            out["rows_equal_runall"] = True
        except AssertionError as e:
            out["rows_equal_runall"] = False
            print(f"stores differ: {str(e)[:2000]}")

        wait_ticks = max(args.sensor_interval, 20) + 5  # a full decision and at least four ticks of the sensor daemon
        d.stop()
        before = ids(d)
        d.start()
        time.sleep(wait_ticks)
        out["runs_after_restart"] = len(ids(d) - before)
        before = ids(r)
        r.start()
        time.sleep(wait_ticks)
        out["runs_after_runall"] = len(ids(r) - before)
        r.stop()
        print(
            f"runs launched: after a daemon restart {out['runs_after_restart']}, by a daemon started after run-all "
            f"{out['runs_after_runall']}",
            flush=True,
        )

        mark = d.last_storage_id()
        path = (
            d.incoming / "routerdc" / "gsm8k-train.json"
            if args.records
            else d.incoming / "openllm" / "mmlu.responses.parquet"
        )
        if path.suffix == ".json":
            path.write_text(json.dumps(json.loads(path.read_text())[:-5]))
        else:
            df = pd.read_parquet(path)
            df.iloc[:-5].to_parquet(path, index=False)
        t0 = time.perf_counter()
        d.wait_converged(timeout_s=900)
        out["one_drop_seconds"] = round(time.perf_counter() - t0, 1)
        out["one_drop_partitions"] = sorted({k for _, k, _ in d.materializations(mark) if k})
        print(f"one changed drop ({path.name}): {out['one_drop_partitions']} refreshed in {out['one_drop_seconds']} s")

        mark = d.last_storage_id()
        path = d.incoming / "openllm" / "arc.responses.parquet"
        df = pd.read_parquet(path)
        df.assign(score=1 - df["score"]).to_parquet(path, index=False)
        t0 = time.monotonic()
        while not any(x.job_name == "refresh_scenario" for x in d.live_runs()) and time.monotonic() - t0 < 300:
            time.sleep(0.5)
        res = d.run_all()
        d.wait_converged(timeout_s=900)
        counts = collections.Counter((a, k) for a, k, _ in d.materializations(mark))
        out["duplicate_runs"] = sum(1 for n in counts.values() if n > 1)
        out["duplicate_assets"] = sorted(f"{a}[{k}]" for (a, k), n in counts.items() if n > 1)
        print(
            f"run-all beside the daemon on one drop: rc {res.returncode}, asset partitions computed twice: "
            f"{out['duplicate_runs']}",
            flush=True,
        )

        queued = queue_runs(d, "ingest_landing", args.queued)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 1200 and any(not d.instance.get_run_by_id(x).is_finished for x in queued):
            time.sleep(1.0)
        statuses = collections.Counter(d.instance.get_run_by_id(x).status.value for x in queued)
        out["queued_launches"] = len(queued)
        out["queued_statuses"] = dict(statuses)
        out["false_orphans"] = len(orphan_failures(d, queued)) + len(orphan_failures(d, ids(d) - set(queued)))
        print(f"{len(queued)} runs queued at once: {dict(statuses)}; runs marked orphaned: {out['false_orphans']}")
        out["all_runs_succeeded"] = all(x.status == dg.DagsterRunStatus.SUCCESS for x in d.runs())
    finally:
        d.close()
        r.close()
    out["seconds"] = round(time.perf_counter() - t_all, 1)
    print(f"\n{'figure':<26}{'value':>12}  bar")
    for k in (
        "runall_seconds",
        "daemon_converge_seconds",
        "daemon_over_runall",
        "runs_after_restart",
        "runs_after_runall",
        "false_orphans",
        "duplicate_runs",
        "rows_equal_runall",
        "seconds",
    ):
        bar = BARS.get(k)
        print(f"{k:<26}{str(out[k]):>12}  {'' if bar is None else ('<= ' + str(bar))}")
    print(f"one_drop_partitions: {out['one_drop_partitions']}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({**out, "meta": run_meta()}, indent=2, sort_keys=True))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
