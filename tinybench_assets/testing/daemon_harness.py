"""A real Dagster daemon on a throwaway project home: what the daemon tests (test_daemon/) and benchmarks/daemon.py
drive. ``dagster-daemon run -w workspace.yaml`` (sensors, schedules, the run queue, run monitoring; the webserver
adds nothing to these paths) with the project's instance template, its own landing folder, DuckDB file and
artifacts, and ``tinybench run-all`` as a user runs it, in a subprocess with the same environment."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import duckdb
import pandas as pd

from tinybench_assets import paths
from tinybench_assets.cli.ui import ui_env
from tinybench_assets.definitions import build_defs
from tinybench_assets.io.store import Store
from tinybench_assets.orchestration.dagster_private import (
    InstanceRef,
    TickStatus,
    WorkspaceFileTarget,
    WorkspaceProcessContext,
    _create_run,
)
from tinybench_assets.orchestration.refresh_plan import decide
from tinybench_assets.testing.instance_records import InstanceRecords
from tinybench_assets.testing.openllm_slice import write_openllm_slice

VENV_BIN = Path(sys.executable).parent


def write_slice(incoming: Path, n_models: int = 40, routerdc_records: int = 60, common_models: bool = False) -> None:
    """openllm arc + mmlu (the first ``n_models`` models; of those in both scenarios when ``common_models``) and
    RouterDC mmlu / gsm8k (the first records), real data."""

    write_openllm_slice(incoming, n_models=n_models, common=common_models)
    if not routerdc_records:
        return
    (incoming / "routerdc").mkdir(parents=True, exist_ok=True)
    shared = Path(paths.default_data_dir()) / "routerdc"
    for name in ("mmlu_train.json", "gsm8k-train.json"):
        recs = json.loads((shared / name).read_text())[:routerdc_records]
        (incoming / "routerdc" / name).write_text(json.dumps(recs))


class DaemonProject(InstanceRecords):
    """A project home under ``root``: Dagster instance, landing and quarantine folders, DuckDB file, artifacts. What
    its instance recorded (runs, materializations, sensor ticks, workers' pids) is read by ``InstanceRecords``."""

    def __init__(self, root: Path, sensor_interval_s: int = 30):  # the product default (sensors.SENSOR_INTERVAL_S)
        self.root = Path(root)
        self.home, self.incoming = self.root / "dagster_home", self.root / "incoming"
        self.quarantine, self.db, self.artifacts = (
            self.root / "quarantine",
            self.root / "tb.duckdb",
            self.root / "artifacts",
        )
        self.home.mkdir(parents=True, exist_ok=True)
        self.incoming.mkdir(parents=True, exist_ok=True)
        # the instance a user gets (dagster.yaml.template): run queue, concurrency pools, run monitoring
        (self.home / "dagster.yaml").write_text((paths.PROJECT_ROOT / "dagster.yaml.template").read_text())
        self.sensor_interval_s = sensor_interval_s
        self.daemon: subprocess.Popen | None = None
        self.log = self.root / "daemon.log"
        self._instance = None
        self._defs = None

    def env(self) -> dict[str, str]:
        """The environment ``tinybench ui`` gives the daemon (``cli.ui.ui_env``), with this project's paths."""

        env = ui_env(self.home)
        env.update(
            {
                "DAGSTER_HOME": str(self.home),
                "TINYBENCH_INCOMING": str(self.incoming),
                "TINYBENCH_QUARANTINE": str(self.quarantine),
                "TINYBENCH_DUCKDB": str(self.db),
                "TINYBENCH_ARTIFACTS": str(self.artifacts),
                "TINYBENCH_SENSOR_INTERVAL_S": str(self.sensor_interval_s),
                "HF_HUB_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1",
                "TOKENIZERS_PARALLELISM": "false",
                "DAGSTER_DISABLE_TELEMETRY": "1",
                "PYTHONUNBUFFERED": "1",
            }
        )
        env.pop("TINYBENCH_STORE", None)
        env.pop("PYTEST_XDIST_WORKER", None)
        return env

    # --- the daemon ---------------------------------------------------------------------------------------------
    def start(self) -> None:
        assert self.daemon is None, "the daemon is already running"
        _ = self.instance  # creates the instance's SQLite schema first: two processes migrating one new file race
        with open(self.log, "a") as log:
            log.write(f"\n--- dagster-daemon start {time.strftime('%H:%M:%S')}\n")
            self.daemon = subprocess.Popen(
                [str(VENV_BIN / "dagster-daemon"), "run", "-w", str(paths.PROJECT_ROOT / "workspace.yaml")],
                cwd=paths.PROJECT_ROOT,
                env=self.env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def stop(self) -> None:
        """Stop the daemon (SIGTERM to its process group, SIGKILL after 30 s); the runs it launched keep going."""
        if self.daemon is None:
            return
        pgid = self.daemon.pid
        try:
            os.killpg(pgid, signal.SIGTERM)
            self.daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(pgid, signal.SIGKILL)
            self.daemon.wait(timeout=10)
        except ProcessLookupError:
            pass
        self.daemon = None

    def tail(self, n: int = 40) -> str:
        return "\n".join(self.log.read_text().splitlines()[-n:]) if self.log.exists() else ""

    # --- the instance, the decision, run-all ---------------------------------------------------------------------
    @property
    def instance(self):
        if self._instance is None:
            self._instance = dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(self.home)))
        return self._instance

    def close(self) -> None:
        self.stop()
        if self._instance is not None:
            self._instance.dispose()
            self._instance = None

    def decision(self):
        """The refresh decision as the daemon's sensor takes it now (run in this process, with this project's paths)."""

        saved = {
            k: os.environ.get(k)
            for k in ("TINYBENCH_INCOMING", "TINYBENCH_QUARANTINE", "TINYBENCH_DUCKDB", "TINYBENCH_ARTIFACTS")
        }
        os.environ.update({k: self.env()[k] for k in saved})
        try:
            if self._defs is None:
                self._defs = build_defs()
            return decide(self._defs, self.instance, Store(str(self.db)), self.incoming)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def wait_converged(self, timeout_s: float = 600.0, settle_s: float | None = None) -> float:
        """Seconds until no run is live and the decision (the sensor's own: while it has work, the sensor requests
        it) has no work for ``settle_s``; raises TimeoutError (with the daemon's log) otherwise."""
        # the decision checked here is the sensor's own, so one tick's worth of quiet is enough
        settle_s = settle_s if settle_s is not None else 2.0
        t0, quiet_since, pending, decided = time.monotonic(), None, None, 0.0  # pending: the last decision's work
        while time.monotonic() - t0 < timeout_s:
            busy = bool(self.live_runs())
            # the decision (about a CPU-second on a small project) only when no run is live, and at most every 2 s
            # (polled every second it took a core from the daemon it waits for); a live run forces a fresh one
            if busy:
                pending = None
            else:
                if pending is None or time.monotonic() - decided >= 2.0:
                    pending, decided = self.decision().work, time.monotonic()
                busy = bool(pending)
            if busy:
                quiet_since = None
            elif quiet_since is None:
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since >= settle_s:
                return quiet_since - t0
            time.sleep(1.0)
        raise TimeoutError(
            f"the daemon did not converge in {timeout_s:.0f} s; live runs "
            f"{[(r.job_name, r.tags.get('dagster/partition'), r.status.value) for r in self.live_runs()]}; "
            f"the last decision's work {'none taken since a run was live' if pending is None else pending}; "
            f"daemon log:\n{self.tail()}"
        )

    def run_all(self, *args: str, timeout_s: float = 900.0) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(VENV_BIN / "tinybench"), "run-all", "--no-seed", *args],
            cwd=paths.PROJECT_ROOT,
            env={**self.env(), "TINYBENCH_SCENARIO_JOBS": os.environ.get("TINYBENCH_SCENARIO_JOBS", "0")},
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )

    def wait_sensor_ticks(self, sensor: str, n: int, timeout_s: float = 120.0) -> list:
        """The first ``n`` ticks of ``sensor`` that start after now, once they have ended (TimeoutError otherwise)."""

        t_start = time.time()
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout_s:
            ticks = [t for t in self.sensor_ticks(sensor) if t.timestamp >= t_start and t.status != TickStatus.STARTED]
            if len(ticks) >= n:
                return ticks[:n]
            time.sleep(0.5)
        raise TimeoutError(f"{sensor}: fewer than {n} ticks in {timeout_s:.0f} s; daemon log:\n{self.tail()}")


