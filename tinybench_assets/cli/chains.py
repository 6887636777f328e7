"""How ``tinybench run-all`` runs its refreshes: units of work (one job on one partition, through
:func:`~tinybench_assets.orchestration.refresh.refresh`) grouped into tasks, in this process or in spawned worker processes.

Two ways to spread them over the cores:

- **scenario phase** (the default when there are at least 2 cores and 2 scenario partitions to refresh): every scenario
  partition with work to do and every leaderboard is its own task, run in one worker process per core with one thread
  each; a leaderboard starts as soon as its own scenario partitions are done, and the leaderboard with the most landed
  responses goes first with its scenarios (:func:`scenario_phase_plan`), so its long fits (spread over the cores by
  their own worker pools) run beside the other leaderboards' scenarios. Scenario steps scale poorly on threads (an IRT
  fit on 2 threads is 1.12x its 1-thread speed), one-thread processes side by side nearly 2x. Measured on 2 cores:
  cold run-all 437 s, against 483 s with the leaderboards after all scenarios and 640 s all in one process.
- **leaderboard chains** (``--jobs N``): a leaderboard's scenarios, then the leaderboard, per task, N tasks at once.
  Measured on 2 cores: two one-thread chains took 720 s cold against 640 s one after another, so the default is one
  chain per :data:`CORES_PER_CHAIN` cores.

Workers are spawned (no forked Dagster or torch state), die with run-all (Linux's parent-death signal), send their
lines to run-all's console through a queue, and are stopped (SIGTERM, then SIGKILL) when run-all stops. Their runs
carry run-all's id (``run_units``' ``tags``), so run-all's feed prints what their steps log while they run
(cli/run_feed.py).
"""

from __future__ import annotations

import os
from pathlib import Path

from tinybench_assets import paths

# cli: lazy (see cli/__init__.py): subcommands import what they run inside their functions

#: cores per leaderboard chain when run-all picks how many leaderboards to refresh at once (``--jobs 0``). Measured on
#: 2 cores: two one-thread chains took 720 s cold against 640 s one after another (CPU-bound throughout: both
#: cores ~1.9 busy either way); two two-thread chains oversubscribed the cores (openllm's scenario steps 4-6x slower).
CORES_PER_CHAIN = 4

Unit = tuple  # (job name, partition key, label): "refresh_scenario", "openllm.arc", "scenario"


def scenario_unit(key: str) -> Unit:
    return ("refresh_scenario", key, "scenario")


def leaderboard_unit(board: str) -> Unit:
    return ("refresh_leaderboard", board, "leaderboard")


def project_instance():
    """The project's Dagster instance ($DAGSTER_HOME, else .dagster_home/ from dagster.yaml.template), with its
    pools enforced per run rather than per op for run-all's own runs.

    run-all's runs execute in-process; with op-level pools Dagster's in-process executor polls a busy pool slot
    without sleeping, and two leaderboard chains of one run-all would take turns asset by asset. One run-all per
    project at a time is already guaranteed by its run lock, and the store's connections wait for the DuckDB
    file's lock, so run-all's runs claim no op slots; runs launched from the UI keep the instance's op-level pool.
    """
    import dagster as dg
    import yaml

    from tinybench_assets.orchestration.dagster_private import InstanceRef

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


def run_units(
    units: list[Unit],
    force: bool = False,
    log_level: str = "WARNING",
    say=None,
    setup: tuple | None = None,
    tags: dict | None = None,
) -> tuple[int, list[str]]:
    """Refresh each unit in turn (stale or missing assets only, unless ``force``), saying a line per unit; returns
    (materializations, failed partition keys). ``setup``: the caller's (definitions, instance, owner tags) to reuse;
    built here when None (in a worker's own process). ``tags``: more tags for every run (run-all's id, which its
    feed of the runs' log lines follows: cli/run_feed.py)."""
    from tinybench_assets.cli.run_feed import echo
    from tinybench_assets.orchestration.refresh import refresh

    say = say or echo
    if setup is None:
        from tinybench_assets.definitions import build_defs
        from tinybench_assets.orchestration.orphans import run_owner_tags

        setup = build_defs(), project_instance(), run_owner_tags()
    defs, instance, owner = setup
    owner = {**owner, **(tags or {})}
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


