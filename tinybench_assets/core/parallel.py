"""Process pools with an explicit thread budget per worker, for work whose threads scale poorly.

Measured on the 2-core machine: one AnchorPredictor fit on openllm takes 116 s with 2 torch/OpenMP
threads and 130 s with 1 (the IRT fits and the gradient-boosted regressors are many small problems), so two
one-thread processes do about twice the work of one two-thread process. :func:`worker_pool` makes such a pool
(spawned, never forked: torch's thread pools do not survive a fork) and :func:`run_tasks` runs a list of
independent tasks in it, or in this process when no pool is given, with the results in task order.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

__all__ = ["THREAD_ENV", "init_worker", "resolve_jobs", "run_tasks", "worker_pool"]

#: the environment variables that size OpenMP's (scikit-learn's, torch's) and BLAS's thread pools when they load
THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def init_worker(threads: int) -> None:
    """Give a worker process its own thread budget for torch, OpenMP (scikit-learn) and BLAS."""
    for var in THREAD_ENV:
        os.environ[var] = str(threads)
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(threads)
    threadpool_limits(threads)


def resolve_jobs(n_jobs: int | None, n_tasks: int | None = None) -> int:
    """Worker processes to use: ``n_jobs`` (0 or None = the CPU cores this process may use), at most ``n_tasks``."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    n = cores if not n_jobs else int(n_jobs)
    if n_tasks is not None:
        n = min(n, n_tasks)
    return max(1, n)


@contextmanager
def worker_pool(n_jobs: int, threads: int = 1) -> Iterator[object | None]:
    """A spawned ProcessPoolExecutor of ``n_jobs`` workers with ``threads`` threads each; None when n_jobs <= 1."""
    if n_jobs <= 1:
        yield None
        return
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(
        n_jobs, mp_context=mp.get_context("spawn"), initializer=init_worker, initargs=(threads,)
    ) as pool:
        yield pool


def run_tasks(fn: Callable, tasks: Sequence[tuple], pool=None, first=None) -> list:
    """``[fn(*t) for t in tasks]``, in ``pool`` when one is given; results in task order. Tasks start in the
    given order, or sorted by ``first(i)`` (the sort key of task ``i``; put the longest first, so no worker is left
    with a long task at the end)."""
    order = sorted(range(len(tasks)), key=first) if first is not None else range(len(tasks))
    if pool is None:
        done = {i: fn(*tasks[i]) for i in order}
    else:
        futures = {i: pool.submit(fn, *tasks[i]) for i in order}
        done = {i: f.result() for i, f in futures.items()}
    return [done[i] for i in range(len(tasks))]