@contextlib.contextmanager
def _workspace(project: DaemonProject):
    """(request context, code location, repository) of the project's workspace.yaml, loaded as the daemon loads it
    (the project's environment set meanwhile)."""
    saved = dict(os.environ)
    os.environ.update(project.env())
    try:
        target = WorkspaceFileTarget([str(paths.PROJECT_ROOT / "workspace.yaml")])
        with WorkspaceProcessContext(project.instance, target) as ctx:
            ws = ctx.create_request_context()
            location = ws.get_code_location("tinybench")
            yield ws, location, next(iter(location.get_repositories().values()))
    finally:
        os.environ.clear()
        os.environ.update(saved)


def queue_runs(project: DaemonProject, job_name: str, n: int) -> list[str]:
    """Submit ``n`` runs of ``job_name`` to the daemon's run queue at once, as the UI's Launch button does; returns
    their run ids. They launch as the "duckdb" pool frees up (two at a time), the rest waiting in the queue."""
    with _workspace(project) as (ws, location, repo):
        job = repo.get_full_job(job_name)
        ids = []
        for _ in range(n):
            run = _create_run(
                instance=project.instance,
                code_location=location,
                remote_repo=repo,
                remote_job=job,
                run_config={},
                tags={"tinybench/test": "queued"},
                op_selection=None,
                run_id=None,
            )
            ids.append(project.instance.submit_run(run.run_id, ws).run_id)
        return ids


