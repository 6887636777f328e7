"""One `tinybench run-all` per project at a time: the second waits in the kernel (no CPU) with a message, or with
--no-wait refuses at once. Before, two concurrent run-alls both spun in Dagster's in-process executor."""

from __future__ import annotations

import fcntl
import subprocess
import sys
import time
from pathlib import Path

from tinybench_assets import paths
from tinybench_assets.cli import main
from tinybench_assets.cli.run_all import RunAllBusy, lock_path, project_run_lock

WAITER = """
import sys, time
from pathlib import Path
from tinybench_assets.cli.run_all import project_run_lock
with project_run_lock(Path(sys.argv[1]), wait=True, say=lambda s: print(s, flush=True)):
    print("got the lock", flush=True)
"""


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100.0  # utime + stime, clock ticks


def test_second_run_waits_without_spinning_and_starts_when_the_first_ends(tmp_path):
    path = tmp_path / "store.duckdb.run-all.lock"
    with project_run_lock(path):
        assert "pid" in path.read_text()
        proc = subprocess.Popen([sys.executable, "-c", WAITER, str(path)], stdout=subprocess.PIPE, text=True)
        first = proc.stdout.readline()
        assert "another tinybench run-all is running on this project (pid" in first and "waiting" in first
        cpu0 = _cpu_seconds(proc.pid)
        time.sleep(3)
        assert _cpu_seconds(proc.pid) - cpu0 < 0.2  # blocked in flock, not polling
        assert proc.poll() is None
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "starting" in out and "got the lock" in out
    assert path.read_text() == ""  # released and cleared


def test_no_wait_refuses_at_once_with_a_clear_error(capsys):
    path = lock_path()
    assert path.parent == Path(paths.duckdb_path()).parent
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.write("pid 12345, started now")
        fh.flush()
        t0 = time.monotonic()
        assert main(["run-all", "--no-seed", "--no-wait"]) == 3
        assert time.monotonic() - t0 < 5
        err = capsys.readouterr().err
        assert "another tinybench run-all is running on this project (pid 12345" in err and "--no-wait" in err
        try:
            with project_run_lock(path, wait=False):
                raise AssertionError("the lock was free")
        except RunAllBusy:
            pass
        fcntl.flock(fh, fcntl.LOCK_UN)
