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
* ``celery_defs`` (several machines, deploy/README.md): dagster-celery's ``celery_executor`` over a Redis broker, each
  step a Celery task run by a worker (``tinybench worker``); the GPU ops carry dagster-celery's queue tag
  (``dagster-celery/queue: gpu``) and run only on workers of the ``gpu`` queue, every other step on the default
  ``dagster`` queue. The torch device and the encoder are ``TINYBENCH_TORCH_DEVICE`` (default ``auto``: cuda where
  the worker has one), read where the step runs; ``tinybench worker --device`` sets it.

All keep every asset, check, job, sensor and schedule of ``definitions.build_defs``; only op tags, the executor and
the device resources differ. ``dagster api grpc -m tinybench_assets.deploy_profiles -a k8s_defs`` serves one (the
Helm chart's user deployment), ``deploy/workspace_local.yaml`` another, ``deploy/workspace_celery.yaml`` the third.
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
#: dagster-celery's op tag naming the Celery queue a step is sent to (dagster_celery.tags.DAGSTER_CELERY_QUEUE_TAG)
CELERY_QUEUE_TAG = "dagster-celery/queue"
#: the queue of the GPU ops, and dagster-celery's default queue (every other step)
GPU_QUEUE = "gpu"
DEFAULT_QUEUE = "dagster"
#: a step's priority in Dagster's executors and dagster-celery's (whose default is 5)
PRIORITY_TAG, CELERY_PRIORITY_TAG = "dagster/priority", "dagster-celery/priority"
DEFAULT_BROKER = "redis://127.0.0.1:6379/0"
#: the environment variable naming the device resources' device in the Celery profile (auto, cpu, cuda)
DEVICE_ENV = "TINYBENCH_TORCH_DEVICE"


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


def celery_config() -> dict:
    """The ``celery_executor``'s config, which ``tinybench worker`` builds its Celery app from too (one config, so the
    run's orchestrator and the workers meet on the same broker and queues). Environment, read by both:
    TINYBENCH_CELERY_BROKER (default redis://127.0.0.1:6379/0), TINYBENCH_CELERY_BACKEND (the results backend;
    default: the broker's URL), TINYBENCH_CELERY_VISIBILITY_TIMEOUT (seconds, default 3600).

    ``task_acks_late``: a worker takes a step's message off the queue when the step ends, not when it starts, so a
    worker that dies whole (its host lost) leaves the message to be delivered again, to another worker of the queue,
    once Redis' visibility timeout has passed (it must exceed the longest step); a worker process killed inside a
    step fails that step (Celery's WorkerLostError) and the run fails, without a retry loop
    (``task_reject_on_worker_lost`` stays off). One prefetched step per worker process
    (``worker_prefetch_multiplier: 1``): a long step holds no other step back from an idle worker."""
    broker = os.environ.get("TINYBENCH_CELERY_BROKER") or DEFAULT_BROKER
    visibility = int(os.environ.get("TINYBENCH_CELERY_VISIBILITY_TIMEOUT") or 3600)
    return {
        "broker": broker,
        "backend": os.environ.get("TINYBENCH_CELERY_BACKEND") or broker,
        "config_source": {
            "task_acks_late": True,
            "worker_prefetch_multiplier": 1,
            # dagster-celery's own transport defaults (connection retries), with the visibility timeout
            "broker_transport_options": {
                "max_retries": 3,
                "interval_start": 0,
                "interval_step": 0.2,
                "interval_max": 0.5,
                "visibility_timeout": visibility,
            },
        },
    }


def celery_defs() -> dg.Definitions:
    """The distributed profile: dagster-celery's executor, every step a Celery task; the GPU ops on the ``gpu`` queue,
    the rest on ``dagster``; torch device and encoder from TINYBENCH_TORCH_DEVICE (default auto), read in the worker
    that runs the step. No arguments: a code server (deploy/workspace_celery.yaml) and the workers call it."""
    from tinybench_assets.definitions import build_defs
    from tinybench_assets.defs.assets import all_assets
    from tinybench_assets.defs.resources import EncoderResource, TorchDevice

    device = os.environ.get(DEVICE_ENV) or "auto"
    assets = [  # dagster-celery orders the steps it submits by its own priority tag: the same order as Dagster's
        with_op_tags(a, {CELERY_PRIORITY_TAG: str(5 + int(a.op.tags[PRIORITY_TAG]))})
        if PRIORITY_TAG in a.op.tags
        else a
        for a in tag_gpu_ops(all_assets, {CELERY_QUEUE_TAG: GPU_QUEUE})
    ]
    return build_defs(
        assets=assets,
        resources={"torch_device": TorchDevice(device=device), "encoder": EncoderResource(device=device)},
        executor=celery_step_executor().configured(celery_config(), name="tinybench_celery"),
    )


def celery_step_executor() -> dg.ExecutorDefinition:
    """dagster-celery's ``celery_executor`` (same config, same Celery tasks and queues), with one change: a step whose
    Celery task fails outside the step (its worker process killed: Celery's ``WorkerLostError``) gets a step failure,
    or a retry under the op's retry policy, as Dagster's multiprocess executor gives a step whose process crashed; the
    run goes on with its other branches and ends failed. dagster-celery itself stops submitting steps then and waits
    for the plan to complete, which never happens while another branch has steps left: such a run hung (seen here when
    the leaderboard's ``estimation_backtest`` was still to finish)."""
    from dagster_celery.executor import CELERY_CONFIG, CeleryExecutor

    from tinybench_assets.orchestration.dagster_private import RetryMode

    class StepFailingCeleryExecutor(CeleryExecutor):
        def execute(self, plan_context, execution_plan):
            from dagster_celery.core_execution_loop import core_celery_execution_loop

            return core_celery_execution_loop(plan_context, execution_plan, step_execution_fn=_submit_step)

    @dg.executor(name="celery", config_schema=CELERY_CONFIG, requirements=dg.multiple_process_executor_requirements())
    def celery_step_executor(init_context):
        config = init_context.executor_config
        return StepFailingCeleryExecutor(
            broker=config.get("broker"),
            backend=config.get("backend"),
            config_source=config.get("config_source"),
            include=config.get("include"),
            retries=RetryMode.from_config(config["retries"]),
        )

    return celery_step_executor


def _submit_step(app, plan_context, step, queue, priority, known_state):
    """dagster-celery's submission of a step's task, its result wrapped by ``_StepTask``. dagster-celery registers its
    step task on the app again for every step, and Celery warns each time that the name is taken (the first
    registration is kept, the same task): that warning is left out."""
    import warnings

    from celery.exceptions import DuplicateTaskNameWarning
    from dagster_celery.executor import _submit_task

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DuplicateTaskNameWarning)
        result = _submit_task(app, plan_context, step, queue, priority, known_state)
    return _StepTask(result, plan_context, step, known_state)


