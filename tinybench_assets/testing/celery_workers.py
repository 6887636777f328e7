"""Celery workers of the distributed profile as child processes, for tests and benchmarks: ``tinybench worker`` started
with a given environment, waited for until Celery says it is ready, its pool processes found from /proc, and stopped
by the process ids this module started (SIGTERM, then SIGKILL to the worker's own process group, which
``start_new_session`` made; never by name).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from tinybench_assets.paths import PROJECT_ROOT as ROOT


def children_of(pid: int) -> list[int]:
    """The live processes whose parent is ``pid`` (read from /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # the command name (field 2) is in parentheses and may hold spaces: the fields after its last ')'
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(entry))
    return sorted(out)


class Worker:
    """``tinybench worker --queue QUEUE --name NAME`` in its own session, its output in ``log``. ``node`` is its Celery
    node name (what the run's event log names); ``pool_pids()`` the processes that run its steps."""

    def __init__(self, queue: str, name: str, env: dict, log: Path, device: str | None = None, concurrency: int = 1):
        self.queue, self.name, self.env, self.log = queue, name, env, Path(log)
        self.device, self.concurrency = device, concurrency
        self.node = f"{name}@{socket.gethostname()}"
        self.proc: subprocess.Popen | None = None

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "tinybench_assets.cli", "worker", "--queue", self.queue, "--name", self.name]
        cmd += ["--concurrency", str(self.concurrency), "--loglevel", "INFO"]
        return cmd + (["--device", self.device] if self.device else [])

    def start(self) -> "Worker":
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as out:  # a file, not a pipe: nothing here reads the worker's output as it runs
            self.proc = subprocess.Popen(
                self.command(), env=self.env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        return self

    def wait_ready(self, timeout: float = 120) -> "Worker":
        """Until Celery logs ``NODE ready.`` and the pool has its processes; RuntimeError with the log's end if the
        worker exits or the time runs out."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.log.read_text(errors="replace") if self.log.exists() else ""
            if f"{self.node} ready." in text and len(self.pool_pids()) >= self.concurrency:
                return self
            if self.proc is None or self.proc.poll() is not None or time.monotonic() > deadline:
                state = "exited" if self.proc is not None and self.proc.poll() is not None else "not ready"
                raise RuntimeError(f"worker {self.node} {state}; its log ends:\n{text[-3000:]}")
            time.sleep(0.1)

    @property
    def pid(self) -> int:
        return self.proc.pid if self.proc is not None else -1

    def pool_pids(self) -> list[int]:
        return children_of(self.pid) if self.proc is not None and self.proc.poll() is None else []

    def stop(self, timeout: float = 20) -> None:
        """SIGTERM (Celery's warm shutdown), then SIGKILL to the worker's process group (its pool processes with it)
        if it is still there after ``timeout`` seconds."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass
        try:  # the group this worker leads (start_new_session): pool processes left behind by a killed worker
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.proc.poll() is None:
            self.proc.wait(timeout=10)


def stop_all(workers) -> None:
    """Stop every worker, the others too when one fails to stop."""
    errors = []
    for w in workers:
        try:
            w.stop()
        except Exception as exc:  # noqa: BLE001 - reported after the others are stopped
            errors.append(exc)
    if errors:
        raise errors[0]
