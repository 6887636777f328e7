"""The Open LLM Leaderboard v2 as a small board (19 models x 21,606 items, six scenarios): the part of
benchmarks/small_leaderboards.py that issue 40 added, importable on its own.

:func:`run_v2` fits :class:`SmallBoardPredictor` on every model of the board, as the product does (families: the
organisation before ``/``), and reads its leave-family-out backtest: each model's estimate comes from the choice
made without its family's fold, and its 90 % interval from half-widths calibrated on the other folds only. Beside
it, on the same models: 30 (or 100) uniformly random items and items stratified by subscenario (allocated in
proportion to the subscenarios' sizes, each subscenario weighted as in the scenario's score), both the mean
absolute error of 50 draws per model.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from tinybench_assets.core.estimation import estimators as est
from tinybench_assets.core.estimation.small_board import SmallBoardPredictor
from tinybench_assets.core.responses import ResponseMatrix

V2_NS = (10, 20, 30, 50, 100, 200)  # the budgets the predictor prepares (error and width against n)
REPORT_NS = (30, 100)
DRAWS = 50


def load_v2(data_dir: Path) -> tuple[ResponseMatrix, np.ndarray]:
    """(matrix, families) of ../shared/data/openllm_v2/responses.parquet."""
    df = pd.read_parquet(Path(data_dir) / "openllm_v2" / "responses.parquet")
    m = ResponseMatrix.from_long(df)
    return m, np.array([x.split("/")[0] for x in m.models])


def stratified_random(Y: np.ndarray, w: np.ndarray, sub: np.ndarray, n: int, seed: int) -> np.ndarray:
    """(M,) one draw per model: n items allocated over subscenarios in proportion to their size (largest remainder),
    drawn at random inside each, the subscenario means weighted by the subscenarios' weight in the score."""
    rng = np.random.default_rng(seed)
    subs, size = np.unique(sub, return_counts=True)
    raw = size / size.sum() * n
    k = np.floor(raw).astype(int)
    k[np.argsort(-(raw - k), kind="stable")[: n - k.sum()]] += 1
    num, den = np.zeros(len(Y)), np.zeros(len(Y))
    for u, ku in zip(subs, np.minimum(k, size)):
        if ku == 0:
            continue
        items = np.flatnonzero(sub == u)
        pick = np.array([rng.choice(items, ku, replace=False) for _ in range(len(Y))])
        y = Y[np.arange(len(Y))[:, None], pick]
        mean = np.nanmean(y, axis=1)
        W = w[items].sum()
        ok = np.isfinite(mean)
        num[ok] += W * mean[ok]
        den[ok] += W
    return np.where(den > 0, num / np.maximum(den, 1e-12), np.nan)


