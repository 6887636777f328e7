"""``tinybench run-all``: seed the landing folder, materialize what is stale or missing (--force: all), print a summary."""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from tinybench_assets import paths
from tinybench_assets.cli.summary import summary


def _instance():
    import dagster as dg

    if not os.environ.get("DAGSTER_HOME"):
        home = paths.PROJECT_ROOT / ".dagster_home"
        home.mkdir(exist_ok=True)
        if not (home / "dagster.yaml").exists():
            (home / "dagster.yaml").write_text((paths.PROJECT_ROOT / "dagster.yaml.template").read_text())
        os.environ["DAGSTER_HOME"] = str(home)
    return dg.DagsterInstance.get()


def run_all(args: argparse.Namespace) -> int:
    """Bring every partition up to date: materialize what is stale or missing (everything with --force),
    recording the runs in the Dagster instance."""
    from tinybench_assets.definitions import build_defs
    from tinybench_assets.defs.partitions import register_partitions
    from tinybench_assets.io.drops import split_partition_key
    from tinybench_assets.io.landing import pending_drops, seed_default_data
    from tinybench_assets.io.store import Store

    instance = _instance()
    defs = build_defs()  # resources on the paths of this environment
    t0 = time.time()
    if not args.no_seed:
        src = Path(args.data or paths.default_data_dir())
        if src.is_dir():
            copied = seed_default_data(src, paths.incoming_dir())
            print(f"landing folder {paths.incoming_dir()}: {len(copied)} file(s) copied from {src}")
        else:
            print(f"default data {src} not found; using what is already in {paths.incoming_dir()}")
    from tinybench_assets.refresh import refresh

    # the console shows warnings and errors only; every event still goes to the instance (the UI's run pages)
    quiet = {"loggers": {"console": {"config": {"log_level": args.log_level}}}}
    force = bool(getattr(args, "force", False))
    store = Store(paths.duckdb_path())
    pending = pending_drops(store, paths.incoming_dir())
    if pending or force or not store.partition_keys():
        res = refresh(defs, instance, "ingest_landing", None, force=True, run_config=quiet)
        print(f"  ingest   {'ok' if res.success else 'FAILED'} ({len(pending)} new or changed file(s))", flush=True)
        if not res.success:
            return 1
    else:
        print(f"  ingest   nothing new in {paths.incoming_dir()}", flush=True)
    keys = store.partition_keys()
    if args.only:
        keys = [k for k in keys if any(k == o or k.startswith(o + ".") for o in args.only)]
    register_partitions(instance, keys)
    failed, materialized = [], 0

    def run(job_name: str, key: str, label: str) -> None:
        nonlocal materialized
        r = refresh(defs, instance, job_name, key, force=force, run_config=quiet)
        materialized += len(r.materialized)
        what = "fresh, nothing to do" if r.fresh else f"{len(r.materialized)} materialized"
        print(f"  {label} {key:<28} {'ok' if r.success else 'FAILED'} in {r.seconds:6.1f} s  ({what})", flush=True)
        if not r.success:
            failed.append(key)

    for key in keys:
        run("refresh_scenario", key, "scenario")
    boards = sorted({split_partition_key(k)[0] for k in keys})
    for board in boards:
        run("refresh_leaderboard", board, "leaderboard")
    print(f"{len(keys)} scenario partition(s) and {len(boards)} leaderboard(s) up to date in {time.time() - t0:.0f} s; "
          f"{materialized} asset materialization(s){' (--force)' if force else ''}")
    summary(argparse.Namespace())
    if failed:
        print(f"FAILED: {failed}", file=sys.stderr)
        return 1
    return 0
