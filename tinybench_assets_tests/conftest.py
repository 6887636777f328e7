"""Shared fixtures: small real slices of ../shared/data, written into a temporary landing folder."""
from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tinybench_assets import paths

os.environ.setdefault("HF_HUB_OFFLINE", "1")
SHARED = Path(paths.default_data_dir())


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
