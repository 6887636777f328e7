"""The distributed profile run for real (issue 53): a throwaway Redis broker and PostgreSQL server, two Celery workers
(``tinybench worker``: one on the default queue, one on ``gpu``), and a real scenario partition with its leaderboard
materialized through them, compared with the same runs in one process.

``distributed_check(incoming, work)`` runs, on the landing folder ``incoming`` (an openllm slice with one scenario):

1. the in-process reference: ingest, ``refresh_scenario`` of ``openllm.arc`` and ``refresh_leaderboard`` of ``openllm``
   with Dagster's in-process executor, in a child process with the workers' environment (one torch / BLAS thread),
   results in one PostgreSQL database;
2. the same three runs through the workers (``deploy_profiles.celery_defs``, launched from this process), results in
   another database; where each step ran is read from the event log (dagster-celery's "Executing steps ... in celery
   worker" engine event names the worker's node; the step's events carry the pid of the process that ran it, which
   must be a pool process of that worker); every stored row of both databases is compared (floats to 1e-12);
3. a worker killed in the middle of a step: ``refresh_leaderboard`` again through the workers, the gpu worker's pool
   process SIGKILLed once it has started ``anchor_sets``; the run must end FAILED, the store must hold exactly what it
   held before (nothing half-written, nothing lost), and Dagster's re-execution of the failed run from its failure
   must complete, the store still equal to the reference.

Every server and worker started here is stopped by the ids this module started. Used by
tinybench_assets_tests/test_deploy/test_celery.py and benchmarks/reliability.py (``distributed``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg

from tinybench_assets.io.store import Store
from tinybench_assets.paths import PROJECT_ROOT as ROOT
from tinybench_assets.testing.celery_workers import Worker, stop_all
from tinybench_assets.testing.parity import compare, stored_rows

LEADERBOARD, KEY = "openllm", "openllm.arc"
RUNS = (("ingest_landing", None), ("refresh_scenario", KEY), ("refresh_leaderboard", LEADERBOARD))
KILL_STEP = "anchor_sets"  # a GPU op of the leaderboard that writes several tables, some seconds long
PROFILE = ("tinybench_assets.deploy_profiles", "celery_defs")


@dataclass
class Cluster:
    work: Path
    env: dict  # the workers' environment, which the orchestrating process takes on too
    urls: dict  # results databases: "workers", "in_process"
    redis_pid: int
    workers: dict = field(default_factory=dict)  # queue -> Worker
    instance: dg.DagsterInstance | None = None


@contextmanager
def environ(updates: dict):
    """``os.environ`` with ``updates`` inside the block, as it was after it."""
    old = {k: os.environ.get(k) for k in updates}
    os.environ.update(updates)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextmanager
def cluster(work: Path, incoming: Path):
    """Redis, PostgreSQL (an instance database and two results databases) and the two workers; everything stopped at
    the end, whatever happened."""
    from tinybench_assets.testing.pg_server import PostgresServer
    from tinybench_assets.testing.redis_server import RedisServer

    work.mkdir(parents=True, exist_ok=True)
    redis, pg, c = RedisServer(), PostgresServer(), None
    try:
        redis.start()
        pg.start()
        pg.create_db("dagster")
        home = work / "dagster_home"
        home.mkdir(exist_ok=True)
        shutil.copy(ROOT / "deploy" / "dagster.yaml", home / "dagster.yaml")
        env = {
            "DAGSTER_HOME": str(home),
            **dict(DAGSTER_PG_HOST=pg.host, DAGSTER_PG_PORT=str(pg.port), DAGSTER_PG_USER="tinybench"),
            **dict(DAGSTER_PG_PASSWORD="unused-trust-auth", DAGSTER_PG_DB="dagster"),
            "TINYBENCH_INCOMING": str(incoming),
            "TINYBENCH_CELERY_BROKER": redis.url(0),
            "TINYBENCH_CELERY_BACKEND": redis.url(1),
            **{v: "1" for v in ("TINYBENCH_TORCH_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")},
            **dict(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false"),
            "PYTHONPATH": str(ROOT),
        }
        c = Cluster(work, env, {k: pg.create_db(f"results_{k}") for k in ("workers", "in_process")}, redis.proc.pid)
        worker_env = {**os.environ, **env, **_results_env(c, "workers")}
        c.workers = {
            "dagster": Worker("dagster", "default", worker_env, work / "worker_default.log"),
            "gpu": Worker("gpu", "gpu", worker_env, work / "worker_gpu.log"),
        }
        for w in c.workers.values():
            w.start()
        for w in c.workers.values():
            w.wait_ready()
        with environ({**env, **_results_env(c, "workers")}):
            c.instance = dg.DagsterInstance.from_config(str(home))
            try:
                yield c
            finally:
                c.instance.dispose()
    finally:
        try:
            stop_all(c.workers.values() if c else [])
        finally:
            redis.stop()
            pg.stop()


def _results_env(c: Cluster, which: str) -> dict:
    return {
        "TINYBENCH_STORE": c.urls[which],
        "TINYBENCH_QUARANTINE": str(c.work / f"quarantine_{which}"),
        "TINYBENCH_ARTIFACTS": str(c.work / f"artifacts_{which}"),
    }


# ------------------------------------------------------------------------------------------------ runs
def celery_job(name: str):
    """The job as the distributed code location serves it (``-m tinybench_assets.deploy_profiles -a celery_defs``,
    deploy/workspace_celery.yaml): the pointer the workers load it from."""
    from tinybench_assets.orchestration.dagster_private import ReconstructableRepository

    module, attr = PROFILE
    return ReconstructableRepository.for_module(module, attr, working_directory=str(ROOT)).get_reconstructable_job(name)


def through_workers(instance, job: str, key: str | None, reexecute: str | None = None):
    """One run of ``job`` (partition ``key``) with its steps on the workers; this process orchestrates it."""
    options = dg.ReexecutionOptions.from_failure(reexecute, instance) if reexecute else None
    tags = {"dagster/partition": key} if key else None  # a re-execution from Python takes no tag of its parent's
    return dg.execute_job(celery_job(job), instance=instance, tags=tags, reexecution_options=options)


def in_process_child(env: dict) -> dict:
    """The reference runs in a child process (``python -m tinybench_assets.testing.distributed``) with ``env``:
    returns its seconds and run ids."""
    proc = subprocess.run(
        [sys.executable, "-m", "tinybench_assets.testing.distributed"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"in-process reference failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _in_process_main() -> None:
    """The reference (child process): the three runs with Dagster's in-process executor on $DAGSTER_HOME's instance."""
    from tinybench_assets.definitions import build_defs

    defs, out = build_defs(), {"run_ids": []}
    with dg.DagsterInstance.get() as instance:
        t0 = time.perf_counter()
        for job, key in RUNS:
            res = defs.resolve_job_def(job).execute_in_process(instance=instance, partition_key=key)
            out["run_ids"].append(res.run_id)
        out["seconds"] = time.perf_counter() - t0
    print(json.dumps(out))


# ------------------------------------------------------------------------------------------------ evidence
def probes(c: Cluster, timeout: float = 120) -> dict:
    """deploy_profiles.probe run by each worker through its queue: {queue: its answer and whether the pid that
    answered is one of that worker's pool processes}."""
    from tinybench_assets.deploy_profiles import PROBE_TASK, celery_app

    app, out = celery_app(), {}
    for queue, w in c.workers.items():
        answer = app.send_task(PROBE_TASK, queue=queue, routing_key=f"{queue}.probe").get(timeout=timeout)
        out[queue] = {**answer, "in_pool": answer["pid"] in w.pool_pids()}
    return out


def placement(instance, run_ids) -> dict[str, dict]:
    """step key -> {"node": the Celery worker dagster-celery says ran it, "pid": the pid on its step events}, over the
    runs ``run_ids`` (a step run twice keeps its last)."""
    out: dict[str, dict] = {}
    for run_id in run_ids:
        for rec in instance.all_logs(run_id):
            ev = rec.dagster_event
            if ev is None or not ev.step_key:
                continue
            slot = out.setdefault(ev.step_key, {"node": None, "pid": None, "succeeded": False})
            if ev.is_engine_event and "Celery worker" in ev.engine_event_data.metadata:
                slot["node"] = ev.engine_event_data.metadata["Celery worker"].value
            elif ev.event_type == dg.DagsterEventType.STEP_START:
                slot["pid"] = ev.pid
            elif ev.event_type == dg.DagsterEventType.STEP_SUCCESS:
                slot["succeeded"] = True
    return out


def placement_figures(where: dict[str, dict], workers: dict) -> dict:
    """steps, steps_on_workers (named by the event log after a worker of ours, their pid one of its pool processes),
    gpu_ops_on_gpu_worker (the GPU ops, and only they, on the gpu worker)."""
    from tinybench_assets.defs.assets import all_assets
    from tinybench_assets.deploy_profiles import gpu_ops

    pools = {w.node: set(w.pool_pids()) for w in workers.values()}
    on_workers = {k for k, s in where.items() if s["node"] in pools and s["pid"] in pools[s["node"]]}
    gpu = set(gpu_ops(all_assets))
    on_gpu = {k for k, s in where.items() if s["node"] == workers["gpu"].node}
    ran_gpu = {k for k in where if k in gpu}
    return {
        "steps": len(where),
        "steps_on_workers": len(on_workers & {k for k, s in where.items() if s["succeeded"]}),
        "gpu_ops_on_gpu_worker": bool(ran_gpu) and on_gpu == ran_gpu,
        "gpu_steps": sorted(ran_gpu),
        "not_on_workers": sorted(set(where) - on_workers),
    }


def stored(url: str) -> dict:
    """Every ingest table and the rows of the scenario partition and of the leaderboard (parity.stored_rows)."""
    store = Store(url)
    return {f"{t} [{k}]": df for k in (KEY, LEADERBOARD) for t, df in stored_rows(store, k).items()}


def kill_mid_step(c: Cluster, step: str = KILL_STEP, timeout: float = 300) -> dict:
    """``refresh_leaderboard`` through the workers, the gpu worker's pool process SIGKILLed inside ``step``; then the
    failed run re-executed from its failure. Returns what happened."""
    gpu, instance, url = c.workers["gpu"], c.instance, c.urls["workers"]
    before, box = stored(url), {}
    known = {r.run_id for r in instance.get_runs()}

    def orchestrate():
        try:
            with dg.DagsterInstance.from_config(c.env["DAGSTER_HOME"]) as own:
                box["result"] = through_workers(own, *RUNS[2])
        except BaseException as exc:  # noqa: BLE001 - reported below
            box["error"] = exc

    thread = threading.Thread(target=orchestrate, daemon=True)
    t0 = time.perf_counter()
    thread.start()
    run_id, pid, deadline = None, None, time.monotonic() + timeout
    while pid is None and time.monotonic() < deadline and thread.is_alive():
        new = [r for r in instance.get_runs() if r.run_id not in known]
        run_id = new[0].run_id if new else None
        if run_id:
            starts = instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.STEP_START).records
            pid = next(
                (r.event_log_entry.dagster_event.pid for r in starts if r.event_log_entry.step_key == step), None
            )
        time.sleep(0.1)
    if pid is None:
        thread.join(timeout)
        raise RuntimeError(f"step {step} never started on a worker (run {run_id}): {box}")
    time.sleep(0.5)  # inside the step: past its start, before its write (the step takes seconds)
    pool = gpu.pool_pids()
    killed = pid in pool  # only a process of the worker this module started
    if killed:
        os.kill(pid, signal.SIGKILL)
    thread.join(timeout)
    seconds_to_fail = time.perf_counter() - t0
    status = instance.get_run_by_id(run_id).status if run_id else None
    problems, _ = compare(before, stored(url))
    failures = instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.STEP_FAILURE).records if run_id else []
    t1 = time.perf_counter()
    rerun = through_workers(instance, *RUNS[2], reexecute=run_id) if status == dg.DagsterRunStatus.FAILURE else None
    return {
        "killed_pid": pid,
        "was_gpu_pool_process": killed,
        "run_status": str(status),
        "failed_steps": sorted(r.event_log_entry.step_key for r in failures),
        "store_unchanged": not problems,
        "store_problems": problems,
        "rerun_success": bool(rerun and rerun.success),
        "rerun_id": rerun.run_id if rerun else None,
        "rerun_steps": sorted(placement(instance, [rerun.run_id])) if rerun else [],
        "seconds_to_fail": round(seconds_to_fail, 1),
        "seconds_rerun": round(time.perf_counter() - t1, 1),
    }


