"""How ``tinybench run-all`` runs its refreshes: units of work (one job on one partition, through
:func:`~tinybench_assets.refresh.refresh`) grouped into tasks, in this process or in spawned worker processes.

Two ways to spread them over the cores:

- **scenario phase** (the default when there are at least 2 cores and 2 scenario partitions): every scenario
  partition of every leaderboard is its own task, run in one worker process per core with one thread each, the
  largest first (most question texts to embed, then most items); then the leaderboards, in run-all's own process
  with all its threads (their fits spread over the cores themselves). Scenario steps scale poorly on threads
  (an IRT fit on 2 threads is 1.12x its 1-thread speed), one-thread processes side by side nearly 2x.
- **leaderboard chains** (``--jobs N``): a leaderboard's scenarios, then the leaderboard, per task, N tasks at once.
  Measured on 2 cores (issue 12): two one-thread chains took 720 s cold against 640 s one after another, so the
  default is one chain per :data:`CORES_PER_CHAIN` cores.

Workers are spawned (no forked Dagster or torch state), die with run-all (Linux's parent-death signal), send their
lines to run-all's console through a queue, and are stopped (SIGTERM, then SIGKILL) when run-all stops.
"""
from __future__ import annotations

import os

#: cores per leaderboard chain when run-all picks how many leaderboards to refresh at once (``--jobs 0``). Measured on
#: 2 cores (issue 12): two one-thread chains took 720 s cold against 640 s one after another (CPU-bound throughout: both
#: cores ~1.9 busy either way); two two-thread chains oversubscribed the cores (openllm's scenario steps 4-6x slower).
CORES_PER_CHAIN = 4

Unit = tuple  # (job name, partition key, label): "refresh_scenario", "openllm.arc", "scenario"


def scenario_unit(key: str) -> Unit:
    return ("refresh_scenario", key, "scenario")


def leaderboard_unit(board: str) -> Unit:
    return ("refresh_leaderboard", board, "leaderboard")


def _instance():
    from tinybench_assets.cli.run_all import _instance as instance

    return instance()


def run_units(units: list[Unit], force: bool = False, log_level: str = "WARNING", say=None,
              setup: tuple | None = None) -> tuple[int, list[str]]:
    """Refresh each unit in turn (stale or missing assets only, unless ``force``), saying a line per unit; returns
    (materializations, failed partition keys). ``setup``: the caller's (definitions, instance, owner tags) to reuse;
    built here when None (in a worker's own process)."""
    from tinybench_assets.refresh import refresh

    say = say or (lambda line: print(line, flush=True))
    if setup is None:
        from tinybench_assets.definitions import build_defs
        from tinybench_assets.defs.orphans import run_owner_tags

        setup = build_defs(), _instance(), run_owner_tags()
    defs, instance, owner = setup
    quiet = {"loggers": {"console": {"config": {"log_level": log_level}}}}
    failed, materialized = [], 0
    for job_name, key, label in units:
        r = refresh(defs, instance, job_name, key, force=force, run_config=quiet, tags=owner)
        materialized += len(r.materialized)
        what = "fresh, nothing to do" if r.fresh else f"{len(r.materialized)} materialized"
        say(f"  {label} {key:<28} {'ok' if r.success else 'FAILED'} in {r.seconds:6.1f} s  ({what})")
        if not r.success:
            failed.append(key)
    return materialized, failed


def run_chain(board: str, keys: list[str], **kw) -> tuple[int, list[str]]:
    """One leaderboard's chain: its scenario partitions in turn, then the leaderboard partition."""
    return run_units([scenario_unit(k) for k in keys] + [leaderboard_unit(board)], **kw)


def thread_budget(threads: int) -> None:
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
    except (OSError, AttributeError):  # not Linux: the worker finishes on its own
        return
    if os.getppid() == 1:  # the parent died before the signal was set
        os._exit(1)


def _worker(tasks, results, threads: int, kw: dict) -> None:
    """A spawned process that runs tasks (name, units) from ``tasks`` until it reads None, sending its lines and
    results. It dies with its parent: a SIGKILLed run-all leaves no worker writing on."""
    _die_with_parent()
    if threads > 0:
        thread_budget(threads)
    while (task := tasks.get()) is not None:
        name, units = task
        try:
            m, f = run_units(units, say=lambda line: results.put(("line", line)), **kw)
        except BaseException as exc:  # noqa: BLE001 - reported by the parent, which fails the run-all
            results.put(("line", f"  {units[-1][2]} {name:<28} FAILED: {type(exc).__name__}: {exc}"))
            m, f = 0, [name]
        results.put(("done", name, m, f))


