"""Benchmark: accuracy estimation from anchor items on the Open LLM Leaderboard data.

Runs :func:`tinybench_assets.core.backtest.run_backtest` on ``openllm/`` (arc, gsm8k, mmlu,
truthfulqa) over seeded train/test splits of models and prints, per scenario, the MAE in accuracy
points of every estimator at n = 10, 20, 30, 50 against

* T1: the model's balance-weighted accuracy on the scenario's whole item pool, and
* T2: its real full-benchmark score (calibrated estimate),

plus 90%-interval coverage. Test models are never used for fitting, choosing D, lambda, the
estimator or the calibration.

Usage::

    flock /tmp/tinybench_heavy.lock .venv/bin/python benchmarks/estimation.py --json OUT.json [--quick]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tinybench_assets.core.backtest import run_backtest  # noqa: E402
from tinybench_assets.core.responses import ResponseMatrix  # noqa: E402

SCENARIOS = ("arc", "gsm8k", "mmlu", "truthfulqa")
N_VALUES = (10, 20, 30, 50)
# the tutorial's estimators as the issue reports them on this data at n = 30 (accuracy points), for reference
REFERENCE_N30 = {"random": {"arc": 4.8, "gsm8k": 5.5, "mmlu": 6.4, "truthfulqa": 5.0},
                 "tutorial_gpirt": {"arc": 2.8, "gsm8k": 3.9, "mmlu": 1.8, "truthfulqa": 2.7}}


def default_data_dir() -> Path:
    """TINYBENCH_DEFAULT_DATA, default ../shared/data (see tinybench_assets.paths)."""
    from tinybench_assets.paths import default_data_dir as _dd

    return Path(_dd())


def load_openllm(data_dir: Path, scenarios=SCENARIOS) -> tuple[ResponseMatrix, pd.DataFrame]:
    """All scenarios' responses as one ResponseMatrix (NaN where a model lacks a scenario) and the full scores."""
    d = Path(data_dir) / "openllm"
    long = pd.concat([pd.read_parquet(d / f"{s}.responses.parquet") for s in scenarios], ignore_index=True)
    full = pd.concat([pd.read_parquet(d / f"{s}.full_scores.parquet") for s in scenarios], ignore_index=True)
    return ResponseMatrix.from_long(long), full


