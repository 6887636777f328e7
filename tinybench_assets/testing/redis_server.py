"""A throwaway Redis server for tests and benchmarks (the Celery broker of the distributed profile): ``redis-server``
on 127.0.0.1 and a free port, its folder a temporary one, no persistence (no RDB snapshot, no append-only file), no
system service; ``stop()`` ends the process it started, by its id, and removes the folder. Debian's ``redis-server``
package provides the binary (``scripts/env.sh`` installs it when it is missing); TINYBENCH_REDIS_SERVER names
another.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from tinybench_assets.testing.pg_server import free_port


class RedisMissing(RuntimeError):
    """No redis-server binary on this machine."""


def redis_server_bin() -> str:
    """TINYBENCH_REDIS_SERVER, else ``redis-server`` on PATH, else /usr/bin/redis-server; RedisMissing (saying how to
    install it) when there is none."""
    for cand in (
        os.environ.get("TINYBENCH_REDIS_SERVER", ""),
        shutil.which("redis-server") or "",
        "/usr/bin/redis-server",
    ):
        if cand and Path(cand).is_file() and os.access(cand, os.X_OK):
            return cand
    raise RedisMissing(
        "redis-server not found (TINYBENCH_REDIS_SERVER, PATH, /usr/bin): run `bash -c 'source scripts/env.sh'` (it "
        "installs Debian's redis-server package with apt-get) or set TINYBENCH_REDIS_SERVER"
    )


def ping(host: str, port: int, timeout: float = 1.0) -> bool:
    """True when a Redis server answers PING on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """One throwaway server. ``start()`` returns self; ``url(db)`` the URL of one of its databases; ``stop()`` always
    ends it and removes its folder. Usable as a context manager."""

    def __init__(self, port: int | None = None):
        self.bin = redis_server_bin()
        self.host = "127.0.0.1"
        self.port = port or free_port()
        self.base = Path(tempfile.mkdtemp(prefix="tinybench-redis-"))
        self.log = self.base / "server.log"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 30) -> "RedisServer":
        args = [self.bin, "--bind", self.host, "--port", str(self.port), "--dir", str(self.base)]
        args += ["--save", "", "--appendonly", "no", "--daemonize", "no", "--protected-mode", "no"]
        args += ["--logfile", str(self.log)]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        deadline = time.monotonic() + timeout
        while not ping(self.host, self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.poll() is not None else ""
                log = self.log.read_text()[-2000:] if self.log.exists() else ""
                self.stop()
                raise RuntimeError(f"redis-server did not start on {self.host}:{self.port}: {err[-2000:]}\n{log}")
            time.sleep(0.05)
        return self

    def url(self, db: int = 0) -> str:
        return f"redis://{self.host}:{self.port}/{db}"

    def stop(self) -> None:
        try:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=10)
            if self.proc is not None and self.proc.stderr is not None:
                self.proc.stderr.close()
        finally:
            shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self) -> "RedisServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