def run_parallel(tasks: dict[str, list[Unit]], jobs: int, threads: int = 0, **kw) -> tuple[int, list[str]]:
    """Run ``tasks`` ({name: units}, in the order given) in ``jobs`` spawned worker processes, their lines printed
    here as they come; ``threads`` > 0 caps torch's and BLAS's CPU threads in each worker."""
    import multiprocessing as mp
    import queue as queue_mod

    ctx = mp.get_context("spawn")
    todo, results = ctx.Queue(), ctx.Queue()
    for name, units in tasks.items():
        todo.put((name, units))
    workers = [ctx.Process(target=_worker, args=(todo, results, threads, kw)) for _ in range(jobs)]
    for w in workers:
        todo.put(None)
        w.start()
    materialized, failed, pending = 0, [], set(tasks)
    try:
        while pending:
            try:
                msg = results.get(timeout=1.0)
            except queue_mod.Empty:
                if not any(w.is_alive() for w in workers):  # a worker died (killed, out of memory) mid-task
                    print(f"  worker process(es) died; not finished: {sorted(pending)}", flush=True)
                    failed += sorted(pending)
                    break
                continue
            if msg[0] == "line":
                print(msg[1], flush=True)
            else:
                _, name, m, f = msg
                pending.discard(name)
                materialized += m
                failed += f
    finally:  # never leave a worker running: SIGTERM (Dagster stops its run), then SIGKILL if it does not end
        for w in workers:
            w.join(timeout=5)
        for stop in ("terminate", "kill"):
            for w in workers:
                if w.is_alive():
                    getattr(w, stop)()
            for w in workers:
                w.join(timeout=15)
    return materialized, failed


def run_chains(chains: dict[str, list[str]], jobs: int, threads: int = 0, setup: tuple | None = None,
               **kw) -> tuple[int, list[str]]:
    """Every leaderboard's chain (:func:`run_chain`): in this process one after another (``jobs`` 1, reusing the
    caller's ``setup`` unless ``threads`` asks for a new thread budget, which the resources must be built under), or
    in ``jobs`` worker processes at once, the chains with the most scenario partitions first.

    Leaderboards share no assets, so their chains are independent; the store's connections wait for each other on
    the DuckDB file. Whether that pays depends on idle cores: on 2 cores it did not (see :data:`CORES_PER_CHAIN`)."""
    if jobs <= 1 or len(chains) <= 1:
        if threads > 0:
            thread_budget(threads)
            setup = None
        done = [run_chain(b, k, setup=setup, **kw) for b, k in chains.items()]
        return sum(m for m, _ in done), [k for _, f in done for k in f]
    order = sorted(chains, key=lambda b: -len(chains[b]))
    return run_parallel({b: [scenario_unit(k) for k in chains[b]] + [leaderboard_unit(b)] for b in order},
                        jobs, threads, **kw)


def largest_first(store, keys: list[str]) -> list[str]:
    """Scenario partitions ordered by their expected work, largest first: the most question texts (the router stage
    embeds them), then the most landed items (IRT fits, matrices); ties by key. Keeps the longest task from
    starting last when the partitions are spread over workers."""
    sizes = store.query("SELECT leaderboard || '.' || scenario AS k, count(*) AS items, count(text) AS texts "
                        "FROM items GROUP BY 1")
    size = {r.k: (int(r.texts), int(r.items)) for r in sizes.itertuples()}
    return sorted(keys, key=lambda k: (-size.get(k, (0, 0))[0], -size.get(k, (0, 0))[1], k))


def run_scenario_phase(keys: list[str], boards: list[str], jobs: int, store, setup: tuple | None = None,
                       **kw) -> tuple[int, list[str]]:
    """The scenario partitions ``keys`` in ``jobs`` one-thread worker processes (largest first), then every leaderboard
    of ``boards`` in this process (reusing ``setup``) with its own thread budget."""
    m1, f1 = run_parallel({k: [scenario_unit(k)] for k in largest_first(store, keys)}, jobs, threads=1, **kw)
    m2, f2 = run_units([leaderboard_unit(b) for b in boards], setup=setup, **kw)
    return m1 + m2, f1 + f2