def _worker(wid: int, tasks, results, threads: int, kw: dict) -> None:
    """A spawned process that runs the tasks (name, units) it is sent until it reads None, sending its lines and
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
        results.put(("done", wid, name, m, f))


def run_parallel(
    tasks: dict[str, list[Unit]], jobs: int, threads: int = 0, after: dict[str, set] | None = None, **kw
) -> tuple[int, list[str]]:
    """Run ``tasks`` ({name: units}) in ``jobs`` spawned worker processes, their lines printed here as they come;
    ``threads`` > 0 caps torch's and BLAS's CPU threads in each worker. A free worker gets the first task, in the
    order given, whose tasks in ``after`` ({name: names it waits for}) have all finished (failed or not)."""
    import multiprocessing as mp
    import queue as queue_mod

    from tinybench_assets.cli.run_feed import echo

    after = {k: set(v) & set(tasks) for k, v in (after or {}).items()}
    ctx = mp.get_context("spawn")
    inbox, results = [ctx.Queue() for _ in range(jobs)], ctx.Queue()
    workers = [ctx.Process(target=_worker, args=(w, inbox[w], results, threads, kw)) for w in range(jobs)]
    for w in workers:
        w.start()
    todo, finished, running, closed = list(tasks), set(), {}, set()

    def dispatch_idle() -> None:
        """Each live worker without a task gets the first ready one, None when nothing is left, or waits."""
        for w in range(jobs):
            if w in running or w in closed or not workers[w].is_alive():
                continue
            ready = next((t for t in todo if after.get(t, set()) <= finished), None)
            if ready is not None:
                todo.remove(ready)
                running[w] = ready
                inbox[w].put((ready, tasks[ready]))
            elif not todo:
                closed.add(w)
                inbox[w].put(None)

    dispatch_idle()
    materialized, failed = 0, []
    try:
        while len(finished) < len(tasks):
            try:
                msg = results.get(timeout=1.0)
            except queue_mod.Empty:
                for w, name in list(running.items()):  # a worker died (killed, out of memory) mid-task
                    if not workers[w].is_alive():
                        echo(f"  worker process {w} died while refreshing {name}")
                        running.pop(w)
                        finished.add(name)
                        failed.append(name)
                dispatch_idle()  # what waited for it may start now (it counts as finished, failed)
                if not any(w.is_alive() for w in workers):  # nobody left to do the rest
                    lost = sorted(set(tasks) - finished)
                    if lost:
                        echo(f"  worker process(es) died; not finished: {lost}")
                    failed += lost
                    break
                continue
            if msg[0] == "line":
                echo(msg[1])
                continue
            _, wid, name, m, f = msg
            running.pop(wid, None)
            finished.add(name)
            materialized += m
            failed += f
            dispatch_idle()  # this worker, and those waiting for what it just finished
    finally:  # never leave a worker running: None to the idle, then SIGTERM (Dagster stops its run), then SIGKILL
        for q in inbox:
            q.put(None)
        for w in workers:
            w.join(timeout=5)
        for stop in ("terminate", "kill"):
            for w in workers:
                if w.is_alive():
                    getattr(w, stop)()
            for w in workers:
                w.join(timeout=15)
    return materialized, failed


def run_chains(
    chains: dict[str, list[str]], jobs: int, threads: int = 0, setup: tuple | None = None, **kw
) -> tuple[int, list[str]]:
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
    return run_parallel(
        {b: [scenario_unit(k) for k in chains[b]] + [leaderboard_unit(b)] for b in order}, jobs, threads, **kw
    )


def partition_sizes(store) -> dict[str, tuple[int, int]]:
    """{scenario partition: (question texts, landed responses)}: the router stage embeds the texts, the IRT fits and
    matrices grow with the responses."""
    texts = store.query("SELECT leaderboard || '.' || scenario AS k, count(text) AS n FROM items GROUP BY 1")
    rows = store.query("SELECT partition_key AS k, count(*) AS n FROM responses GROUP BY 1")
    t, r = dict(zip(texts.k, texts.n)), dict(zip(rows.k, rows.n))
    return {k: (int(t.get(k, 0)), int(r.get(k, 0))) for k in t.keys() | r.keys()}


def scenario_phase_plan(sizes: dict, chains: dict[str, list[str]]) -> tuple[dict, dict]:
    """The tasks of the scenario phase in dispatch order, and what each leaderboard waits for. ``chains``:
    {leaderboard: its scenario partitions to refresh here (possibly none)}. Leaderboards by their landed responses
    (largest first: its leaderboard-level fits are the longest task, so its scenarios go first and it starts early),
    each one's scenario partitions (most texts, then most responses, first), then the leaderboard itself, which
    waits for them."""
    size = lambda k: sizes.get(k, (0, 0))  # noqa: E731
    weight = {b: sum(size(k)[1] for k in keys) for b, keys in chains.items()}
    tasks, after = {}, {}
    for b in sorted(chains, key=lambda b: (-weight[b], b)):
        for k in sorted(chains[b], key=lambda k: (-size(k)[0], -size(k)[1], k)):
            tasks[k] = [scenario_unit(k)]
        tasks[b] = [leaderboard_unit(b)]
        after[b] = set(chains[b])
    return tasks, after


def run_scenario_phase(chains: dict[str, list[str]], jobs: int, store, **kw) -> tuple[int, list[str]]:
    """The scenario partitions and leaderboards of ``chains`` ({leaderboard: its scenario partitions to refresh}) in
    ``jobs`` one-thread worker processes: a leaderboard starts as soon as its scenario partitions are done (see
    :func:`scenario_phase_plan`), beside the other leaderboards' scenario partitions, its own fits spread over the
    cores by their worker pools."""
    tasks, after = scenario_phase_plan(partition_sizes(store), chains)
    return run_parallel(tasks, jobs, threads=1, after=after, **kw)
