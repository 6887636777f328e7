"""Re-materializing with unchanged inputs gives identical results (issue 14): a scenario partition's ingest-side
assets and its IRT fit, materialized twice, leave every stored row of that partition the same (times aside)."""

import dagster as dg
import pandas as pd

from tinybench_assets.defs.assets import irt
from tinybench_assets.defs.assets import responses as resp_assets
from tinybench_assets.io.store import Store
from tinybench_assets_tests.test_defs.test_definitions import materialize_foundation, resources_for

KEY = "openllm.arc"


def partition_rows(store: Store, key: str) -> dict[str, pd.DataFrame]:
    """Every table's rows of partition ``key``, without run times, sorted, so two runs can be compared exactly."""
    out = {}
    for table in store.tables():
        cols = store.query(f'SELECT * FROM "{table}" LIMIT 0').columns
        if "partition_key" not in cols:
            continue
        df = store.query(f'SELECT * FROM "{table}" WHERE partition_key = ?', [key])
        timeless = [
            c
            for c in df.columns
            if not (c.endswith("_at") or "seconds" in c or "time" in c or pd.api.types.is_datetime64_any_dtype(df[c]))
        ]
        df = df[timeless]
        sortable = [
            c for c in df.columns if df[c].map(lambda v: isinstance(v, (str, int, float, bool)) or v is None).all()
        ]
        out[table] = df.sort_values(sortable).reset_index(drop=True) if sortable else df
    return out


def test_rematerializing_with_unchanged_inputs_gives_identical_tables(landing):
    instance = dg.DagsterInstance.ephemeral()
    materialize_foundation(landing, instance)
    res = resources_for(landing)
    assets = [resp_assets.raw_responses, resp_assets.response_matrix, resp_assets.binarized_responses, irt.irt_model]
    cfg = {"ops": {"irt_model": {"config": {"dims": [1, 2]}}}}
    store = Store(landing["db"])
    assert dg.materialize(assets, partition_key=KEY, instance=instance, resources=res, run_config=cfg).success
    first = partition_rows(store, KEY)
    assert dg.materialize(assets, partition_key=KEY, instance=instance, resources=res, run_config=cfg).success
    second = partition_rows(store, KEY)
    assert first.keys() == second.keys() and {"binarized", "irt_items"} <= set(first), sorted(first)
    for table in first:
        assert len(first[table]) > 0 or table not in ("binarized", "irt_items"), table
        pd.testing.assert_frame_equal(first[table], second[table], check_exact=True, obj=table)