def distributed_check(incoming: Path, work: Path, kill: bool = True) -> dict:
    """The whole check (module docstring). Returns the ``distributed`` figures of benchmarks/reliability.py (steps,
    steps_on_workers, gpu_ops_on_gpu_worker, tables_equal_in_process, worker_killed_recovered, seconds_workers,
    seconds_in_process) and the details behind them."""
    t_start = time.perf_counter()
    with cluster(work, incoming) as c:
        started = time.perf_counter() - t_start
        probed = probes(c)
        probed["seconds"] = round(time.perf_counter() - t_start - started, 1)
        ref = in_process_child({**os.environ, **c.env, **_results_env(c, "in_process")})
        t0 = time.perf_counter()
        results = [through_workers(c.instance, job, key) for job, key in RUNS]
        seconds_workers = time.perf_counter() - t0
        where = placement(c.instance, [r.run_id for r in results])
        figures = placement_figures(where, c.workers)
        reference = stored(c.urls["in_process"])
        problems, worst = compare(reference, stored(c.urls["workers"]))
        killed = kill_mid_step(c) if kill else {}
        if kill:
            after, _ = compare(reference, stored(c.urls["workers"]))
            rerun_where = placement(c.instance, [killed["rerun_id"]]) if killed["rerun_id"] else {}
            killed["rerun_on_gpu_worker"] = rerun_where.get(KILL_STEP, {}).get("node") == c.workers["gpu"].node
            killed["tables_equal_after_rerun"] = not after
        pids = {
            "workers": [w.pid for w in c.workers.values()],
            "pools": [p for w in c.workers.values() for p in w.pool_pids()],
            "redis": [c.redis_pid],
        }
    recovered = bool(
        killed
        and killed["was_gpu_pool_process"]
        and killed["run_status"] == str(dg.DagsterRunStatus.FAILURE)
        and killed["store_unchanged"]
        and killed["rerun_success"]
        and killed["tables_equal_after_rerun"]
        and killed["rerun_on_gpu_worker"]
    )
    return {
        "steps": figures["steps"],
        "steps_on_workers": figures["steps_on_workers"],
        "gpu_ops_on_gpu_worker": figures["gpu_ops_on_gpu_worker"],
        "tables_equal_in_process": all(r.success for r in results) and not problems and len(reference) > 0,
        "worker_killed_recovered": recovered,
        "seconds_workers": round(seconds_workers, 1),
        "seconds_in_process": round(ref["seconds"], 1),
        "details": {
            "runs_succeeded": [r.success for r in results],
            "tables": len(reference),
            "rows": int(sum(len(df) for df in reference.values())),
            "max_abs_float_diff": worst,
            "problems": problems,
            "gpu_steps": figures["gpu_steps"],
            "not_on_workers": figures["not_on_workers"],
            "placement": where,
            "probes": probed,
            "kill": killed,
            "started_pids": pids,
            "seconds_cluster_start": round(started, 1),
            "seconds_total": round(time.perf_counter() - t_start, 1),
        },
    }


if __name__ == "__main__":
    _in_process_main()
