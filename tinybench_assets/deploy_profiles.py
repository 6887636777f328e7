"""Deployment profiles: the project's Definitions with another executor and GPU placement (deploy/README.md).

* ``multiprocess_defs`` (local, one machine): Dagster's multiprocess executor, each step in its own process, at most
  ``TINYBENCH_MAX_CONCURRENT`` (default: the CPU count) steps of a run at once and one GPU step at a time. Steps that
  write to DuckDB still queue on the instance's "duckdb" pool (two at a time in dagster.yaml.template); the parallelism
  pays once the store allows concurrent writers (the Postgres store) and that pool's limit is raised.
* ``k8s_defs`` (a Kubernetes cluster, deploy/k8s/values.yaml): dagster-k8s' ``k8s_job_executor``, each step a
  Kubernetes Job; the torch device and the sentence encoder set to ``cuda``, and the ops that use them (the GPU ops:
  every op requiring the ``torch_device`` or ``encoder`` resource) tagged to run on a GPU node: a container limit of
  ``nvidia.com/gpu: 1``, a node selector and a toleration of the usual GPU taint, through the ``dagster-k8s/config`` op
  tag. Other ops run on CPU nodes with the executor's default requests.

Both keep every asset, check, job, sensor and schedule of ``definitions.build_defs``; only op tags, the executor and
the device resources differ. ``dagster api grpc -m tinybench_assets.deploy_profiles -a k8s_defs`` serves one (the
Helm chart's user deployment), ``deploy/workspace_local.yaml`` the other.
"""

from __future__ import annotations

import json
import os

import dagster as dg

#: ops that use one of these resources do their heavy work in torch (IRT fits, embeddings) and go to a GPU node
GPU_RESOURCE_KEYS = frozenset({"torch_device", "encoder"})
#: a plain marker on GPU ops in every profile: the local executor runs one of them at a time (one GPU)
GPU_TAG = "tinybench/gpu"
K8S_CONFIG_TAG = "dagster-k8s/config"
#: the label NVIDIA's GPU feature discovery puts on GPU nodes; TINYBENCH_GPU_NODE_SELECTOR (JSON) overrides it
DEFAULT_GPU_NODE_SELECTOR = {"nvidia.com/gpu.present": "true"}
GPU_TOLERATIONS = ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},)


def gpu_ops(assets) -> list[str]:
    """Names of the ops (an op may materialize several assets) that need a GPU: those requiring a GPU resource."""
    return sorted(a.op.name for a in assets if set(a.required_resource_keys) & GPU_RESOURCE_KEYS)


def gpu_k8s_config(node_selector: dict | None = None, gpus: int = 1, cpu: str = "2", memory: str = "16Gi") -> dict:
    """The ``dagster-k8s/config`` tag of a GPU op: its container's requests and limits (``nvidia.com/gpu`` as a limit,
    which Kubernetes also takes as the request) and its pod's node selector and tolerations."""
    return {
        "container_config": {
            "resources": {
                "requests": {"cpu": cpu, "memory": memory},
                "limits": {"memory": memory, "nvidia.com/gpu": str(gpus)},
            }
        },
        "pod_spec_config": {
            "node_selector": dict(node_selector or DEFAULT_GPU_NODE_SELECTOR),
            "tolerations": [dict(t) for t in GPU_TOLERATIONS],
        },
    }


def with_op_tags(assets_def: dg.AssetsDefinition, tags: dict) -> dg.AssetsDefinition:
    """The same assets with ``tags`` added to their op's tags (the executors read op tags, not asset tags).

    Dagster has no public call for this, so the op is rebuilt with the constructor its own ``with_replaced_properties``
    uses: same compute function, ins, outs, config schema, resources, code version, retry policy and pool."""
    from tinybench_assets.orchestration.dagster_private import OpDefinition

    op = assets_def.op
    new_op = OpDefinition.dagster_internal_init(
        compute_fn=op.compute_fn,
        name=op.name,
        description=op.description,
        config_schema=op.config_schema,
        ins={d.name: dg.In.from_definition(d) for d in op.input_defs},
        outs={d.name: dg.Out.from_definition(d) for d in op.output_defs},
        required_resource_keys=op.required_resource_keys,
        tags={**op.tags, **tags},
        version=None,
        retry_policy=op.retry_policy,
        code_version=op._version,
        pool=op.pool,
    )  # noqa: SLF001 - no public getter
    return dg.AssetsDefinition.dagster_internal_init(**{**assets_def.get_attributes_dict(), "node_def": new_op})