def run_v2(data_dir: Path, seed: int = 0) -> dict:
    """Fit, backtest and baselines of the v2 board; returns the contract's ``v2`` dict and the extras."""
    m, fam = load_v2(data_dir)
    cols = {s: np.flatnonzero(m.scenarios == s) for s in pd.unique(m.scenarios)}
    w = m.balance_weights()
    t0 = time.perf_counter()
    pred = SmallBoardPredictor(n_values=V2_NS, seed=seed).fit(
        m.scores, w, cols, None, fam, items=m.items, models=m.models, subscenarios=m.subscenarios
    )
    fit_s = time.perf_counter() - t0
    out, pooled, by_n = {}, {}, {}
    for n in V2_NS:
        iv = pred.oof_intervals(n)
        ok = np.isfinite(iv.estimate) & np.isfinite(iv.truth_t1)
        iv = iv[ok]
        cov = (iv.lower <= iv.truth_t1) & (iv.truth_t1 <= iv.upper)
        by_n[str(n)] = {
            "t1_mae": round(100 * float(np.mean(np.abs(iv.estimate - iv.truth_t1))), 3),
            "mean_half_width": round(50 * float(np.mean(iv.upper - iv.lower)), 3),
            "coverage90": round(float(cov.mean()), 4),
        }
        if n not in REPORT_NS:
            continue
        pooled[str(n)] = round(float(cov.mean()), 4)
        for s, c in cols.items():
            g = iv[iv.scenario == s]
            rows = np.flatnonzero(~np.isnan(m.scores[:, c]).all(1))
            Ys, ws = m.scores[np.ix_(rows, c)], w[c]
            truth = est.weighted_accuracy(Ys, ws)
            rnd = np.mean([np.abs(est.random_estimate(Ys, ws, n, seed=1000 + d) - truth) for d in range(DRAWS)], axis=0)
            strat = np.mean(
                [np.abs(stratified_random(Ys, ws, m.subscenarios[c], n, seed=2000 + d) - truth) for d in range(DRAWS)],
                axis=0,
            )
            out.setdefault(s, {})[str(n)] = {
                "t1_mae": round(100 * float(np.mean(np.abs(g.estimate - g.truth_t1))), 3),
                "random_mae": round(100 * float(np.mean(rnd)), 3),
                "stratified_random_mae": round(100 * float(np.mean(strat)), 3),
                "coverage90": round(float(np.mean((g.lower <= g.truth_t1) & (g.truth_t1 <= g.upper))), 4),
                "mean_half_width": round(50 * float(np.mean(g.upper - g.lower)), 3),
                "estimator": pred.choices_[(s, n)].t1,
            }
    ratio = float(
        np.mean([v["30"]["t1_mae"] for v in out.values()])
        / np.mean([v["30"]["stratified_random_mae"] for v in out.values()])
    )
    return {
        "v2": out,
        "v2_coverage90_pooled": pooled,
        "v2_mean_ratio_n30": round(ratio, 4),
        "v2_by_n": by_n,
        "v2_fit_seconds": round(fit_s, 1),
        "v2_models": len(m.models),
        "v2_families": int(len(set(fam))),
        "v2_notes": pred.notes_,
    }


def print_v2(res: dict) -> None:
    v2 = res["v2"]
    for n in (str(x) for x in REPORT_NS):
        print(
            f"\n=== v2 board ({res['v2_models']} models, {res['v2_families']} families), leave-family-out, n = {n} ==="
        )
        print(
            f"{'scenario':<10} {'T1 MAE':>7} {'random':>7} {'strat':>7} {'ratio':>6} {'cov90':>6} {'half-w':>7} "
            f"{'hw/MAE':>6}  estimator"
        )
        for s, v in v2.items():
            r = v[n]
            print(
                f"{s:<10} {r['t1_mae']:7.2f} {r['random_mae']:7.2f} {r['stratified_random_mae']:7.2f} "
                f"{r['t1_mae'] / r['stratified_random_mae']:6.2f} {r['coverage90']:6.3f} {r['mean_half_width']:7.2f} "
                f"{r['mean_half_width'] / r['t1_mae']:6.2f}  {r['estimator']}"
            )
        mt = np.mean([v[n]["t1_mae"] for v in v2.values()])
        ms = np.mean([v[n]["stratified_random_mae"] for v in v2.values()])
        mr = np.mean([v[n]["random_mae"] for v in v2.values()])
        print(
            f"{'mean':<10} {mt:7.2f} {mr:7.2f} {ms:7.2f} {mt / ms:6.2f} pooled coverage {res['v2_coverage90_pooled'][n]:.3f}"
        )
    print(
        "error and half-width against n (all scenarios): "
        + "  ".join(
            f"n={n}: {v['t1_mae']:.2f} / {v['mean_half_width']:.2f} (cov {v['coverage90']:.2f})"
            for n, v in res["v2_by_n"].items()
        )
    )


def v2_bars(res: dict) -> dict:
    v2 = res["v2"]
    bars = {
        "v2 n30: mean T1 MAE <= 0.7 x stratified random": res["v2_mean_ratio_n30"] <= 0.7,
        "v2 n30: no scenario worse than stratified random": all(
            v["30"]["t1_mae"] <= v["30"]["stratified_random_mae"] for v in v2.values()
        ),
    }
    for n in (str(x) for x in REPORT_NS):
        bars[f"v2 n{n}: pooled coverage in [0.85, 0.95]"] = 0.85 <= res["v2_coverage90_pooled"][n] <= 0.95
        bars[f"v2 n{n}: every half-width <= 2.5 x MAE"] = all(
            v[n]["mean_half_width"] <= 2.5 * v[n]["t1_mae"] for v in v2.values()
        )
    return bars
