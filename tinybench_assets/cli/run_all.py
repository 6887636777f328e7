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
from tinybench_assets.cli.summary import summary


def _instance():
    """The project's Dagster instance ($DAGSTER_HOME, else .dagster_home/ from dagster.yaml.template), with its
    pools enforced per run rather than per op for run-all's own runs.

    run-all's runs execute in-process; with op-level pools Dagster's in-process executor polls a busy pool slot
    without sleeping, and two leaderboard chains of one run-all would take turns asset by asset. One run-all per
    project at a time is already guaranteed by its run lock, and the store's connections wait for the DuckDB
    file's lock, so run-all's runs claim no op slots; runs launched from the UI keep the instance's op-level pool.
    """
    import dagster as dg
    import yaml
    from dagster._core.instance.ref import InstanceRef

    if not os.environ.get("DAGSTER_HOME"):
        home = paths.PROJECT_ROOT / ".dagster_home"
        home.mkdir(exist_ok=True)
        if not (home / "dagster.yaml").exists():
            (home / "dagster.yaml").write_text((paths.PROJECT_ROOT / "dagster.yaml.template").read_text())
        os.environ["DAGSTER_HOME"] = str(home)
    home = Path(os.environ["DAGSTER_HOME"])
    cfg = yaml.safe_load((home / "dagster.yaml").read_text()) if (home / "dagster.yaml").exists() else None
    concurrency = dict((cfg or {}).get("concurrency") or {})
    concurrency["pools"] = {**(concurrency.get("pools") or {}), "granularity": "run"}
    return dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home), overrides={"concurrency": concurrency}))


#: cores per leaderboard chain when run-all picks how many leaderboards to refresh at once (``--jobs 0``). Measured on
#: 2 cores (issue 12): two one-thread chains took 720 s cold against 640 s one after another (CPU-bound throughout: both
#: cores ~1.9 busy either way); two two-thread chains oversubscribed the cores (openllm's scenario steps 4-6x slower).
CORES_PER_CHAIN = 4


class RunAllBusy(RuntimeError):
    """Another ``tinybench run-all`` holds the project's run lock."""


def lock_path() -> Path:
    """The run lock sits beside the project's DuckDB file: one run-all per store at a time."""
    db = Path(paths.duckdb_path())
    return db.with_name(db.name + ".run-all.lock")


