"""``tinybench ui``: the Dagster UI (webserver and daemon, ``dagster dev``) on the project's instance.

    tinybench ui                                  # http://127.0.0.1:3000
    tinybench ui --host 0.0.0.0 --port 3001       # reachable from other machines
    tinybench ui --dry-run                        # print the command and its environment, start nothing

The instance is ``$DAGSTER_HOME`` or, unset, the project's ``.dagster_home/`` (its dagster.yaml copied from
dagster.yaml.template when missing), the one ``tinybench run-all`` records its runs in. The code location is the
project's workspace.yaml. Hub access is off (HF_HUB_OFFLINE=1, TRANSFORMERS_OFFLINE=1, as in scripts/env.sh); the
TINYBENCH_* paths, when set, pass through. The daemon runs the landing sensor and the nightly schedule.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from tinybench_assets import paths

OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def dagster_home() -> Path:
    """$DAGSTER_HOME, else the project's .dagster_home (the same rule as run-all's ``project_instance()``)."""
    home = os.environ.get("DAGSTER_HOME")
    return Path(home).expanduser() if home else paths.PROJECT_ROOT / ".dagster_home"


def ensure_home(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "dagster.yaml").exists():
        (home / "dagster.yaml").write_text((paths.PROJECT_ROOT / "dagster.yaml.template").read_text())


def _dagster_exe() -> str:
    exe = shutil.which("dagster", path=str(Path(sys.executable).parent)) or shutil.which("dagster")
    if not exe:
        raise SystemExit("tinybench ui: the dagster command is not installed in this environment")
    return exe


def ui_command(host: str, port: int, log_level: str = "info") -> list[str]:
    return [
        _dagster_exe(),
        "dev",
        "-w",
        str(paths.PROJECT_ROOT / "workspace.yaml"),
        "-h",
        host,
        "-p",
        str(port),
        "--log-level",
        log_level,
    ]


#: runs the daemon may execute at once against the DuckDB file: the "duckdb" pool's limit in dagster.yaml.template
RUNS_AT_ONCE = 2


def run_worker_threads(cores: int | None = None) -> int:
    """torch threads of each run worker the daemon launches: the cores shared by the runs it executes at once (1 on
    2 cores, as run-all's one-thread worker processes: an IRT fit on 2 threads ran only 1.12x its 1-thread speed, and
    one thread each also gives the floats run-all gives)."""
    return max(1, (cores or os.cpu_count() or 1) // RUNS_AT_ONCE)


def ui_env(home: Path) -> dict[str, str]:
    """The environment of ``dagster dev`` (webserver, daemon, code servers and the run workers they start)."""
    env = dict(os.environ)
    for k, v in OFFLINE_ENV.items():
        env.setdefault(k, v)
    env.setdefault("TINYBENCH_TORCH_THREADS", str(run_worker_threads()))
    env["DAGSTER_HOME"] = str(home)
    return env


def ui(args: argparse.Namespace) -> int:
    home = dagster_home()
    cmd = ui_command(args.host, args.port, args.log_level)
    env = ui_env(home)
    shown = {
        k: env[k]
        for k in (
            "DAGSTER_HOME",
            *OFFLINE_ENV,
            "TINYBENCH_TORCH_THREADS",
            "TINYBENCH_DUCKDB",
            "TINYBENCH_INCOMING",
            "TINYBENCH_QUARANTINE",
            "TINYBENCH_ARTIFACTS",
        )
        if k in env
    }
    print(
        f"cd {shlex.quote(str(paths.PROJECT_ROOT))} && "
        + " ".join(f"{k}={shlex.quote(v)}" for k, v in shown.items())
        + " "
        + shlex.join(cmd),
        flush=True,
    )
    if args.dry_run:
        return 0
    ensure_home(home)
    print(
        f"Dagster UI on http://{'localhost' if args.host in ('0.0.0.0', '::') else args.host}:{args.port} "
        f"(instance {home}); Ctrl-C stops it",
        flush=True,
    )
    return supervise(cmd, env, cwd=paths.PROJECT_ROOT)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _wait_group(pgid: int, seconds: float) -> bool:
    """True when every process of the group has exited within ``seconds``."""
    deadline = time.monotonic() + seconds
    while _group_alive(pgid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def supervise(cmd: list[str], env: dict[str, str], cwd: Path, grace_s: float = 15.0) -> int:
    """Run ``dagster dev`` in its own process group and stop all of it on Ctrl-C or SIGTERM, in bounded time.

    ``dagster dev`` stops its webserver and daemon on SIGINT, but the code servers those start (``dagster
    code-server start`` and its ``dagster api grpc``) only exit when their heartbeat times out, and on a busy
    machine the whole shutdown outlived a 20 s stop. So the signal goes to the whole group as a terminal's Ctrl-C
    would; whatever of the group is still alive ``grace_s`` seconds later gets SIGTERM, then SIGKILL 5 s after.
    """
    proc = subprocess.Popen(cmd, env=env, cwd=str(cwd), start_new_session=True)
    pgid = proc.pid
    stop_at: list[float] = []

    def forward(signo, _frame):
        if not stop_at:
            stop_at.append(time.monotonic() + grace_s)
        try:
            os.killpg(pgid, signal.SIGINT)
        except ProcessLookupError:
            pass

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while proc.poll() is None and not (stop_at and time.monotonic() > stop_at[0]):
            time.sleep(0.2)
        # the rest of the group (dagster dev itself if still there, code servers) gets what is left of the grace
        _wait_group(pgid, max(0.0, stop_at[0] - time.monotonic()) if stop_at else grace_s)
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if not _group_alive(pgid):
                break
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                break
            _wait_group(pgid, 5.0)
        if proc.poll() is None:
            proc.wait(timeout=5)
    print("Dagster UI stopped (webserver, daemon and code servers)", flush=True)
    rc = proc.returncode
    return 0 if stop_at or rc in (0, -signal.SIGINT, 130) else rc


def add_parsers(sub) -> None:
    p = sub.add_parser(
        "ui",
        help="start the Dagster UI (dagster dev: webserver + daemon) on the project's instance",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--host", default="127.0.0.1", help="interface the webserver listens on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=3000, help="webserver port (default 3000)")
    p.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug"],
        help="log level of the Dagster services (default info)",
    )
    p.add_argument("--dry-run", action="store_true", help="print the command and its environment; start nothing")
    p.set_defaults(func=ui)
