"""Decisions of concurrent requests taken together: the questions that arrive for one router and one set of options
while a decision is being computed wait for it to end and are then decided in one call of ``decide`` (cli/route.py's,
the same as ``tinybench route --questions``). A lone request is decided at once. Most of a decision is reading the
router's training rows (kNN similarities); a batch reads them once for all its questions. The work runs in a worker
thread, so the event loop keeps accepting requests and forwarding answers meanwhile."""

from __future__ import annotations

import asyncio

from .errors import ServingError
from .names import RouterName

MAX_BATCH = 64


class DecisionBatcher:
    """``await decide(name, text)``: ``registry.decide_many`` over the questions pending for ``name``."""

    def __init__(self, registry, max_batch: int = MAX_BATCH):
        self.registry, self.max_batch = registry, int(max_batch)
        self._pending: dict[RouterName, list] = {}
        self._running: set[RouterName] = set()
        self._tasks: set[asyncio.Task] = set()

    async def decide(self, name: RouterName, text: str) -> dict:
        fut = asyncio.get_running_loop().create_future()
        self._pending.setdefault(name, []).append((text, fut))
        if name not in self._running:
            self._running.add(name)
            task = asyncio.get_running_loop().create_task(self._drain(name))
            self._tasks.add(task)  # the loop keeps only a weak reference to a task
            task.add_done_callback(self._tasks.discard)
        return await fut

    async def _drain(self, name: RouterName) -> None:
        from starlette.concurrency import run_in_threadpool

        try:
            while self._pending.get(name):
                batch, self._pending[name] = (
                    self._pending[name][: self.max_batch],
                    self._pending[name][self.max_batch :],
                )
                try:
                    rows = await run_in_threadpool(self.registry.decide_many, name, [t for t, _ in batch])
                except ServingError as e:
                    for _, fut in batch:
                        if not fut.done():
                            fut.set_exception(e)
                    continue
                except Exception as e:  # a fault of the router itself: every waiting request gets it as a 500
                    err = ServingError(500, f"{name.router_id}: routing failed ({type(e).__name__})", "server_error")
                    for _, fut in batch:
                        if not fut.done():
                            fut.set_exception(err)
                    continue
                for (_, fut), row in zip(batch, rows):
                    if not fut.done():
                        fut.set_result(row)
        finally:
            self._running.discard(name)
            if not self._pending.get(name):
                self._pending.pop(name, None)
