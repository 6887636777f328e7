"""The openllm slice as a landing folder, from the real data: what the browser test's populate script and the PostgreSQL
parity check (testing/parity.py, benchmarks/reliability.py) ingest."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from tinybench_assets import paths


def write_openllm_slice(incoming: Path, n_models: int = 40, scenarios=("arc", "mmlu"), common: bool = False) -> Path:
    """The first ``n_models`` models (alphabetical) of each scenario with their items and full scores, copied from the
    real data (``paths.default_data_dir()``) into ``incoming/openllm``; a clear error when the data is missing."""

    shared = Path(paths.default_data_dir()) / "openllm"
    if not shared.is_dir():
        raise SystemExit(f"real data not found at {shared.parent} (set TINYBENCH_DEFAULT_DATA)")
    (incoming / "openllm").mkdir(parents=True, exist_ok=True)
    both = None
    if common:  # the same models in every scenario: the first n of those that answered all of them
        both = sorted(
            set.intersection(
                *(
                    set(pd.read_parquet(shared / f"{sc}.responses.parquet", columns=["model"])["model"])
                    for sc in scenarios
                )
            )
        )[:n_models]
    for sc in scenarios:
        resp = pd.read_parquet(shared / f"{sc}.responses.parquet")
        models = both if common else sorted(resp["model"].unique())[:n_models]
        resp[resp["model"].isin(models)].to_parquet(incoming / "openllm" / f"{sc}.responses.parquet", index=False)
        pd.read_parquet(shared / f"{sc}.items.parquet").to_parquet(
            incoming / "openllm" / f"{sc}.items.parquet", index=False
        )
        fs = pd.read_parquet(shared / f"{sc}.full_scores.parquet")
        fs[fs["model"].isin(models)].to_parquet(incoming / "openllm" / f"{sc}.full_scores.parquet", index=False)
    return incoming
