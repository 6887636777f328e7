"""The deployment profiles (issue 14, deploy/README.md): the Kubernetes profile loads (in process and through a gRPC
code server, as the Helm chart's user deployment serves it) with the k8s_job_executor and GPU placement on exactly
the IRT / embedding ops, and the Kubernetes Job a GPU step would get is built offline; the local multiprocess profile
really runs a scenario partition's ingest-side assets, each step in its own process, on a temporary instance."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import dagster as dg
import pytest
import yaml

from tinybench_assets import deploy_profiles as dp
from tinybench_assets.io.store import Store
from tinybench_assets.testing import reliability_data as rd

pytest.importorskip("dagster_k8s", reason="the k8s profile needs the k8s extra (pip install -e '.[dev]')")

ROOT = rd.ROOT
#: the ops whose work is torch (IRT fits, the embedding model): they require the torch_device or encoder resource
GPU_OPS = {
    "irt_model",
    "irt_joint",
    "anchor_sets",
    "estimation_backtest",
    "question_embeddings",
    "router_accuracy",
    "leaderboard_router",
}
GPU_ASSETS = {
    "irt_model",
    "irt_joint",
    "model_split",
    "anchor_sets",
    "gpirt_lambdas",
    "estimation_backtest",
    "question_embeddings",
    "router_accuracy",
    "leaderboard_router",
}
JOBS = ("ingest_landing", "refresh_scenario", "refresh_leaderboard", "__ASSET_JOB")


def _nodes(defs: dg.Definitions):
    """Every op node (assets and checks) of every job, once."""
    seen = {}
    for name in JOBS:
        job = defs.resolve_implicit_global_asset_job_def() if name == "__ASSET_JOB" else defs.resolve_job_def(name)
        for node in job.nodes:
            seen[node.name] = (node, job)
    return seen


def test_k8s_profile_loads_with_the_k8s_executor_gpu_tags_and_cuda(monkeypatch):
    from dagster_k8s.job import DagsterK8sJobConfig, construct_dagster_k8s_job, get_user_defined_k8s_config

    for var in ("TINYBENCH_GPU_NODE_SELECTOR", "TINYBENCH_K8S_NAMESPACE", "TINYBENCH_MAX_CONCURRENT"):
        monkeypatch.delenv(var, raising=False)
    defs = dp.k8s_defs()
    dg.Definitions.validate_loadable(defs)
    nodes = _nodes(defs)
    tagged = {n for n, (node, _) in nodes.items() if dp.K8S_CONFIG_TAG in node.tags}
    assert tagged == GPU_OPS  # every IRT / embedding op, and no other op or check
    assert {n for n, (node, _) in nodes.items() if node.tags.get(dp.GPU_TAG) == "true"} == GPU_OPS
    assets = {k.to_user_string() for a in defs.assets if a.op.name in GPU_OPS for k in a.keys}
    assert assets == GPU_ASSETS
    assert set(dp.gpu_ops(defs.assets)) == GPU_OPS  # the rule: the ops requiring torch_device or encoder

    for name, (_node, job) in nodes.items():  # one executor everywhere: k8s, its config valid with ours in it
        assert job.executor_def.name == "tinybench_k8s", (name, job.name)
    config = job.executor_def.config_schema.resolve_config({})
    assert config.success, config.errors
    ours = dp.k8s_executor_config()
    step = config.value["config"].pop("step_k8s_config")
    assert step["container_config"] == ours.pop("step_k8s_config")["container_config"]
    assert {k: config.value["config"][k] for k in ours} == ours
    assert config.value["config"]["max_concurrent"] == 4 and "job_namespace" not in config.value["config"]

    # the device resources point at the GPU
    assert defs.resources["torch_device"].device == "cuda" and defs.resources["encoder"].device == "cuda"

    # the steps of a run carry the tag (the k8s step handler reads it from the step's tags), and the Kubernetes Job it
    # would submit for an IRT step, built offline with dagster-k8s' own functions
    from dagster._core.execution.api import create_execution_plan

    steps = {
        s.key: s.tags
        for name in ("refresh_scenario", "refresh_leaderboard")
        for s in create_execution_plan(defs.resolve_job_def(name)).steps
    }
    assert {k for k, tags in steps.items() if dp.K8S_CONFIG_TAG in tags} == GPU_OPS
    user = get_user_defined_k8s_config(steps["irt_model"])
    assert user.container_config["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert user.pod_spec_config["node_selector"] == dp.DEFAULT_GPU_NODE_SELECTOR
    k8s_job = construct_dagster_k8s_job(
        DagsterK8sJobConfig(job_image="registry/tinybench:test", dagster_home="/opt/dagster/dagster_home"),
        ["dagster", "api", "execute_step"],
        "dagster-step-irt-model",
        user_defined_k8s_config=user,
    )
    pod = k8s_job.spec.template.spec
    assert pod.node_selector == {"nvidia.com/gpu.present": "true"}
    assert pod.containers[0].resources.limits["nvidia.com/gpu"] == "1"
    assert any(t.key == "nvidia.com/gpu" for t in pod.tolerations)
    cpu_user = get_user_defined_k8s_config(nodes["binarized_responses"][0].tags)
    assert not cpu_user.container_config and not cpu_user.pod_spec_config

    # the cluster's node label is configurable
    monkeypatch.setenv("TINYBENCH_GPU_NODE_SELECTOR", json.dumps({"cloud.google.com/gke-accelerator": "nvidia-l4"}))
    again = _nodes(dp.k8s_defs())["irt_joint"][0]
    assert json.loads(again.tags[dp.K8S_CONFIG_TAG])["pod_spec_config"]["node_selector"] == {
        "cloud.google.com/gke-accelerator": "nvidia-l4"
    }


def test_local_profile_tags_gpu_ops_without_k8s_config(monkeypatch):
    monkeypatch.setenv("TINYBENCH_MAX_CONCURRENT", "3")
    defs = dp.multiprocess_defs()
    nodes = _nodes(defs)
    assert {n for n, (node, _) in nodes.items() if node.tags.get(dp.GPU_TAG) == "true"} == GPU_OPS
    assert not any(dp.K8S_CONFIG_TAG in node.tags for node, _ in nodes.values())
    job = defs.resolve_job_def("refresh_scenario")
    assert job.executor_def.name == "tinybench_multiprocess"
    cfg = job.executor_def.config_schema.resolve_config({})
    assert cfg.success and cfg.value["config"]["max_concurrent"] == 3
    assert cfg.value["config"]["tag_concurrency_limits"] == [{"key": dp.GPU_TAG, "value": "true", "limit": 1}]
    assert defs.resources["torch_device"].device == "auto"


def test_the_helm_values_code_location_and_the_local_workspace_load_through_a_grpc_server(tmp_path):
    """What the chart's user deployment runs (dagster api grpc with values.yaml's arguments) and what
    `dagster dev -w deploy/workspace_local.yaml` loads, each validated through a gRPC code server."""
    values = yaml.safe_load((ROOT / "deploy" / "k8s" / "values.yaml").read_text())
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    args = deployment["dagsterApiGrpcArgs"]
    assert args == ["-m", "tinybench_assets.deploy_profiles", "-a", "k8s_defs"]
    env = rd.child_env({"DAGSTER_HOME": str(tmp_path)})
    env.update({e["name"]: e["value"] for e in deployment["env"] if e["name"].startswith("TINYBENCH_GPU")})
    dagster = [sys.executable, "-m", "dagster", "definitions", "validate", "--load-with-grpc"]
    for extra in (args, ["-w", str(ROOT / "deploy" / "workspace_local.yaml")]):
        proc = subprocess.run(dagster + extra, env=env, cwd=ROOT, capture_output=True, text=True, timeout=240)
        assert proc.returncode == 0, (extra, proc.stdout[-2000:], proc.stderr[-3000:])
        assert "tinybench" in proc.stdout + proc.stderr


# ---------------------------------------------------------------- a real multiprocess run
def _scenario_job():
    return dp.multiprocess_defs().resolve_job_def("refresh_scenario")


INGEST_SIDE = [dg.AssetKey(k) for k in ("raw_responses", "response_matrix", "binarized_responses")]


def test_multiprocess_profile_materializes_a_scenario_partition_in_step_processes(tmp_path, monkeypatch):
    for var, name in (
        ("TINYBENCH_DUCKDB", "tb.duckdb"),
        ("TINYBENCH_INCOMING", "incoming"),
        ("TINYBENCH_QUARANTINE", "quarantine"),
        ("TINYBENCH_ARTIFACTS", "artifacts"),
    ):
        monkeypatch.setenv(var, str(tmp_path / name))
    for var, value in (("OMP_NUM_THREADS", "1"), ("MKL_NUM_THREADS", "1"), ("TINYBENCH_MAX_CONCURRENT", "2")):
        monkeypatch.setenv(var, value)
    rd.write_table(rd.long_table(20, 30, scenario="quiz", seed=3), tmp_path / "incoming" / "tiny" / "quiz.parquet")
    template = yaml.safe_load(
        (ROOT / "dagster.yaml.template").read_text()
    )  # the project's pools: duckdb, one at a time
    (tmp_path / "home").mkdir()
    with dg.instance_for_test(
        temp_dir=str(tmp_path / "home"), overrides={"concurrency": template["concurrency"]}
    ) as instance:
        ingest = dp.multiprocess_defs().resolve_job_def("ingest_landing").execute_in_process(instance=instance)
        assert ingest.success  # the landing folder in this process (setup), the partition's run in step processes:
        assert instance.get_dynamic_partitions("scenarios") == ["tiny.quiz"]
        run = dg.execute_job(
            dg.reconstructable(_scenario_job),
            instance=instance,
            asset_selection=INGEST_SIDE,
            tags={"dagster/partition": "tiny.quiz"},
        )
        assert run.success
        events = instance.all_logs(run.run_id)
        mats = {
            e.dagster_event.asset_key
            for e in events
            if e.dagster_event and e.dagster_event.event_type == dg.DagsterEventType.ASSET_MATERIALIZATION
        }
        assert mats == set(INGEST_SIDE), mats
        step_pids = {
            e.step_key: e.dagster_event.pid
            for e in events
            if e.dagster_event and e.dagster_event.event_type == dg.DagsterEventType.STEP_SUCCESS
        }
        assert {k.path[-1] for k in INGEST_SIDE} <= set(step_pids) and len(step_pids) == 7, step_pids  # with 4 checks
        assert os.getpid() not in step_pids.values() and len(set(step_pids.values())) == 7  # a process per step
        assert any(
            e.dagster_event.event_type == dg.DagsterEventType.STEP_WORKER_STARTED for e in events if e.dagster_event
        )
    store = Store(tmp_path / "tb.duckdb")
    assert store.query("SELECT count(*) AS n FROM binarized WHERE partition_key = 'tiny.quiz'")["n"].iloc[0] == 20 * 30
    assert store.query("SELECT count(*) AS n FROM matrix_items WHERE partition_key = 'tiny.quiz'")["n"].iloc[0] == 30
