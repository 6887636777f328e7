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
import sys
from pathlib import Path

from tinybench_assets import paths

OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def dagster_home() -> Path:
    """$DAGSTER_HOME, else the project's .dagster_home (the same rule as the CLI's ``_instance()``)."""
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
    return [_dagster_exe(), "dev", "-w", str(paths.PROJECT_ROOT / "workspace.yaml"), "-h", host, "-p", str(port),
            "--log-level", log_level]


def ui_env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    for k, v in OFFLINE_ENV.items():
        env.setdefault(k, v)
    env["DAGSTER_HOME"] = str(home)
    return env


def ui(args: argparse.Namespace) -> int:
    home = dagster_home()
    cmd = ui_command(args.host, args.port, args.log_level)
    env = ui_env(home)
    shown = {k: env[k] for k in ("DAGSTER_HOME", *OFFLINE_ENV, "TINYBENCH_DUCKDB", "TINYBENCH_INCOMING",
                                  "TINYBENCH_QUARANTINE", "TINYBENCH_ARTIFACTS") if k in env}
    print(f"cd {shlex.quote(str(paths.PROJECT_ROOT))} && " + " ".join(f"{k}={shlex.quote(v)}" for k, v in shown.items())
          + " " + shlex.join(cmd), flush=True)
    if args.dry_run:
        return 0
    ensure_home(home)
    print(f"Dagster UI on http://{'localhost' if args.host in ('0.0.0.0', '::') else args.host}:{args.port} "
          f"(instance {home}); Ctrl-C stops it", flush=True)
    os.chdir(paths.PROJECT_ROOT)
    os.execve(cmd[0], cmd, env)  # dagster dev handles Ctrl-C / SIGTERM for its webserver and daemon
    return 0  # pragma: no cover


def add_parsers(sub) -> None:
    p = sub.add_parser("ui", help="start the Dagster UI (dagster dev: webserver + daemon) on the project's instance",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1", help="interface the webserver listens on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=3000, help="webserver port (default 3000)")
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"],
                   help="log level of the Dagster services (default info)")
    p.add_argument("--dry-run", action="store_true", help="print the command and its environment; start nothing")
    p.set_defaults(func=ui)
