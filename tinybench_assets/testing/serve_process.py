"""``tinybench serve`` as a child process, for the server's test and benchmarks/serve.py: started on a free loopback
port with a given environment, waited for until ``/health`` answers (a bounded wait), and stopped by the process id
this module started (SIGTERM, then SIGKILL; never by name). Its output goes to a log file."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tinybench_assets.paths import PROJECT_ROOT as ROOT


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (the OS's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServeProcess:
    """``tinybench serve ARGS --port PORT`` in its own session; ``url`` its base URL; ``log`` its output."""

    def __init__(self, args: list[str], env: dict, log: Path):
        self.args, self.env, self.log = list(args), dict(env), Path(log)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 60.0) -> "ServeProcess":
        cmd = [sys.executable, "-m", "tinybench_assets.cli", "serve", *self.args, "--port", str(self.port)]
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                cmd, env=self.env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"tinybench serve exited with {self.proc.returncode}: {self.log.read_text()[-2000:]}"
                )
            if self.health() is not None:
                return self
            time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"tinybench serve did not answer /health within {timeout:g} s")

    def health(self) -> dict | None:
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=2) as r:
                return json.loads(r.read())
        except OSError:
            return None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM to the process started here, then SIGKILL to it and its session if it is still there."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=timeout)
        return self.proc.returncode

    def __enter__(self) -> "ServeProcess":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
