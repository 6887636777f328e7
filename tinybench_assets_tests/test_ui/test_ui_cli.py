"""``tinybench ui``: the command it runs, and a real start (webserver answers, daemon heartbeats) and stop."""

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

from tinybench_assets import paths
from tinybench_assets.cli import main


def test_ui_dry_run_prints_dagster_dev_on_the_project_instance(capsys, monkeypatch):
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    assert main(["ui", "--dry-run", "--host", "0.0.0.0", "--port", "3123"]) == 0
    out = capsys.readouterr().out
    assert " dev -w " in out and str(paths.PROJECT_ROOT / "workspace.yaml") in out
    assert "-h 0.0.0.0 -p 3123" in out
    assert f"DAGSTER_HOME={paths.PROJECT_ROOT / '.dagster_home'}" in out and "HF_HUB_OFFLINE=1" in out
    assert "TINYBENCH_DUCKDB=" in out  # the paths pass through (the autouse fixture set them)


def _get(url: str, data: bytes | None = None):
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"} if data else {})
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.loads(r.read())


def test_ui_starts_webserver_and_daemon_and_stops(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    home = tmp_path / "home"  # not there yet: `tinybench ui` creates it with the project's dagster.yaml
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    exe = Path(sys.executable).parent / "tinybench"
    log = tmp_path / "ui.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen(
            [str(exe), "ui", "--port", str(port), "--log-level", "warning"],
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    query = json.dumps({"query": "{ instance { daemonHealth { allDaemonStatuses { daemonType healthy } } } }"}).encode()
    try:
        deadline, healthy = time.time() + 120, False
        while time.time() < deadline and not healthy:
            assert proc.poll() is None, f"tinybench ui exited {proc.returncode}:\n{log.read_text()[-3000:]}"
            try:
                statuses = _get(f"{base}/graphql", query)["data"]["instance"]["daemonHealth"]["allDaemonStatuses"]
                healthy = any(d["daemonType"] == "SENSOR" and d["healthy"] for d in statuses)
            except Exception:  # noqa: BLE001 - not up yet
                pass
            time.sleep(1)
        assert healthy, f"no healthy sensor daemon behind {base} after 120 s:\n{log.read_text()[-3000:]}"
        assert (home / "dagster.yaml").read_text() == (paths.PROJECT_ROOT / "dagster.yaml.template").read_text()
    finally:
        rc, leftover = _stop(proc, home)
    assert rc == 0, f"tinybench ui did not exit by itself within 40 s of SIGTERM (rc {rc}):\n{log.read_text()[-3000:]}"
    assert not leftover, f"processes of `tinybench ui` still running after it exited (killed): {leftover}"
    assert "Dagster UI stopped" in log.read_text()
    with socket.socket() as s:  # nothing listens on the port any more
        assert s.connect_ex(("127.0.0.1", port)) != 0


def _processes_of(home: Path) -> dict[int, str]:
    """pid -> command line of every process whose environment names this DAGSTER_HOME (the UI's children)."""
    found = {}
    needle = f"DAGSTER_HOME={home}".encode()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if needle in (d / "environ").read_bytes().split(b"\0"):
                found[int(d.name)] = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode()[:120]
        except OSError:  # gone, or not ours
            continue
    return found


def _stop(proc: subprocess.Popen, home: Path) -> tuple[int | None, list[str]]:
    """SIGTERM `tinybench ui` (its own process group, as a service manager would) and wait up to 40 s for it
    to exit: it stops dagster dev's whole group before it does. Return its exit code (None: killed) and the
    command lines of any process of this instance still alive afterwards (those are then killed)."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        rc = proc.wait(timeout=40)
    except subprocess.TimeoutExpired:
        rc = None
    time.sleep(0.5)
    left = _processes_of(home)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if rc is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    return rc, [f"{pid} {cmd}" for pid, cmd in left.items()]
