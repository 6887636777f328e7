"""The distributed profile for real (issue 53, deploy/README.md): dagster-celery's executor over a throwaway Redis
broker, the instance and the results on a throwaway PostgreSQL server, two real Celery workers (``tinybench worker``:
the default queue and ``gpu``). A scenario partition of the real openllm slice and its leaderboard run through them:
every step in a worker's pool process, the GPU ops only on the gpu worker, the stored rows equal to an in-process
run's; a worker process SIGKILLed inside a step fails the run, leaves the store as it was, and Dagster's re-execution
from the failure completes (tinybench_assets/testing/distributed.py, which benchmarks/reliability.py reuses)."""

from __future__ import annotations

import os
import time

import dagster as dg
import pytest
import yaml

from tinybench_assets import deploy_profiles as dp
from tinybench_assets.testing import reliability_data as rd

pytest.importorskip("dagster_celery", reason="the distributed profile needs the celery extra (pip install -e '.[dev]')")

GPU_OPS = {
    "irt_model",
    "irt_joint",
    "anchor_sets",
    "estimation_backtest",
    "question_embeddings",
    "router_accuracy",
    "leaderboard_router",
}


def test_celery_profile_loads_with_the_gpu_queue_on_exactly_the_gpu_ops(monkeypatch):
    monkeypatch.setenv("TINYBENCH_CELERY_BROKER", "redis://broker.example:6379/0")
    monkeypatch.delenv("TINYBENCH_CELERY_BACKEND", raising=False)
    monkeypatch.setenv(dp.DEVICE_ENV, "cpu")
    defs = dp.celery_defs()
    dg.Definitions.validate_loadable(defs)
    for name in ("ingest_landing", "refresh_scenario", "refresh_leaderboard"):
        job = defs.resolve_job_def(name)
        assert job.executor_def.name == "tinybench_celery"
        queued = {n.name for n in job.nodes if n.tags.get(dp.CELERY_QUEUE_TAG) == dp.GPU_QUEUE}
        assert queued == GPU_OPS & {n.name for n in job.nodes}
    cfg = job.executor_def.config_schema.resolve_config({})
    assert cfg.success, cfg.errors
    config = cfg.value["config"]
    assert config["broker"] == config["backend"] == "redis://broker.example:6379/0"
    assert config["config_source"]["task_acks_late"] is True
    assert config["config_source"]["broker_transport_options"]["visibility_timeout"] == 3600
    assert defs.resources["torch_device"].device == "cpu" and defs.resources["encoder"].device == "cpu"
    # deploy/workspace_celery.yaml serves this profile
    (entry,) = yaml.safe_load((rd.ROOT / "deploy" / "workspace_celery.yaml").read_text())["load_from"]
    assert entry["python_module"]["module_name"] == dp.__name__ and entry["python_module"]["attribute"] == "celery_defs"
    # the workers' app: the same broker, dagster-celery's step task, late acknowledgement
    app = dp.celery_app()
    assert app.conf.broker_url == "redis://broker.example:6379/0" and app.conf.task_acks_late
    assert "execute_plan" in app.tasks


def test_worker_command_line(monkeypatch):
    from tinybench_assets.cli import worker as cli_worker

    argv = cli_worker.worker_argv(["gpu"], "gpu", 1)
    assert argv[:3] == ["worker", "--queues", "gpu"] and "gpu@%h" in argv and "prefork" in argv
    seen = {}
    monkeypatch.setenv(dp.DEVICE_ENV, "")  # recorded: the worker sets it, and it goes back after the test

    class FakeApp:
        def worker_main(self, argv):
            seen["argv"], seen["device"] = argv, os.environ.get(dp.DEVICE_ENV)

    monkeypatch.setattr(dp, "celery_app", FakeApp)
    from tinybench_assets.cli import main

    assert main(["worker", "--queue", "gpu", "--device", "cuda", "-c", "2"]) == 0
    assert seen["device"] == "cuda"
    assert seen["argv"][seen["argv"].index("--queues") + 1] == "gpu" and "2" in seen["argv"]
    assert main(["worker"]) == 0 and "dagster@%h" in seen["argv"]


def test_missing_redis_server_fails_with_the_remedy(monkeypatch):
    from tinybench_assets.testing import redis_server

    monkeypatch.setenv("TINYBENCH_REDIS_SERVER", "")
    monkeypatch.setattr(redis_server.shutil, "which", lambda name: None)
    monkeypatch.setattr(redis_server.Path, "is_file", lambda self: False)
    with pytest.raises(redis_server.RedisMissing, match="scripts/env.sh"):
        redis_server.redis_server_bin()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.timeout(600)
def test_scenario_and_leaderboard_through_real_celery_workers(tmp_path, pg_env):
    from tinybench_assets.testing.distributed import distributed_check
    from tinybench_assets.testing.openllm_slice import write_openllm_slice
    from tinybench_assets.testing.pg_server import PostgresMissing
    from tinybench_assets.testing.redis_server import RedisMissing

    torch = pytest.importorskip("torch")
    incoming = write_openllm_slice(tmp_path / "incoming", n_models=40, scenarios=("arc",))
    try:
        res = distributed_check(incoming, tmp_path / "run")
    except (RedisMissing, PostgresMissing) as exc:
        pytest.fail(str(exc), pytrace=False)
    d = res["details"]
    # every step (ingest 1, scenario 16, leaderboard 15) ran in a pool process of a worker the event log names
    assert res["steps"] == res["steps_on_workers"] >= 30 and not d["not_on_workers"], d["placement"]
    assert res["gpu_ops_on_gpu_worker"] and set(d["gpu_steps"]) == GPU_OPS, d["placement"]
    assert all(d["runs_succeeded"])
    # each worker's pool process answers on its own queue, with the device its GPU ops get (cpu here, cuda on a GPU
    # machine) and a child process of its own (the steps' spawned process pools work inside a worker)
    for queue in ("dagster", "gpu"):
        probe = d["probes"][queue]
        assert probe["in_pool"] and probe["child_pid"] != probe["pid"], (queue, probe)
        assert probe["device"] == ("cuda" if torch.cuda.is_available() else "cpu"), (queue, probe)
    # the same rows as in one process: every ingest table and both partitions' tables, floats bit for bit here
    assert res["tables_equal_in_process"], d["problems"]
    assert d["tables"] >= 25 and d["rows"] > 10_000 and d["max_abs_float_diff"] <= 1e-12
    kill = d["kill"]
    assert kill["was_gpu_pool_process"] and kill["run_status"] == str(dg.DagsterRunStatus.FAILURE), kill
    assert kill["failed_steps"] == ["anchor_sets"], kill  # the step failed (Celery's WorkerLostError), nothing else
    assert kill["store_unchanged"], kill["store_problems"]  # nothing half-written, nothing lost
    assert kill["rerun_success"] and "anchor_sets" in kill["rerun_steps"] and kill["rerun_on_gpu_worker"], kill
    assert kill["tables_equal_after_rerun"] and res["worker_killed_recovered"]
    assert res["seconds_workers"] > 0 and res["seconds_in_process"] > 0
    # every process started for it is gone: the workers, their pool processes, Redis (PostgreSQL: its folder is gone)
    started = [p for pids in d["started_pids"].values() for p in pids]
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in started) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in started if _alive(p)], d["started_pids"]