def label(row) -> str:
    if row.clustering in ("correctness", "random", "selected"):
        return row.estimator
    return f"{row.estimator}@{row.clustering}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--quick", action="store_true", help="1 split, at most 2,000 training and 800 test models")
    ap.add_argument("--splits", type=int, default=None, help="number of seeded model splits (default 3; quick 1)")
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--threads", type=int, default=2, help="torch threads")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--csv", type=Path, default=None, help="also write the summary table as CSV")
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    matrix, full = load_openllm(args.data_dir or default_data_dir())
    n_splits = args.splits or (1 if args.quick else 3)
    res = run_backtest(
        matrix, full, n_splits=n_splits, seed=args.seed,
        max_train_models=2000 if args.quick else None,
        max_test_models=800 if args.quick else None,
        predictor_params={"n_values": N_VALUES},
        verbose=True,
    )
    seconds = time.perf_counter() - t0
    summ = res.summary.copy()
    summ["label"] = summ.apply(label, axis=1)

    pd.set_option("display.width", 250)
    pd.set_option("display.max_rows", 500)
    pd.set_option("display.max_columns", 50)
    out: dict = {"mae_t1": {}, "mae_t2": {}, "sd_t1": {}, "sd_t2": {}}
    for tgt in ("t1", "t2"):
        tab = summ.pivot_table(index=["scenario", "label"], columns="n", values=f"mae_{tgt}")
        name = "pool accuracy (T1)" if tgt == "t1" else "full-benchmark score (T2, calibrated)"
        print(f"\n=== MAE in accuracy points vs {name}; {n_splits} split(s), test models only ===")
        print(tab.round(2).to_string())
        for (s, lab), row in tab.iterrows():
            out[f"mae_{tgt}"].setdefault(s, {})[lab] = {int(n): round(float(v), 3) for n, v in row.items()}
        sd = summ.pivot_table(index=["scenario", "label"], columns="n", values=f"sd_{tgt}")
        for (s, lab), row in sd.iterrows():
            out[f"sd_{tgt}"].setdefault(s, {})[lab] = {int(n): round(float(v), 3) for n, v in row.items()}

    sel = summ[summ.estimator.isin(["tinybench", "tinybench_own", "random"])]
    print("\n=== selected estimators: MAE (points), coverage and width of 90% intervals ===")
    cols = ["scenario", "estimator", "n", "mae_t1", "sd_t1", "coverage_t1", "width_t1", "mae_t2", "sd_t2", "coverage_t2", "width_t2"]
    print(sel[cols].round(3).to_string(index=False))

    def mean30(est, tgt, clustering=None, scenario=None):
        s = summ[(summ.estimator == est) & (summ.n == 30)]
        if clustering is not None:
            s = s[s.clustering == clustering]
        if scenario is not None:
            s = s[s.scenario == scenario]
        return float(s[f"mae_{tgt}"].mean()) if len(s) else float("nan")

    # coverage of the 90% intervals, pooled over test models
    e = res.estimates
    in1 = (e.truth_t1 >= e.lower) & (e.truth_t1 <= e.upper)
    ok2 = np.isfinite(e.estimate_t2) & np.isfinite(e.truth_t2)
    in2 = (e.truth_t2 >= e.lower_t2) & (e.truth_t2 <= e.upper_t2)
    tb = e.estimator == "tinybench"
    grp = summ[["coverage_t1", "coverage_t2"]]
    coverage90 = {
        "tinybench_t1": {int(n): round(float(in1[tb & (e.n == n)].mean()), 4) for n in N_VALUES},
        "tinybench_t2": {int(n): round(float(in2[tb & ok2 & (e.n == n)].mean()), 4) for n in N_VALUES},
        "all_estimators_t1": round(float(in1.mean()), 4),
        "all_estimators_t2": round(float(in2[ok2].mean()), 4),
        "min_group_t1": round(float(grp.coverage_t1.min()), 4), "max_group_t1": round(float(grp.coverage_t1.max()), 4),
        "min_group_t2": round(float(grp.coverage_t2.min()), 4), "max_group_t2": round(float(grp.coverage_t2.max()), 4),
        "note": "groups = scenario x clustering x estimator x n, pooled over splits",
    }
    best_t1 = mean30("tinybench", "t1")
    best_t2 = mean30("tinybench", "t2")
    cov_ok = all(0.85 <= v <= 0.95 for v in list(coverage90["tinybench_t1"].values()) + list(coverage90["tinybench_t2"].values()))
    out.update({
        "best_t1_n30_mean": round(best_t1, 3),
        "best_t2_n30_mean": round(best_t2, 3),
        "best_own_t1_n30_mean": round(mean30("tinybench_own", "t1"), 3),
        "best_own_t2_n30_mean": round(mean30("tinybench_own", "t2"), 3),
        # the tutorial's gp-IRT as tinybench implements it, per anchor clustering (the reference numbers
        # come from an independent implementation; they are printed beside ours, not measured here)
        "tutorial_gpirt_t1_n30_mean": {c: round(mean30("gpirt", "t1", c), 3) for c in ("correctness", "irt")},
        "random_t1_n30_mean": round(mean30("random", "t1"), 3),
        "coverage90": coverage90,
        "bars": {"best_t1_n30_mean<=2.3": best_t1 <= 2.3, "best_t2_n30_mean<=2.0": best_t2 <= 2.0,
                 "tinybench_coverage90_in_[0.85,0.95]": cov_ok},
        "reference_n30": REFERENCE_N30,
        "selection": res.selection.to_dict(orient="records"),
        "dims": res.dims.to_dict(orient="records"),
        "timings": res.timings.to_dict(orient="records"),
        "config": {"n_splits": n_splits, "quick": args.quick, "seed": args.seed, "n_values": list(N_VALUES),
                   "threads": args.threads, "seconds": round(seconds, 1)},
        "best_estimator_definition": "tinybench: per scenario and n, the estimator (one anchor clustering for all "
                                     "scenarios) with the lowest validation MAE on held-out TRAINING models",
    })
    print(f"\nbest (tinybench) T1 MAE at n=30, mean of 4 scenarios: {best_t1:.3f} points (bar <= 2.3)")
    print(f"best (tinybench) T2 MAE at n=30, mean of 4 scenarios: {best_t2:.3f} points (bar <= 2.0)")
    print("\n=== at n=30, T1 MAE (points) per scenario: random and tutorial gp-IRT, ours vs the issue's reference ===")
    for s_ in SCENARIOS:
        ours_r = mean30("random", "t1", scenario=s_)
        ours_g = {c: mean30("gpirt", "t1", c, s_) for c in ("correctness", "irt")}
        best_ = mean30("tinybench", "t1", scenario=s_)
        print(f"  {s_:<11} random {ours_r:5.2f} (ref {REFERENCE_N30['random'][s_]:.1f})   gp-IRT correctness {ours_g['correctness']:5.2f}"
              f" / irt {ours_g['irt']:5.2f} (ref {REFERENCE_N30['tutorial_gpirt'][s_]:.1f})   tinybench {best_:5.2f}")
    print(f"tinybench_own (own-scenario anchors only) T1 / T2 at n=30: {out['best_own_t1_n30_mean']:.3f} / {out['best_own_t2_n30_mean']:.3f}")
    print(f"tinybench 90% coverage T1 {coverage90['tinybench_t1']}  T2 {coverage90['tinybench_t2']}")
    print(f"all estimators pooled coverage T1 {coverage90['all_estimators_t1']}  T2 {coverage90['all_estimators_t2']}")
    print(f"total {seconds:.1f}s")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1, default=str))
    if args.csv:
        summ.to_csv(args.csv, index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
