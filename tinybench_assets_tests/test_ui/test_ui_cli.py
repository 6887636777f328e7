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
        proc = subprocess.Popen([str(exe), "ui", "--port", str(port), "--log-level", "warning"], env=env, stdout=fh,
                                stderr=subprocess.STDOUT, start_new_session=True)
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
        leftover = _stop(proc)
    assert not leftover, f"processes of `tinybench ui` still running 20 s after SIGTERM (killed): {leftover}"
    with socket.socket() as s:  # nothing listens on the port any more
        assert s.connect_ex(("127.0.0.1", port)) != 0


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def _stop(proc: subprocess.Popen) -> list[str]:
    """SIGTERM the process group (dagster dev stops its webserver and daemon), wait up to 20 s for all of it to
    exit; SIGKILL what is left and return its command lines."""
    pgid = proc.pid
    if _group_alive(pgid):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.time() + 20
    while time.time() < deadline and _group_alive(pgid):
        proc.poll()
        time.sleep(0.2)
    leftover = []
    if _group_alive(pgid):
        out = subprocess.run(["ps", "-o", "pid=,args=", "-g", str(pgid)], capture_output=True, text=True).stdout
        leftover = [line.strip() for line in out.splitlines() if line.strip()]
        os.killpg(pgid, signal.SIGKILL)
    if proc.poll() is None:
        proc.wait(timeout=10)
    return leftover
