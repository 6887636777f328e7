"""``tinybench worker``: a Celery worker of the distributed profile (``deploy_profiles.celery_defs``, deploy/README.md).

    tinybench worker                    # the default queue ("dagster"): every step that is not a GPU op
    tinybench worker --queue gpu        # the GPU ops (IRT fits, embeddings), on cuda where this machine has one

A worker takes the steps of its queues from the broker (TINYBENCH_CELERY_BROKER, default redis://127.0.0.1:6379/0)
and runs each one in its pool process against the same Dagster instance ($DAGSTER_HOME, deploy/dagster.yaml on
PostgreSQL) and results store (TINYBENCH_STORE) as the run that sent it, so it needs the environment of that run.
Its node name is ``NAME@host`` (default NAME: the queues), which the run's event log names for every step.

The same worker from Celery's own command line: ``celery -A tinybench_assets.cli.worker worker -Q gpu -n gpu@%h
--concurrency 1`` (this module's ``app``).
"""

from __future__ import annotations

import os

# cli: lazy (see cli/__init__.py): subcommands import what they run inside their functions

_APP = None


def add_parsers(sub) -> None:
    p = sub.add_parser("worker", help="a Celery worker of the distributed profile (deploy/README.md)")
    p.add_argument(
        "--queue",
        "-q",
        action="append",
        help="a queue to take steps from: dagster (every step but the GPU ops) or gpu (the GPU ops); may be "
        "repeated (default: dagster)",
    )
    p.add_argument("--name", "-n", help="the worker's name; its node name is NAME@host (default: the queues)")
    p.add_argument(
        "--concurrency", "-c", type=int, default=1, help="steps at once, each in its own pool process (default 1)"
    )
    p.add_argument(
        "--device",
        choices=["auto", "cpu", "cuda"],
        help="torch device and encoder of the GPU ops this worker runs (default: $TINYBENCH_TORCH_DEVICE, else "
        "auto = cuda where this machine has one)",
    )
    p.add_argument("--loglevel", default="INFO", help="Celery's log level (default INFO)")
    p.set_defaults(func=worker)


def worker_argv(queues: list[str], name: str, concurrency: int, loglevel: str = "INFO") -> list[str]:
    """Celery's ``worker`` arguments: the queues, the node name, a prefork pool of ``concurrency`` processes, each
    taking one step at a time."""
    return [
        "worker",
        "--queues",
        ",".join(queues),
        "--hostname",
        f"{name}@%h",
        "--concurrency",
        str(concurrency),
        "--pool",
        "prefork",
        "--prefetch-multiplier",
        "1",
        "--loglevel",
        loglevel,
        "--without-gossip",
        "--without-mingle",
    ]


def worker(args) -> int:
    # the definitions imported here, before the pool processes fork: each step's process has them already
    import tinybench_assets.definitions  # noqa: F401
    from tinybench_assets.deploy_profiles import DEFAULT_QUEUE, DEVICE_ENV, celery_app

    if args.device:
        os.environ[DEVICE_ENV] = args.device  # read by celery_defs() in the pool processes, where the steps run
    queues = args.queue or [DEFAULT_QUEUE]
    celery_app().worker_main(worker_argv(queues, args.name or "-".join(queues), args.concurrency, args.loglevel))
    return 0


def __getattr__(name: str):
    """``app``: the Celery app, for ``celery -A tinybench_assets.cli.worker worker ...``; built on first use."""
    global _APP
    if name != "app":
        raise AttributeError(name)
    if _APP is None:
        from tinybench_assets.deploy_profiles import celery_app

        _APP = celery_app()
    return _APP
