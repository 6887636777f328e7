"""``tinybench run-all``: seed the landing folder, materialize what is stale or missing (--force: all), print a summary."""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import sys
import time
from pathlib import Path

from tinybench_assets import paths
from tinybench_assets.cli.run_feed import echo  # stdlib only: cheap at start-up
from tinybench_assets.cli.summary import summary

# cli: lazy (see cli/__init__.py): subcommands import what they run inside their functions


class RunAllBusy(RuntimeError):
    """Another ``tinybench run-all`` holds the project's run lock."""


def lock_path() -> Path:
    """The run lock sits beside the project's DuckDB file: one run-all per store at a time (the daemon's
    refresh_sensor requests nothing while a live run-all holds it)."""
    from tinybench_assets.orchestration.refresh_plan import run_all_lock_path

    return run_all_lock_path()


@contextlib.contextmanager
def project_run_lock(path: Path, wait: bool = True, say=print):
    """Hold the project's run-all lock (``fcntl.flock``, released by the kernel if the process dies).

    Without it, two run-alls on one project both spin: the second's Dagster in-process executor polls the busy
    "duckdb" pool without sleeping (46 CPU-minutes each in 54 minutes, neither past "ingest"). With it the second
    one says who holds the lock and waits for it in the kernel, using no CPU (``wait=True``), or raises RunAllBusy.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            if not wait:
                raise RunAllBusy(
                    f"another tinybench run-all is running on this project ({holder}; lock {path}); "
                    "it was not started (drop --no-wait to wait for it)"
                ) from None
            say(
                f"another tinybench run-all is running on this project ({holder}); waiting for it to finish "
                f"(lock {path}; Ctrl-C to give up)"
            )
            t0 = time.monotonic()
            fcntl.flock(fh, fcntl.LOCK_EX)
            say(f"the other run-all finished after {time.monotonic() - t0:.0f} s; starting")
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}")
        fh.flush()
        try:
            yield
        finally:
            fh.seek(0)
            fh.truncate()
            fcntl.flock(fh, fcntl.LOCK_UN)


def skipped_assets(instance, since: float) -> dict[tuple[str, str], str]:
    """{(asset, partition): reason} of the materializations since epoch second ``since`` that carry a ``skipped``
    note (a partition too small for the asset, no question text, ...), the latest per asset partition."""
    import warnings

    import dagster as dg

    out = {}
    with warnings.catch_warnings():  # get_event_records: the one query over every asset's materializations since a time
        warnings.simplefilter("ignore")
        recs = instance.get_event_records(
            dg.EventRecordsFilter(event_type=dg.DagsterEventType.ASSET_MATERIALIZATION, after_timestamp=since),
            ascending=True,
        )
    for rec in recs:
        mat = rec.asset_materialization
        note = mat.metadata.get("skipped") if mat else None
        if note is not None:
            out[(mat.asset_key.to_user_string(), mat.partition or "")] = str(getattr(note, "value", note))
        elif mat:
            out.pop((mat.asset_key.to_user_string(), mat.partition or ""), None)
    return out


def run_all(args: argparse.Namespace) -> int:
    """Bring every partition up to date: materialize what is stale or missing (everything with --force),
    recording the runs in the Dagster instance. One run-all per project at a time (:func:`project_run_lock`)."""
    try:
        with project_run_lock(
            lock_path(), wait=not getattr(args, "no_wait", False), say=lambda line: print(line, flush=True)
        ):
            return _run_all(args)
    except RunAllBusy as e:
        print(f"tinybench run-all: {e}", file=sys.stderr)
        return 3


def _settle(instance) -> None:
    """Before anything runs: runs of a killed run-all (left STARTED for ever, the UI showing them running) marked
    FAILED (we hold the project's run lock, so none of them is a live run-all of this project), and the runs the
    Dagster daemon has in hand waited for, so a partition is computed once (the refresh sensor requests no new ones
    while we hold the lock; queued runs that no live daemon will launch are canceled)."""
    from tinybench_assets.orchestration.live_runs import wait_for_live_runs
    from tinybench_assets.orchestration.orphans import mark_orphaned_runs

    for run_id, why in mark_orphaned_runs(instance, who=f"tinybench run-all (pid {os.getpid()})"):
        print(f"marked orphaned run {run_id} FAILED: {why}", flush=True)
    wait_for_live_runs(instance, say=lambda line: print(line, flush=True))


def _seed(args) -> None:
    """The default data copied into the landing folder (unless --no-seed)."""
    from tinybench_assets.io.landing import seed_default_data

    if args.no_seed:
        return
    src = Path(args.data or paths.default_data_dir())
    if src.is_dir():
        copied = seed_default_data(src, paths.incoming_dir())
        print(f"landing folder {paths.incoming_dir()}: {len(copied)} file(s) copied from {src}")
    else:
        print(f"default data {src} not found; using what is already in {paths.incoming_dir()}")


def _ingest(defs, instance, store, force: bool, quiet: dict, owner: dict) -> bool:
    """ingest_landing when a drop is new or changed (or --force, or nothing is stored yet); False if it failed."""
    from tinybench_assets.io.landing import pending_drops
    from tinybench_assets.orchestration.refresh import refresh

    pending = pending_drops(store, paths.incoming_dir())
    if not (pending or force or not store.partition_keys()):
        echo(f"  ingest   nothing new in {paths.incoming_dir()}")
        return True
    res = refresh(defs, instance, "ingest_landing", None, force=True, run_config=quiet, tags=owner)
    echo(f"  ingest   {'ok' if res.success else 'FAILED'} ({len(pending)} new or changed file(s))")
    return res.success


def _refresh_boards(args, defs, instance, store, keys: list, chains: dict, owner: dict) -> tuple[int, list]:
    """Every leaderboard chain: several at once (--jobs; 0: one per CORES_PER_CHAIN cores, so one after another on
    2 cores; each its share of the cores), else the busy scenario partitions in one-thread workers (--scenario-jobs
    0: one per core) with each leaderboard as soon as its scenarios are done, else one after another. Returns
    (materializations, failed keys)."""
    from tinybench_assets.cli.chains import CORES_PER_CHAIN, run_chains, run_scenario_phase
    from tinybench_assets.cli.run_feed import RUN_ALL_TAG
    from tinybench_assets.core.parallel import resolve_jobs
    from tinybench_assets.orchestration.refresh import pending as stale_work

    force = bool(getattr(args, "force", False))
    jobs = getattr(args, "jobs", 0) or max(1, resolve_jobs(0) // CORES_PER_CHAIN)
    jobs = resolve_jobs(jobs, len(chains))
    threads = getattr(args, "threads", 0) or (max(1, resolve_jobs(0) // jobs) if jobs > 1 else 0)
    # worker processes tag their runs with this run-all's id too, so its feed (cli/run_feed.py) prints their lines
    kw = {"force": force, "log_level": args.log_level, "tags": {RUN_ALL_TAG: owner[RUN_ALL_TAG]}}
    setup = (defs, instance, owner)
    sjobs = getattr(args, "scenario_jobs", 0)
    busy = (
        [k for k in keys if force or stale_work(defs, instance, "refresh_scenario", k)]
        if jobs == 1 and sjobs != 1
        else []
    )
    sjobs = resolve_jobs(sjobs, len(busy)) if busy else 1
    if jobs > 1:
        echo(
            f"  {len(chains)} leaderboards in {jobs} processes at once ({threads} thread(s) each): {', '.join(chains)}"
        )
        return run_chains(chains, jobs, threads=threads, setup=setup, **kw)
    if sjobs > 1 and not getattr(args, "threads", 0):
        echo(
            f"  {len(busy)} scenario partition(s) to refresh in {sjobs} processes at once (1 thread each), each "
            f"leaderboard as soon as its scenarios are done"
        )
        for k in keys:
            if k not in busy:
                echo(f"  scenario {k:<28} ok in {0:6.1f} s  (fresh, nothing to do)")
        return run_scenario_phase({b: [k for k in ks if k in busy] for b, ks in chains.items()}, sjobs, store, **kw)
    return run_chains(chains, 1, threads=threads, setup=setup, **kw)


def _run_all(args: argparse.Namespace) -> int:
    from tinybench_assets.cli.chains import project_instance
    from tinybench_assets.cli.run_feed import RunFeed, run_all_tags
    from tinybench_assets.definitions import build_defs
    from tinybench_assets.defs.partitions import register_partitions
    from tinybench_assets.io.drops import split_partition_key
    from tinybench_assets.io.store import Store
    from tinybench_assets.orchestration.orphans import run_owner_tags

    instance = project_instance()
    _settle(instance)
    defs = build_defs()  # resources on the paths of this environment
    t0 = time.time()
    _seed(args)
    # this process's pid, host and start time on every run it executes (a later start tells an orphan by them), and
    # this run-all's id (its feed prints the lines its runs log: cli/run_feed.py)
    feed_tags = run_all_tags()
    owner = {**run_owner_tags(), **feed_tags}
    # the console shows warnings and errors only; every event still goes to the instance (the UI's run pages)
    quiet = {"loggers": {"console": {"config": {"log_level": args.log_level}}}}
    force = bool(getattr(args, "force", False))
    store = Store(paths.store_target())
    # the assets' lines and a heartbeat on the console as the runs log them (with --log-level INFO Dagster's console
    # logger prints the lines itself: the feed adds only the heartbeat and the ends of long steps)
    with RunFeed(instance, feed_tags, messages=args.log_level not in ("DEBUG", "INFO")):
        if not _ingest(defs, instance, store, force, quiet, owner):
            return 1
        keys = store.partition_keys()
        if args.only:
            keys = [k for k in keys if any(k == o or k.startswith(o + ".") for o in args.only)]
        register_partitions(instance, keys)
        chains: dict[str, list[str]] = {}
        for key in keys:
            chains.setdefault(split_partition_key(key)[0], []).append(key)
        materialized, failed = _refresh_boards(args, defs, instance, store, keys, chains, owner)
        if not args.only:  # then each evaluation whose answers or leaderboard's tiny benchmark changed
            from tinybench_assets.orchestration.evaluations import refresh_evaluations

            done, bad = refresh_evaluations(
                defs, instance, paths.incoming_dir(), skip_boards=failed, log=echo, run_config=quiet, tags=owner
            )
            materialized, failed = materialized + done, [*failed, *bad]
    bad_keys, bad_boards = [k for k in keys if k in failed], [b for b in chains if b in failed]
    skipped = skipped_assets(instance, t0)
    print(
        f"{len(keys) - len(bad_keys)} of {len(keys)} scenario partition(s) and {len(chains) - len(bad_boards)} of "
        f"{len(chains)} leaderboard(s) up to date in {time.time() - t0:.0f} s; "
        f"{materialized} asset materialization(s){' (--force)' if force else ''}; "
        f"{len(bad_keys) + len(bad_boards)} failed; {len(skipped)} asset(s) skipped with a note"
    )
    for (asset, part), why in sorted(skipped.items())[:40]:
        print(f"  skipped {asset}[{part}]: {why[:200]}")
    summary(argparse.Namespace())
    if failed:
        print(f"FAILED: {failed}", file=sys.stderr)
        return 1
    return 0