@contextlib.contextmanager
def project_run_lock(path: Path, wait: bool = True, say=print):
    """Hold the project's run-all lock (``fcntl.flock``, released by the kernel if the process dies).

    Two run-alls on one project used to both spin: the second's Dagster in-process executor polled the busy
    "duckdb" pool without sleeping (46 CPU-minutes each in 54 minutes, neither past "ingest"). Now the second one
    says who holds the lock and waits for it in the kernel, using no CPU (``wait=True``), or raises RunAllBusy.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            if not wait:
                raise RunAllBusy(f"another tinybench run-all is running on this project ({holder}; lock {path}); "
                                 "it was not started (drop --no-wait to wait for it)") from None
            say(f"another tinybench run-all is running on this project ({holder}); waiting for it to finish "
                f"(lock {path}; Ctrl-C to give up)")
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


def run_all(args: argparse.Namespace) -> int:
    """Bring every partition up to date: materialize what is stale or missing (everything with --force),
    recording the runs in the Dagster instance. One run-all per project at a time (:func:`project_run_lock`)."""
    try:
        with project_run_lock(lock_path(), wait=not getattr(args, "no_wait", False),
                              say=lambda line: print(line, flush=True)):
            return _run_all(args)
    except RunAllBusy as e:
        print(f"tinybench run-all: {e}", file=sys.stderr)
        return 3


def _run_all(args: argparse.Namespace) -> int:
    from tinybench_assets.core.parallel import resolve_jobs
    from tinybench_assets.definitions import build_defs
    from tinybench_assets.defs.partitions import register_partitions
    from tinybench_assets.defs.orphans import mark_orphaned_runs, run_owner_tags
    from tinybench_assets.io.drops import split_partition_key
    from tinybench_assets.io.landing import pending_drops, seed_default_data
    from tinybench_assets.io.store import Store

    instance = _instance()
    # a run-all killed (SIGKILL, out of memory) left its run STARTED for ever, the UI showing it running: mark such
    # orphans FAILED first (we hold the project's run lock, so none of them is a live run-all of this project)
    for run_id, why in mark_orphaned_runs(instance, who=f"tinybench run-all (pid {os.getpid()})"):
        print(f"marked orphaned run {run_id} FAILED: {why}", flush=True)
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

    # this process's pid, host and start time on every run it executes: a later start tells an orphan by them
    owner = run_owner_tags()

    # the console shows warnings and errors only; every event still goes to the instance (the UI's run pages)
    quiet = {"loggers": {"console": {"config": {"log_level": args.log_level}}}}
    force = bool(getattr(args, "force", False))
    store = Store(paths.store_target())
    pending = pending_drops(store, paths.incoming_dir())
    if pending or force or not store.partition_keys():
        res = refresh(defs, instance, "ingest_landing", None, force=True, run_config=quiet, tags=owner)
        print(f"  ingest   {'ok' if res.success else 'FAILED'} ({len(pending)} new or changed file(s))", flush=True)
        if not res.success:
            return 1
    else:
        print(f"  ingest   nothing new in {paths.incoming_dir()}", flush=True)
    keys = store.partition_keys()
    if args.only:
        keys = [k for k in keys if any(k == o or k.startswith(o + ".") for o in args.only)]
    register_partitions(instance, keys)
    chains: dict[str, list[str]] = {}
    for key in keys:
        chains.setdefault(split_partition_key(key)[0], []).append(key)
    # leaderboards at once (--jobs 0: one per CORES_PER_CHAIN cores, so one after another on 2 cores)
    jobs = getattr(args, "jobs", 0) or max(1, resolve_jobs(0) // CORES_PER_CHAIN)
    jobs = resolve_jobs(jobs, len(chains))
    # several chains at once: each its share of the cores
    threads = getattr(args, "threads", 0) or (max(1, resolve_jobs(0) // jobs) if jobs > 1 else 0)
    if jobs > 1:
        print(f"  {len(chains)} leaderboards in {jobs} processes at once ({threads} thread(s) each): "
              f"{', '.join(chains)}", flush=True)
    materialized, failed = run_chains(chains, jobs, threads=threads, setup=(defs, instance, owner), force=force,
                                      log_level=args.log_level)
    print(f"{len(keys)} scenario partition(s) and {len(chains)} leaderboard(s) up to date in {time.time() - t0:.0f} s; "
          f"{materialized} asset materialization(s){' (--force)' if force else ''}")
    summary(argparse.Namespace())
    if failed:
        print(f"FAILED: {failed}", file=sys.stderr)
        return 1
    return 0


def run_chain(board: str, keys: list[str], force: bool = False, log_level: str = "WARNING",
              say=None, setup: tuple | None = None) -> tuple[int, list[str]]:
    """One leaderboard's chain: its scenario partitions in turn, then the leaderboard partition, each through
    :func:`~tinybench_assets.refresh.refresh` (stale or missing only, unless ``force``). Says a line per
    partition; returns (materializations, failed partition keys). ``setup``: the caller's (definitions, instance,
    owner tags) to reuse; built here when None (in a chain's own process)."""
    from tinybench_assets.refresh import refresh

    say = say or (lambda line: print(line, flush=True))
    if setup is None:
        from tinybench_assets.definitions import build_defs
        from tinybench_assets.defs.orphans import run_owner_tags

        setup = build_defs(), _instance(), run_owner_tags()
    defs, instance, owner = setup
    quiet = {"loggers": {"console": {"config": {"log_level": log_level}}}}
    failed, materialized = [], 0
    for job_name, key, label in [("refresh_scenario", k, "scenario") for k in keys] + [
            ("refresh_leaderboard", board, "leaderboard")]:
        r = refresh(defs, instance, job_name, key, force=force, run_config=quiet, tags=owner)
        materialized += len(r.materialized)
        what = "fresh, nothing to do" if r.fresh else f"{len(r.materialized)} materialized"
        say(f"  {label} {key:<28} {'ok' if r.success else 'FAILED'} in {r.seconds:6.1f} s  ({what})")
        if not r.success:
            failed.append(key)
    return materialized, failed


def _thread_budget(threads: int) -> None:
    """This process's torch / OpenMP / BLAS threads; set before the definitions are built, so the torch and encoder
    resources take it too ($TINYBENCH_TORCH_THREADS)."""
    from tinybench_assets.core.parallel import init_worker

    os.environ["TINYBENCH_TORCH_THREADS"] = str(threads)
    init_worker(threads)


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent (run-all) dies."""
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the chain finishes on its own
        return
    if os.getppid() == 1:  # the parent died before the signal was set
        os._exit(1)


def _chain_worker(tasks, results, threads: int, kw: dict) -> None:
    """A spawned process that runs chains from ``tasks`` until it reads None, sending its lines and results.
    It dies with its parent (Linux's parent-death signal): a SIGKILLed run-all leaves no chain writing on."""
    _die_with_parent()
    if threads > 0:
        _thread_budget(threads)
    while (task := tasks.get()) is not None:
        board, keys = task
        try:
            m, f = run_chain(board, keys, say=lambda line: results.put(("line", line)), **kw)
        except BaseException as exc:  # noqa: BLE001 - reported by the parent, which fails the run-all
            results.put(("line", f"  leaderboard {board:<28} FAILED: {type(exc).__name__}: {exc}"))
            m, f = 0, [board]
        results.put(("done", board, m, f))


def run_chains(chains: dict[str, list[str]], jobs: int, threads: int = 0, setup: tuple | None = None,
               **kw) -> tuple[int, list[str]]:
    """Every leaderboard's chain (:func:`run_chain`): in this process one after another (``jobs`` 1, reusing the
    caller's ``setup`` unless ``threads`` asks for a new thread budget, which the resources must be built under), or
    in ``jobs`` spawned processes at once, the chains with the most scenario partitions first, their lines printed
    here as they come. ``threads`` > 0 caps torch's and BLAS's CPU threads in each chain's process.

    Leaderboards share no assets, so their chains are independent; the store's connections wait for each other on
    the DuckDB file. Whether that pays depends on idle cores: on 2 cores it did not (see :data:`CORES_PER_CHAIN`)."""
    if jobs <= 1 or len(chains) <= 1:
        if threads > 0:
            _thread_budget(threads)
            setup = None
        done = [run_chain(b, k, setup=setup, **kw) for b, k in chains.items()]
        return sum(m for m, _ in done), [k for _, f in done for k in f]
    import multiprocessing as mp
    import queue as queue_mod

    ctx = mp.get_context("spawn")
    tasks, results = ctx.Queue(), ctx.Queue()
    for board in sorted(chains, key=lambda b: -len(chains[b])):
        tasks.put((board, chains[board]))
    workers = [ctx.Process(target=_chain_worker, args=(tasks, results, threads, kw)) for _ in range(jobs)]
    for w in workers:
        tasks.put(None)
        w.start()
    materialized, failed, pending = 0, [], set(chains)
    try:
        while pending:
            try:
                msg = results.get(timeout=1.0)
            except queue_mod.Empty:
                if not any(w.is_alive() for w in workers):  # a worker died (killed, out of memory) mid-chain
                    print(f"  leaderboard process(es) died; not finished: {sorted(pending)}", flush=True)
                    failed += sorted(pending)
                    break
                continue
            if msg[0] == "line":
                print(msg[1], flush=True)
            else:
                _, board, m, f = msg
                pending.discard(board)
                materialized += m
                failed += f
    finally:  # never leave a chain running: SIGTERM (Dagster stops its run), then SIGKILL if it does not end
        for w in workers:
            w.join(timeout=5)
        for stop in ("terminate", "kill"):
            for w in workers:
                if w.is_alive():
                    getattr(w, stop)()
            for w in workers:
                w.join(timeout=15)
    return materialized, failed
