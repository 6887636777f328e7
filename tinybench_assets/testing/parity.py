"""The PostgreSQL profile against the DuckDB default: ingest and one scenario partition's assets run twice,
once on DuckDB (an ephemeral instance, a DuckDB file) and once with both the Dagster instance (deploy/dagster.yaml) and
the results store on PostgreSQL, then every stored row of that partition and every ingest table is compared.

Used by tinybench_assets_tests/test_deploy/test_postgres.py and benchmarks/reliability.py (``postgres_matches_duckdb``).
"""

from __future__ import annotations

import math
import os
import shutil
import time
from pathlib import Path

import dagster as dg
import numpy as np
import pandas as pd

from tinybench_assets.defs.assets import irt
from tinybench_assets.defs.assets import responses as resp_assets
from tinybench_assets.defs.resources import LandingResource, ModelStore, StoreResource, TorchDevice
from tinybench_assets.io.store import Store
from tinybench_assets.paths import PROJECT_ROOT as ROOT
from tinybench_assets.testing.openllm_slice import write_openllm_slice  # noqa: F401 - re-exported

KEY = "openllm.arc"
ASSETS = [resp_assets.raw_responses, resp_assets.response_matrix, resp_assets.binarized_responses, irt.irt_model]
RUN_CONFIG = {"ops": {"irt_model": {"config": {"dims": [1, 2]}}}}
INGEST_TABLES = ("drops", "landed_responses", "landed_costs", "items", "full_scores", "scenarios", "quarantine")

PG_ENV = ("DAGSTER_PG_HOST", "DAGSTER_PG_PORT", "DAGSTER_PG_USER", "DAGSTER_PG_PASSWORD", "DAGSTER_PG_DB")


def deploy_instance(server, home: Path, db: str = "dagster") -> dg.DagsterInstance:
    """A Dagster instance from deploy/dagster.yaml (copied to ``home``) whose storage is database ``db`` on ``server``
    (created here), its connection given through the DAGSTER_PG_* variables, as a team would."""
    server.create_db(db)
    home.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "deploy" / "dagster.yaml", home / "dagster.yaml")
    os.environ.update(
        DAGSTER_PG_HOST=server.host,
        DAGSTER_PG_PORT=str(server.port),
        DAGSTER_PG_USER="tinybench",
        DAGSTER_PG_PASSWORD="unused-trust-auth",
        DAGSTER_PG_DB=db,
    )
    return dg.DagsterInstance.from_config(str(home))


def run_partition(instance: dg.DagsterInstance, target: str, incoming: Path, quarantine: Path, key: str = KEY) -> None:
    """landing_ingest, then ``ASSETS`` for partition ``key``, with the results store at ``target``."""
    res = {
        "store": StoreResource(database=str(target)),
        "landing": LandingResource(incoming=str(incoming), quarantine=str(quarantine)),
        "torch_device": TorchDevice(device="cpu", num_threads=1),
        "model_store": ModelStore(),
    }
    assert dg.materialize([resp_assets.landing_ingest], instance=instance, resources=res).success
    assert dg.materialize(ASSETS, partition_key=key, instance=instance, resources=res, run_config=RUN_CONFIG).success


def _timeless(df: pd.DataFrame) -> pd.DataFrame:
    keep = [
        c
        for c in df.columns
        if not (c.endswith("_at") or "seconds" in c or "time" in c or pd.api.types.is_datetime64_any_dtype(df[c]))
    ]
    return df[keep]


def _cell(v):
    if isinstance(v, np.ndarray):
        return tuple(float(x) for x in v)
    if isinstance(v, np.generic):
        return v.item()
    return None if v is pd.NA else v


def stored_rows(store: Store, key: str = KEY) -> dict[str, pd.DataFrame]:
    """Every ingest table whole and every other table's rows of partition ``key``: run times dropped, cells as plain
    Python values (lists as tuples, integers of any width as int), rows sorted, so two engines compare exactly."""
    out = {}
    for table in store.tables():
        cols = store.query(f'SELECT * FROM "{table}" LIMIT 0').columns
        if table in INGEST_TABLES:
            df = store.query(f'SELECT * FROM "{table}"')
        elif "partition_key" in cols:
            df = store.query(f'SELECT * FROM "{table}" WHERE partition_key = ?', [key])
        else:
            continue
        df = _timeless(df)
        df = pd.DataFrame({c: [_cell(v) for v in df[c]] for c in df.columns}, columns=df.columns, dtype=object)
        out[table] = df.sort_values(list(df.columns), key=lambda s: s.map(repr)).reset_index(drop=True)
    return out


def compare(a: dict[str, pd.DataFrame], b: dict[str, pd.DataFrame]) -> tuple[dict[str, str], float]:
    """(problems by table, the largest absolute difference between two floats); no problem = identical rows, floats
    equal to 1e-12 (the difference is reported; 0.0 means bit for bit)."""
    problems, worst = {}, 0.0
    for table in sorted(set(a) | set(b)):
        if table not in a or table not in b:
            problems[table] = "only on " + ("DuckDB" if table in a else "PostgreSQL")
            continue
        x, y = a[table], b[table]
        if list(x.columns) != list(y.columns) or len(x) != len(y):
            problems[table] = f"columns {list(x.columns)} / {list(y.columns)}, rows {len(x)} / {len(y)}"
            continue
        for c in x.columns:
            for u, v in zip(x[c], y[c]):
                us, vs = (u, v) if isinstance(u, tuple) and isinstance(v, tuple) else ((u,), (v,))
                for p, q in zip(us, vs):
                    if isinstance(p, float) and isinstance(q, float):
                        if math.isnan(p) and math.isnan(q):
                            continue
                        worst = max(worst, abs(p - q))
                        if not abs(p - q) <= 1e-12:
                            problems.setdefault(table, f"column {c}: {p!r} != {q!r}")
                    elif p != q or len(us) != len(vs):
                        problems.setdefault(table, f"column {c}: {u!r} != {v!r}")
    return problems, worst


def postgres_matches_duckdb(incoming: Path, work: Path, server) -> dict:
    """Run ingest and partition ``KEY`` on DuckDB, then on PostgreSQL (instance and results), and compare. Returns
    ``match`` (bool), ``tables``, ``rows``, ``max_abs_float_diff``, ``problems``, the PostgreSQL instance's runs and
    partitions, and the seconds of each run."""
    t0 = time.perf_counter()
    duck = work / "duck.duckdb"
    run_partition(dg.DagsterInstance.ephemeral(), str(duck), incoming, work / "q_duck")
    t1 = time.perf_counter()
    instance = deploy_instance(server, work / "dagster_home")
    try:
        url = server.create_db("results")
        run_partition(instance, url, incoming, work / "q_pg")
        runs = instance.get_runs()
        pg_runs = {
            "runs": len(runs),
            "succeeded": sum(r.status == dg.DagsterRunStatus.SUCCESS for r in runs),
            "storage": type(instance.run_storage).__name__,
            "scenario_partitions": sorted(instance.get_dynamic_partitions("scenarios")),
        }
    finally:
        instance.dispose()
    t2 = time.perf_counter()
    a, b = stored_rows(Store(duck)), stored_rows(Store(url))
    problems, worst = compare(a, b)
    return {
        "match": not problems,
        "tables": len(a),
        "rows": int(sum(len(df) for df in a.values())),
        "max_abs_float_diff": worst,
        "problems": problems,
        "pg_instance": pg_runs,
        "seconds": {"duckdb": round(t1 - t0, 1), "postgres": round(t2 - t1, 1)},
    }
