"""Shared fixtures: small real slices of ../shared/data, written into a temporary landing folder."""

from __future__ import annotations

import os

from tinybench_assets.core.parallel import THREAD_ENV  # imports nothing that loads BLAS

# Two xdist workers share two cores, so each worker's thread pools (torch, OpenMP, BLAS), and those of the processes it
# starts, take one thread, as run-all's worker processes do (core.parallel). With two threads in both workers, three
# estimation tests that take 6-12 s alone took 47-53 s each in one suite run (OpenMP threads spinning on a busy core).
THREAD_VARS = (*THREAD_ENV, "TINYBENCH_TORCH_THREADS")
USER_THREADS = {v: os.environ[v] for v in THREAD_VARS if v in os.environ}  # a budget the user set is kept
ONE_THREAD = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1) > 1
if ONE_THREAD:
    for _var in THREAD_VARS:
        os.environ.setdefault(_var, "1")

import json  # noqa: E402 - after the thread budget: BLAS reads it when numpy loads
import pickle  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from tinybench_assets import paths  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# run-all's scenario partitions one after another in its own process: the suite already runs in two xdist workers on
# two cores; the scenario phase (one-thread worker per core) has its own test (test_cli/test_run_all_parallel.py)
os.environ.setdefault("TINYBENCH_SCENARIO_JOBS", "1")
SHARED = Path(paths.default_data_dir())


def _data_snapshot() -> dict[str, tuple[int, int]]:
    data = paths.PROJECT_ROOT / "data"
    return (
        {str(p): (p.stat().st_mtime_ns, p.stat().st_size) for p in data.rglob("*") if p.is_file()}
        if data.is_dir()
        else {}
    )


@pytest.fixture(scope="session", autouse=True)
def _project_data_untouched():
    """Fails the run when any test created, changed or removed a file under the project's data/ folder
    (a user's DuckDB file, landing folder and artifacts live there)."""
    before = _data_snapshot()
    yield
    after = _data_snapshot()
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    if changed:
        pytest.fail(f"tests changed the project's data/ folder: {changed[:10]}", pytrace=False)


@pytest.fixture(autouse=True)
def _isolated_project_data(tmp_path_factory, monkeypatch):
    """No test reads or writes the project's data/ folder (DuckDB file, landing folder, artifacts, plots):
    the defaults point into a fresh temporary folder; a test that needs another place sets it itself."""
    root = tmp_path_factory.mktemp("project_data")
    for var, name in (
        ("TINYBENCH_DUCKDB", "tinybench.duckdb"),
        ("TINYBENCH_INCOMING", "incoming"),
        ("TINYBENCH_QUARANTINE", "quarantine"),
        ("TINYBENCH_ARTIFACTS", "artifacts"),
    ):
        monkeypatch.setenv(var, str(root / name))
    monkeypatch.delenv(
        "TINYBENCH_STORE", raising=False
    )  # the results store is the DuckDB file above unless a test says


def _need_shared() -> None:
    if not (SHARED / "openllm").is_dir():
        pytest.fail(f"real data not found at {SHARED} (set TINYBENCH_DEFAULT_DATA)")


@pytest.fixture(scope="session")
def openllm_slice() -> dict[str, pd.DataFrame]:
    """First 40 models (alphabetical) of openllm arc and mmlu, with their items and full scores."""
    _need_shared()
    out = {}
    for sc in ("arc", "mmlu"):
        resp = pd.read_parquet(SHARED / "openllm" / f"{sc}.responses.parquet")
        models = sorted(resp["model"].unique())[:40]
        out[f"{sc}.responses"] = resp[resp["model"].isin(models)].reset_index(drop=True)
        out[f"{sc}.items"] = pd.read_parquet(SHARED / "openllm" / f"{sc}.items.parquet")
        fs = pd.read_parquet(SHARED / "openllm" / f"{sc}.full_scores.parquet")
        out[f"{sc}.full_scores"] = fs[fs["model"].isin(models)].reset_index(drop=True)
    return out


@pytest.fixture(scope="session")
def routerdc_records() -> dict[str, list]:
    """First 60 records of RouterDC mmlu_train and gsm8k-train."""
    _need_shared()
    return {
        name: json.loads((SHARED / "routerdc" / name).read_text())[:60]
        for name in ("mmlu_train.json", "gsm8k-train.json")
    }