class _StepTask:
    """A step's Celery result as dagster-celery's loop polls it (``ready``, ``get``, ``revoke``); ``get`` of a task
    that failed outside the step returns the step's failure (or retry) event instead of raising."""

    def __init__(self, result, plan_context, step, known_state):
        self.result, self.plan_context, self.step, self.known_state = result, plan_context, step, known_state

    def ready(self) -> bool:
        return self.result.ready()

    def revoke(self, *args, **kwargs):
        return self.result.revoke(*args, **kwargs)

    def get(self):
        import sys

        from celery.exceptions import TaskRevokedError

        from tinybench_assets.orchestration.dagster_private import serializable_error_info_from_exc_info

        try:
            return self.result.get()
        except TaskRevokedError:  # the run was terminated: dagster-celery's own handling
            raise
        except Exception:  # noqa: BLE001 - the task died outside the step: the step fails, the run goes on
            error = serializable_error_info_from_exc_info(sys.exc_info())
            context = self.plan_context.for_step(self.step)
            event = self.plan_context.executor.log_failure_or_retry_event_after_error(context, error, self.known_state)
            return [dg.serialize_value(event)]


def celery_app():
    """The workers' Celery app: dagster-celery's (its queues, its step task ``execute_plan``) with ``celery_config()``,
    as ``dagster-celery worker start`` builds it from a config YAML."""
    from celery.signals import worker_process_init
    from dagster_celery.executor import CeleryExecutor
    from dagster_celery.make_app import make_app
    from dagster_celery.tasks import create_task

    app = make_app(CeleryExecutor.for_cli(**celery_config()).app_args())
    create_task(app)
    app.task(name=PROBE_TASK)(probe)
    worker_process_init.connect(allow_child_processes, weak=False)
    return app


#: a task of the workers' app that says where and how it runs (``probe``)
PROBE_TASK = "tinybench.probe"


def allow_child_processes(**_) -> None:
    """Let a Celery pool process start processes of its own, as the steps' spawned process pools do
    (core/parallel.py's worker_pool, the backtest's splits). Run in each pool process as it starts
    (``worker_process_init``). Celery's (billiard's) pool processes are daemonic, and Python refuses a daemonic
    process children ("daemonic processes are not allowed to have children"); and their authentication key is
    billiard's, which Python's spawn refuses to pickle. The pool process stops counting as a daemon for
    multiprocessing and gets a key of Python's own; Celery still ends its pool processes itself."""
    import multiprocessing
    from multiprocessing.process import AuthenticationString

    config = multiprocessing.current_process()._config  # noqa: SLF001 - no public setter once a process has started
    config["daemon"] = False
    config["authkey"] = AuthenticationString(os.urandom(32))


def probe() -> dict:
    """What a worker's pool process is: its pid and node, the torch device its GPU ops get (``TINYBENCH_TORCH_DEVICE``,
    auto: cuda where it has one), and a spawned child process's pid (the steps' process pools work)."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    from tinybench_assets.defs.resources import TorchDevice

    with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
        child = pool.submit(os.getpid).result()
    device = TorchDevice(device=os.environ.get(DEVICE_ENV) or "auto", num_threads=0).resolve()
    return {"pid": os.getpid(), "child_pid": child, "device": device}
