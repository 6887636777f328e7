"""A throwaway PostgreSQL server for tests and benchmarks: ``initdb`` into a temporary folder, ``pg_ctl start`` on
127.0.0.1 (a free port) and a unix socket in that folder, no system service; ``stop()`` ends it and removes the
folder. Debian's ``postgresql`` package provides the binaries (``scripts/env.sh`` installs it when ``initdb`` is
missing); they live in /usr/lib/postgresql/<version>/bin, off PATH, and are looked for there.

``initdb`` refuses to run as root: as root the server runs as the ``postgres`` user (Debian's package creates it;
else ``nobody``) through ``runuser``, in a folder that user owns. The cluster is created with the C locale (byte-order
sorting, as DuckDB's) and trust authentication for its one superuser, ``tinybench``; fsync is off (nothing here
outlives the test).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg

SUPERUSER = "tinybench"


class PostgresMissing(RuntimeError):
    """No PostgreSQL server binaries on this machine."""


def pg_bin_dir() -> Path:
    """The folder holding ``initdb``, ``pg_ctl`` and ``postgres``: TINYBENCH_PG_BIN, else PATH, else the newest
    /usr/lib/postgresql/<version>/bin. PostgresMissing (saying how to install them) when there is none."""
    cands = [os.environ.get("TINYBENCH_PG_BIN", "")]
    found = shutil.which("initdb")
    cands.append(str(Path(os.path.realpath(found)).parent) if found else "")
    versions = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"),
        key=lambda p: int(Path(p).parent.name) if Path(p).parent.name.isdigit() else 0,
    )
    cands.extend(reversed(versions))
    for c in cands:
        if c and all((Path(c) / exe).is_file() for exe in ("initdb", "pg_ctl", "postgres")):
            return Path(c)
    raise PostgresMissing(
        "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found on PATH nor in "
        "/usr/lib/postgresql/*/bin: run `bash -c 'source scripts/env.sh'` (it installs Debian's "
        "postgresql package with apt-get) or set TINYBENCH_PG_BIN"
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """One throwaway server. ``start()`` returns self; ``url(db)`` the URL of a database on it (``create_db`` first);
    ``stop()`` always ends the server and removes its folder. Usable as a context manager."""

    def __init__(self, port: int | None = None):
        self.bin = pg_bin_dir()
        self.port = port or free_port()
        self.host = "127.0.0.1"
        self.base = Path(tempfile.mkdtemp(prefix="tinybench-pg-"))
        self.data = self.base / "data"
        self.log = self.base / "server.log"
        self.run_as = None
        if os.geteuid() == 0:
            self.run_as = next((u for u in ("postgres", "nobody") if _user_exists(u)), None)
            if self.run_as is None:
                raise PostgresMissing(
                    "running as root and no unprivileged user (postgres, nobody) to run the server as"
                )
        self.started = False

    def _cmd(self, *args: str) -> list[str]:
        cmd = [str(self.bin / args[0]), *args[1:]]
        return ["runuser", "-u", self.run_as, "--", *cmd] if self.run_as else cmd

    def _run(self, *args: str, timeout: float = 60) -> None:
        proc = subprocess.run(self._cmd(*args), capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            log = self.log.read_text()[-2000:] if self.log.exists() else ""
            raise RuntimeError(
                f"{' '.join(args[:1])} failed ({proc.returncode}): {proc.stderr[-2000:]}{proc.stdout[-500:]}\n{log}"
            )

    def start(self) -> "PostgresServer":
        if self.run_as:
            pw = pwd.getpwnam(self.run_as)
            os.chown(self.base, pw.pw_uid, pw.pw_gid)
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            SUPERUSER,
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
            "--no-instructions",
        )
        opts = (
            f"-h {self.host} -p {self.port} -k {self.base} -c fsync=off -c synchronous_commit=off "
            f"-c full_page_writes=off -c max_connections=100"
        )
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", opts, "-w", "-t", "60", "start")
        self.started = True
        return self

    def url(self, db: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@{self.host}:{self.port}/{db}"

    def create_db(self, name: str) -> str:
        """Create database ``name`` (C collation, as the cluster); returns its URL."""

        with psycopg.connect(self.url(), autocommit=True) as con:
            con.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        try:
            if self.started and (self.data / "postmaster.pid").exists():
                subprocess.run(
                    self._cmd("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "-t", "30", "stop"),
                    capture_output=True,
                    timeout=60,
                )
        finally:
            self.started = False
            for _ in range(20):  # the server's files may still be closing
                shutil.rmtree(self.base, ignore_errors=True)
                if not self.base.exists():
                    break
                time.sleep(0.1)

    def __enter__(self) -> "PostgresServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False