def tag_gpu_ops(assets, tags: dict) -> list:
    """``assets`` with ``tags`` (and the plain GPU marker) on the GPU ops; the others unchanged."""
    names = set(gpu_ops(assets))
    return [with_op_tags(a, {GPU_TAG: "true", **tags}) if a.op.name in names else a for a in assets]


def multiprocess_executor(max_concurrent: int | None = None) -> dg.ExecutorDefinition:
    n = max_concurrent or int(os.environ.get("TINYBENCH_MAX_CONCURRENT") or 0) or (os.cpu_count() or 1)
    # forkserver with the definitions preloaded: a step forks in a fraction of a second instead of importing anew
    # (torch is imported by the steps that use it, after the fork)
    return dg.multiprocess_executor.configured(
        {
            "max_concurrent": n,
            "tag_concurrency_limits": [{"key": GPU_TAG, "value": "true", "limit": 1}],
            "start_method": {"forkserver": {"preload_modules": ["tinybench_assets.definitions"]}},
        },
        name="tinybench_multiprocess",
    )


def multiprocess_defs() -> dg.Definitions:
    """The local profile: every step its own process, TINYBENCH_MAX_CONCURRENT (default: the CPU count) at once, one
    GPU step at a time; torch device ``auto`` (cuda when this machine has one). No arguments: a code server calls it."""
    from tinybench_assets.definitions import build_defs
    from tinybench_assets.defs.assets import all_assets

    return build_defs(assets=tag_gpu_ops(all_assets, {}), executor=multiprocess_executor())


def k8s_executor_config(namespace: str | None = None, max_concurrent: int = 4) -> dict:
    """The k8s_job_executor's config: step Jobs in ``namespace`` (default: the run's), ``max_concurrent`` step pods
    per run, modest CPU requests for every step (GPU ops add theirs through their tag), two OpenMP / MKL threads
    (oversubscribed threads slow the fits many-fold on small nodes); the image, environment,
    secrets and volumes come from the Helm chart's user deployment (``includeConfigInLaunchedRuns``)."""
    config = {
        "max_concurrent": max_concurrent,
        "image_pull_policy": "IfNotPresent",
        "step_k8s_config": {"container_config": {"resources": {"requests": {"cpu": "1", "memory": "4Gi"}}}},
        "env_vars": ["OMP_NUM_THREADS=2", "MKL_NUM_THREADS=2"],
    }  # threads = the GPU pods' CPU request
    if namespace:
        config["job_namespace"] = namespace
    return config


def k8s_defs() -> dg.Definitions:
    """The Kubernetes profile: k8s_job_executor, GPU ops on GPU nodes, torch device and encoder on cuda.

    Environment: TINYBENCH_K8S_NAMESPACE (step Jobs' namespace), TINYBENCH_MAX_CONCURRENT (step pods per run, 4),
    TINYBENCH_GPU_NODE_SELECTOR (JSON object, default {"nvidia.com/gpu.present": "true"})."""
    from dagster_k8s import k8s_job_executor

    from tinybench_assets.definitions import build_defs
    from tinybench_assets.defs.assets import all_assets
    from tinybench_assets.defs.resources import EncoderResource, TorchDevice

    selector = json.loads(os.environ.get("TINYBENCH_GPU_NODE_SELECTOR") or "null") or DEFAULT_GPU_NODE_SELECTOR
    executor = k8s_job_executor.configured(
        k8s_executor_config(
            os.environ.get("TINYBENCH_K8S_NAMESPACE") or None, int(os.environ.get("TINYBENCH_MAX_CONCURRENT") or 4)
        ),
        name="tinybench_k8s",
    )
    return build_defs(
        assets=tag_gpu_ops(all_assets, {K8S_CONFIG_TAG: gpu_k8s_config(selector)}),
        resources={"torch_device": TorchDevice(device="cuda"), "encoder": EncoderResource(device="cuda")},
        executor=executor,
    )
