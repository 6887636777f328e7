"""The distinct-board benchmark's own figures (benchmarks/distinct_boards.py): what shrinking random items could
reach, coverage per held-out family, the spread over predictor seeds."""

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import distinct_boards as db  # noqa: E402
import distinct_report  # noqa: E402


def _board(spread: float, models: int = 40, items: int = 400, seed: int = 0):
    rng = np.random.default_rng(seed)
    p = np.clip(0.5 + spread * rng.standard_normal(models), 0.02, 0.98)
    Y = (rng.random((models, items)) < p[:, None]).astype(float)
    return Y, np.ones(items), {"s": np.arange(items)}, np.zeros(items, dtype=int)


def test_shrinkage_reach_follows_the_board_spread_against_the_noise_of_n_random_items():
    Y, w, cols, subs = _board(0.25)
    wide = db.shrinkage_reach(Y, w, cols, subs, 30)
    Y, w, cols, subs = _board(0.02)
    narrow = db.shrinkage_reach(Y, w, cols, subs, 30)
    assert 0.9 < wide < 1.0  # a spread far above 30 items' noise: shrinking gains little
    assert narrow < 0.5  # a board of near-equal models: its mean says more than 30 items
    # more items, less noise: closer to 1
    assert db.shrinkage_reach(Y, w, cols, subs, 200) > narrow


class _Pred:
    def __init__(self, frames, models):
        self.frames = frames
        self.layout_ = type("L", (), {"models": models})()

    def oof_intervals(self, n):
        return self.frames[n]


def test_family_coverage_pools_a_family_over_its_models_scenarios_and_budgets():
    models = ["m0", "m1", "m2"]
    fam = np.array(["a", "a", "b"])

    def frame(hit_b):
        return pd.DataFrame(
            {
                "model": models,
                "scenario": "s",
                "estimate": 0.5,
                "lower": [0.4, 0.4, 0.4 if hit_b else 0.6],
                "upper": 0.7,
                "truth_t1": 0.5,
            }
        )

    out = db.family_coverage(_Pred({30: frame(False), 100: frame(True)}, models), fam, [30, 100])
    assert out == {
        "families": 2,
        "below_075": 1,
        "expected_below_075": 0.24,
        "min_coverage": 0.5,
        "worst": ["b", 0.5, 2],
    }


def test_seed_spread_lists_every_seed_and_their_mean():
    def res(r):
        return {
            "x": {
                "by_n": {"30": {"ratio": r, "max_scenario_ratio": r, "coverage": 0.9, "shrinkage_reach": 0.8}},
                "families": {"below_075": int(r > 1), "families": 4, "expected_below_075": 0.2},
            }
        }

    out = distinct_report.seed_spread({0: res(0.7), 3: res(1.1)})["x"]["30"]
    assert out["seeds"] == [0, 3] and out["ratio"] == [0.7, 1.1] and out["families_below_075"] == [0, 1]
    assert out["mean_ratio"] == 0.9 and out["mean_coverage"] == 0.9 and out["families"] == 4


def test_frontier_figures_hold_the_strongest_models_out_and_score_them_through_the_served_path():
    rng = np.random.default_rng(3)
    models, items = 16, 320
    theta, b = np.linspace(-2.0, 2.0, models), rng.normal(0.0, 1.0, items)
    Y = (rng.random((models, items)) < 1 / (1 + np.exp(-(theta[:, None] - b)))).astype(float)
    fam = np.array([f"f{i}" for i in range(models)])
    cols, w, subs = {"s": np.arange(items)}, np.ones(items), np.array(["u"] * items)
    items_ids = np.array([f"i{j}" for j in range(items)])
    out = db.frontier_figures(Y, w, cols, fam, items_ids, subs, (10, 30, 100), k=4)
    acc = Y.mean(1)
    assert out["models"] == 4 and sorted(out["held_out"]) == sorted(round(100 * x, 2) for x in np.sort(acc)[-4:])
    assert out["board_max"] == round(100 * np.sort(acc)[-5], 2) < min(out["held_out"])
    assert set(out["by_n"]) == {"30", "100"}  # 320 items: n = 100 is reported
    for v in out["by_n"].values():
        assert v["served_mae"] > 0 and v["random_mae"] > 0 and 0.0 <= v["coverage"] <= 1.0
        assert abs(v["ratio"] - v["served_mae"] / v["random_mae"]) < 1e-3  # the figures are rounded to 3 places
        assert abs(v["bias"]) <= v["served_mae"] and v["half_width"] > 0


def test_routerbench_board_is_read_by_the_products_reader_with_its_families():
    """The several-vendor board (RouterBench MBPP): both files through io.drops.read_drop, one row per model, the
    product's families (the Claude models one, the GPT models another), and no frontier case (too few models)."""
    from tinybench_assets_tests.conftest import SHARED, _need_shared

    _need_shared()
    m, fam = db.routerbench_board(SHARED)
    assert m.scores.shape == (11, 427) and not np.isnan(m.scores).any()
    by_model = dict(zip(m.models, fam))
    assert by_model["claude-v1"] == by_model["claude-v2"] == by_model["claude-instant-v1"]
    assert by_model["gpt-4-1106-preview"] == by_model["gpt-3.5-turbo-1106"] != by_model["claude-v1"]
    assert len(set(fam)) == 8 and len(m.models) < db.MIN_FRONTIER_BOARD
    assert db.routerbench_board(SHARED / "no-such-folder") is None