@pytest.fixture()
def landing(tmp_path: Path, openllm_slice, routerdc_records) -> dict[str, Path]:
    """A landing folder holding the slices: openllm/ long tables and routerdc/ JSON."""
    incoming = tmp_path / "incoming"
    (incoming / "openllm").mkdir(parents=True)
    (incoming / "routerdc").mkdir(parents=True)
    for name, df in openllm_slice.items():
        df.to_parquet(incoming / "openllm" / f"{name}.parquet", index=False)
    for name, recs in routerdc_records.items():
        (incoming / "routerdc" / name).write_text(json.dumps(recs))
    return {"incoming": incoming, "quarantine": tmp_path / "quarantine", "db": tmp_path / "tb.duckdb", "root": tmp_path}


def write_tinybenchmarks_pickle(path: Path, responses: pd.DataFrame) -> None:
    """The tinyBenchmarks layout built from a long table: {'models', 'data': {sub: {'correctness': items x models}}}."""
    models = sorted(responses["model"].unique())
    data = {}
    for sub, df in responses.groupby("subscenario"):
        wide = df.pivot(index="item", columns="model", values="score").reindex(columns=models)
        data[f"harness_hendrycksTest_{sub}_5"] = {"correctness": wide.to_numpy(dtype=float)}
    with open(path, "wb") as fh:
        pickle.dump({"models": models, "data": data}, fh)


def synthetic_2pl(n_models: int, n_items: int, dim: int = 1, seed: int = 0):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=(n_models, dim))
    a = np.abs(rng.normal(1.0, 0.3, size=(n_items, dim)))
    b = rng.normal(size=n_items)
    p = 1 / (1 + np.exp(-(theta @ a.T - b)))
    return (rng.random(p.shape) < p).astype(float), theta, a, b


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Under two workers, torch goes back to one thread after a test that raised it (an encoder or a resource sets
    its own count in the test's process)."""
    yield
    if ONE_THREAD and "torch" in sys.modules:
        torch = sys.modules["torch"]
        if torch.get_num_threads() != 1:
            torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _no_leaked_dagster_state_storage():
    """Dagster's schedule and sensor contexts built without ``with`` (``dg.build_sensor_context(instance=...)``) enter
    their instance and leave its state storage as the current one after the test; once that instance is gone, every
    later ``dg.materialize`` in the session fails with "Attempted to resolve undefined DagsterInstance weakref" (seen
    when the deploy tests ran after test_schedule.py). Reset it after each test."""
    yield
    from dagster._core.storage.defs_state.base import _current_storage

    if _current_storage.get() is not None:
        _current_storage.set(None)


def pytest_itemcollected(item):
    """Tests that share a module-scoped fixture (a materialized project, a fitted model) or the PostgreSQL server run on
    one worker (an xdist group), so the fixture is built once: split over both workers, each built its own copy.
    Marked here, as each test is collected: pytest-xdist reads the marks in its own pytest_collection_modifyitems."""
    if item.get_closest_marker("xdist_group") is not None:
        return
    info = getattr(item, "_fixtureinfo", None)
    if info is not None and any(defs[-1].scope == "module" for defs in info.name2fixturedefs.values() if defs):
        item.add_marker(pytest.mark.xdist_group(Path(item.nodeid.split("::")[0]).stem))
    elif "pg_server" in getattr(item, "fixturenames", ()):
        item.add_marker(pytest.mark.xdist_group("pg_server"))


#: test modules that mostly wait on the servers they start (dagster dev, a gRPC code server, step processes)
WAITING = ("tinybench_assets_tests/test_ui/test_ui_cli.py", "tinybench_assets_tests/test_deploy/test_profiles.py")


def pytest_collection_modifyitems(config, items):
    """Modules holding long tests (a ``pytest.mark.timeout`` above the default) run first, the longest budget first,
    every module's tests kept together and in order: the two xdist workers then pick the short tests up at the end
    instead of one worker finishing a long test alone while the other idles (scripts/run_tests.sh keeps this order:
    --no-loadscope-reorder). Of the rest, the modules that mostly wait on servers they start (WAITING) go first: run
    beside the other worker's CPU-bound tests, their waits overlap its work, where at the end of the suite one ran
    alone for half a minute (the ``tinybench ui`` start-and-stop test: 33 s, under 2 CPU-s in the test process)."""

    def budget(item) -> float:
        m = item.get_closest_marker("timeout")
        return float(m.args[0]) if m is not None and m.args else 0.0

    by_module: dict[str, float] = {}
    for it in items:
        by_module[it.nodeid.split("::")[0]] = max(by_module.get(it.nodeid.split("::")[0], 0.0), budget(it))
    items.sort(key=lambda it: (-by_module[it.nodeid.split("::")[0]], not it.nodeid.startswith(WAITING)))  # stable