def stop_schedules(project: DaemonProject) -> list[str]:
    """Stop the project's schedules in its instance, as the UI's toggle does (the daemon then ticks none); returns
    their names. The nightly schedules (03:00, 03:15, 04:00) launch runs of their own when a test happens to run
    then: a test of what the refresh sensor launches stops them first."""
    with _workspace(project) as (_, _, repo):
        schedules = list(repo.get_schedules())
        for sch in schedules:
            project.instance.stop_schedule(sch.get_remote_origin_id(), sch.selector_id, sch)
        return [sch.name for sch in schedules]


#: columns two projects cannot share: wall times, creation stamps and absolute paths (and every ``*_at`` / ``*seconds`` column)
VOLATILE = ("seconds", "path", "created")


def store_tables(db: Path) -> dict:
    """Every table of a DuckDB store, rows in a canonical order, without the columns two projects cannot share."""

    con = duckdb.connect(str(db), read_only=True)
    try:
        out = {}
        for (table,) in con.execute("SELECT table_name FROM information_schema.tables ORDER BY 1").fetchall():
            cols = [
                c
                for (c,) in con.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position",
                    [table],
                ).fetchall()
                if c not in VOLATILE and not c.endswith(("_at", "seconds"))
            ]
            df = con.execute(
                f'SELECT {", ".join(chr(34) + c + chr(34) for c in cols)} FROM "{table}" ORDER BY ALL'
            ).df()
            out[table] = df.map(lambda v: tuple(v) if hasattr(v, "__len__") and not isinstance(v, str) else v)
        return out
    finally:
        con.close()


def assert_same_store(a: Path, b: Path) -> None:
    """The two stores hold the same rows, floats to 1e-9 (AssertionError naming the table otherwise)."""
    assert_same_tables(store_tables(a), store_tables(b))


def assert_same_tables(ta: dict, tb: dict) -> None:

    assert sorted(ta) == sorted(tb), (sorted(ta), sorted(tb))
    for name in ta:
        pd.testing.assert_frame_equal(ta[name], tb[name], check_exact=False, rtol=0, atol=1e-9, obj=name)


def orphan_failures(project: DaemonProject, run_ids) -> list[str]:
    """The runs among ``run_ids`` marked FAILED as orphaned."""

    out = []
    for run_id in run_ids:
        fails = project.instance.all_logs(run_id, of_type=dg.DagsterEventType.RUN_FAILURE)
        if any("Orphaned run" in (e.message or "") for e in fails):
            out.append(run_id)
    return out
