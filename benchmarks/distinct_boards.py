"""Distinct-model dev boards (issue 58): small boards whose models differ a lot, as most teams hold them.

* ``openllm.s<seed>``: 20-25 models drawn from the Open LLM Leaderboard v1, one per family (core/estimation/groups.py;
  the lockbox excluded), twin-free (no two agree on 99 % or more of a scenario's items: core/estimation/twins.py),
  spread evenly over the whole accuracy range (the weakest model included): the range is cut into as many equal
  bins as the board has models and each bin gives one model, drawn at random (seeded) among the families' models
  in it; an empty bin passes its turn to the next.
* ``openllm_v2``: the v2 board (19 models, six scenarios), and ``v2.<scenario>``: one of its large scenarios alone,
  a board of one scenario of thousands of items (the shape of the boards users brought).
* ``routerbench.mbpp``: RouterBench's 11 chat models of six vendors on MBPP (its train and test questions together,
  427 items), read by the product's own reader (io.drops.read_drop) with the product's families (core/estimation/
  groups.py: the three Claude models one family, the two GPT models another): a board of several vendors, as issue
  58's unseen board was, though of fewer models (no frontier case: 7 models would be left to fit on).

:func:`board_figures` fits :class:`SmallBoardPredictor` on a board and reads its leave-family-out backtest (each
model's served estimate from the choice made without its fold, its 90 % interval calibrated on the other folds:
``oof_intervals``), against stratified random items on the same models (the mean absolute error of 50 draws per
model, items allocated over subscenarios in proportion to their size). n = 100 is read where every scenario's pool
has at least 300 items. Each n also reads :func:`shrinkage_reach`, what shrinking random items toward the board
could give, and distinct_report.seed_spread gathers the figures of several predictor seeds (folds, anchor orders,
IRT starts): on a board of 19 models one seed's ratio moves by about 0.2 (v2.bbh at n = 30: 0.77-1.03 over seeds 0-4).
:func:`frontier_figures` (the contract's seed only) holds each board's 4 strongest models out instead, fits on the
others and estimates them through the served path, as a user who adds a model stronger than the board would; on
the openllm boards, which have full-benchmark scores, it reads their served full score (T2) too.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
from distinct_report import print_board, print_frontier  # benchmarks/distinct_report.py
from families import coverage_by_family  # benchmarks/families.py
from small_v2 import stratified_random  # benchmarks/small_v2.py (benchmarks/ is on sys.path)

from tinybench_assets.core.estimation import estimators as est
from tinybench_assets.core.estimation.groups import model_groups
from tinybench_assets.core.estimation.small_board import SmallBoardPredictor
from tinybench_assets.core.estimation.small_folds import scenario_truth
from tinybench_assets.core.estimation.small_guard import random_item_error
from tinybench_assets.core.estimation.training import Layout
from tinybench_assets.core.estimation.twins import agreement
from tinybench_assets.core.responses import ResponseMatrix
from tinybench_assets.io.drops import read_drop

DRAWS = 50
MIN_POOL_100 = 300
FRONTIER_K = 4  # the strongest models held out in frontier_figures (issue 58 measured a small board's 4 strongest)
MIN_FRONTIER_BOARD = 14  # a board's frontier case needs FRONTIER_K held out and 10 models (min_small_models) to fit on


def distinct_rows(Y, cols, groups, eligible, size: int, seed: int, threshold: float = 0.99) -> np.ndarray:
    """Row indices of a distinct-model board (module docstring): one model per family, twin-free, one per equal bin
    of the accuracy range, the weakest eligible model first."""
    rng = np.random.default_rng([size, seed, 58])
    acc = np.nanmean(np.column_stack([np.nanmean(Y[:, c], axis=1) for c in cols.values()]), axis=1)
    cand = np.flatnonzero(eligible)
    lo, hi = acc[cand].min(), acc[cand].max()
    edges = np.linspace(lo, hi, size + 1)
    picked: list[int] = [int(cand[np.argmin(acc[cand])])]
    used = {groups[picked[0]]}

    def clashes(i: int) -> bool:
        return any(
            (agreement(Y[[i]][:, c], Y[picked][:, c]) >= threshold).any() for c in cols.values()
        )  # a twin of a board model on some scenario

    def take(pool: np.ndarray) -> bool:
        for i in pool[rng.permutation(len(pool))]:
            if groups[i] not in used and not clashes(int(i)):
                picked.append(int(i))
                used.add(groups[i])
                return True
        return False

    for b in range(1, size):  # bin 0 holds the weakest
        take(cand[(acc[cand] > edges[b]) & (acc[cand] <= edges[b + 1])])
    while len(picked) < size and take(cand[~np.isin(cand, picked)]):
        pass  # empty bins: the rest at random
    return np.sort(np.asarray(picked))


def board_figures(name, Y, w, cols, fam, items, subs, ns, seed: int = 0, full=None) -> dict:
    """Fit and backtest one board (module docstring): {"models", "items", "by_n": {n: figures}, "scenarios": {s: {n:
    figures}}, "fit_seconds", "notes"}; MAE and half-width in accuracy points."""
    t0 = time.perf_counter()
    pred = SmallBoardPredictor(n_values=ns, seed=seed).fit(Y, w, cols, full, fam, items=items, subscenarios=subs)
    fit_s = time.perf_counter() - t0
    report = _reported(ns, cols)
    out = {"models": int(len(Y)), "items": int(Y.shape[1]), "by_n": {}, "scenarios": {}}
    for n in report:
        iv = pred.oof_intervals(n)
        iv = iv[np.isfinite(iv.estimate) & np.isfinite(iv.truth_t1)]
        served, rand, cover, half = [], [], [], []
        for s, c in cols.items():
            g = iv[iv.scenario == s]
            rows = np.flatnonzero(~np.isnan(Y[:, c]).all(1))
            Ys, ws = Y[np.ix_(rows, c)], w[c]
            truth = est.weighted_accuracy(Ys, ws)
            strat = random_items_error(Ys, ws, subs[c], n, truth)
            err = np.abs(g.estimate - g.truth_t1).to_numpy()
            cov = ((g.lower <= g.truth_t1) & (g.truth_t1 <= g.upper)).to_numpy()
            served.append(err)
            rand.append(strat)
            cover.append(cov)
            half.append(((g.upper - g.lower) / 2).to_numpy())
            ch = pred.choices_[(s, n)]
            out["scenarios"].setdefault(s, {})[str(n)] = {
                "served_mae": round(100 * float(err.mean()), 3),
                "random_mae": round(100 * float(strat.mean()), 3),
                "ratio": round(float(err.mean() / strat.mean()), 4),
                "coverage": round(float(cov.mean()), 4),
                "half_width": round(100 * float(half[-1].mean()), 3),
                "estimator": ch.t1,
            }
        sm, rm = float(np.mean([e.mean() for e in served])), float(np.mean([r.mean() for r in rand]))
        out["by_n"][str(n)] = {
            "served_mae": round(100 * sm, 3),
            "random_mae": round(100 * rm, 3),
            "ratio": round(sm / rm, 4),
            "coverage": round(float(np.concatenate(cover).mean()), 4),
            "half_width": round(100 * float(np.concatenate(half).mean()), 3),
            "max_scenario_ratio": round(max(v[str(n)]["ratio"] for v in out["scenarios"].values()), 4),
            "shrinkage_reach": round(shrinkage_reach(Y, w, cols, subs, n), 4),
        }
    out["families"] = family_coverage(pred, fam, report)
    out["fit_seconds"] = round(fit_s, 1)
    out["notes"] = list(pred.notes_)
    return out


def frontier_figures(Y, w, cols, fam, items, subs, ns, seed: int = 0, k: int = FRONTIER_K, full=None) -> dict:
    """A frontier on a small board: its ``k`` strongest models (mean accuracy over the scenarios) held out, the
    predictor fitted on the others, the held-out ones estimated through ``predict`` (the served path: the exported
    tiny benchmark) from their answers to the anchors. {"models": k, "board_max", "held_out": [accuracies], "by_n":
    {n: served_mae, random_mae, ratio, bias, coverage, half_width}} in accuracy points (n as :func:`board_figures`
    reports them). Stratified random items: 50 draws per held-out model."""
    truth = scenario_truth(Y, w, cols)  # NaN: the model did not run the scenario
    strength = np.nanmean(truth, axis=1)
    top = np.argsort(-strength, kind="stable")[:k]
    train = np.setdiff1d(np.arange(len(Y)), top)
    pred = SmallBoardPredictor(n_values=ns, seed=seed).fit(
        Y[train], w, cols, None if full is None else full[train], fam[train], items=items, subscenarios=subs
    )
    out = {
        "models": int(k),
        "board_max": round(100 * float(np.nanmax(strength[train])), 2),
        "held_out": [round(100 * float(x), 2) for x in strength[top]],
        "by_n": {},
    }
    for n in _reported(ns, cols):
        got = pred.predict(Y[top], n=n)
        err, rand, hit, half = [], [], [], []
        for j, (s, c) in enumerate(cols.items()):
            g, t = got[got.scenario == s], truth[top, j]
            ok = np.isfinite(t) & np.isfinite(g.estimate.to_numpy())  # as board_figures reads them
            err.append((g.estimate.to_numpy() - t)[ok])
            hit.append(((g.lower.to_numpy() <= t) & (t <= g.upper.to_numpy()))[ok])
            half.append(((g.upper - g.lower).to_numpy() / 2)[ok])
            rand.append(random_items_error(Y[np.ix_(top, c)], w[c], subs[c], n, t)[ok])
        e, r = np.concatenate(err), np.concatenate(rand)
        out["by_n"][str(n)] = {
            "served_mae": round(100 * float(np.abs(e).mean()), 3),
            "random_mae": round(100 * float(r.mean()), 3),
            "ratio": round(float(np.abs(e).mean() / r.mean()), 4),
            "bias": round(100 * float(e.mean()), 3),
            "coverage": round(float(np.concatenate(hit).mean()), 4),
            "half_width": round(100 * float(np.concatenate(half).mean()), 3),
            **({} if full is None else _frontier_t2(got, full[top], list(cols))),
        }
    return out


def _frontier_t2(got, t2, scenarios: list) -> dict:
    """The served full-score (T2) figures of the held-out models (``got``: predict's rows; ``t2`` (k, S): their full
    scores in ``scenarios`` order): mae_t2, bias_t2, coverage_t2, half_width_t2 in points and pairs_t2 (the
    (model, scenario) pairs with both), or {} without any."""
    truth = np.array([t2[m, scenarios.index(s)] for m, s in zip(got.model, got.scenario)], dtype=float)
    est2, lo, up = (got[k].to_numpy(dtype=float) for k in ("estimate_t2", "lower_t2", "upper_t2"))
    ok = np.isfinite(truth) & np.isfinite(est2)
    if not ok.any():
        return {}
    e = (est2 - truth)[ok]
    return {
        "mae_t2": round(100 * float(np.abs(e).mean()), 3),
        "bias_t2": round(100 * float(e.mean()), 3),
        "coverage_t2": round(float(((lo <= truth) & (truth <= up))[ok].mean()), 4),
        "half_width_t2": round(100 * float(((up - lo) / 2)[ok].mean()), 3),
        "pairs_t2": int(ok.sum()),
    }


def random_items_error(Ys, ws, subs, n: int, truth) -> np.ndarray:
    """(M,) each model's mean absolute error over DRAWS draws of n stratified random items (seeds 2000, 2001, ...)."""
    return np.mean([np.abs(stratified_random(Ys, ws, subs, n, seed=2000 + d) - truth) for d in range(DRAWS)], axis=0)


def _reported(ns, cols) -> list:
    """The budgets a board reports: 30, and 100 where every scenario's pool has at least MIN_POOL_100 items."""
    return [n for n in (30, 100) if n in ns and (n == 30 or min(len(c) for c in cols.values()) >= MIN_POOL_100)]


def family_coverage(pred, fam, ns) -> dict:
    """Coverage of the served 90 % intervals per held-out family (every fold holds whole families out), pooled over
    its models, scenarios and the reported budgets ``ns`` (benchmarks/families.py)."""
    iv = pd.concat([pred.oof_intervals(n) for n in ns], ignore_index=True)
    iv = iv[np.isfinite(iv.estimate) & np.isfinite(iv.truth_t1)]
    row = {m: i for i, m in enumerate(pred.layout_.models)}
    hit = (iv.lower <= iv.truth_t1) & (iv.truth_t1 <= iv.upper)
    return coverage_by_family(hit.to_numpy(), np.asarray(fam)[[row[m] for m in iv.model]])


def shrinkage_reach(Y, w, cols, subs, n: int) -> float:
    """The ratio to stratified random items that their mean shrunk toward the board's models could reach: per
    scenario, the board's spread ``tau^2`` (variance of its models' accuracies) as the prior and each model's own
    random-item variance ``sig_i^2`` (small_guard.random_item_error) as the noise; the normal-normal posterior's
    expected error ``sqrt(tau^2 sig_i^2 / (tau^2 + sig_i^2))`` over ``sig_i``, summed over scenarios as the ratio's
    MAEs are. It says how much the board's spread tells beyond n random items: rules that read which items a model
    answered (IRT, anchor points, the fill-in) can go below it where the items carry it (v2.mmlu_pro), rules that only
    shrink cannot."""
    num = den = 0.0
    for c in cols.values():
        rows = np.flatnonzero(~np.isnan(Y[:, c]).all(1))
        Ys, ws = Y[np.ix_(rows, c)], w[c]
        sig2 = (random_item_error(Ys, ws, subs[c], min(n, len(c))) / np.sqrt(2 / np.pi)) ** 2
        tau2 = float(np.var(est.weighted_accuracy(Ys, ws), ddof=1))
        num += float(np.nanmean(np.sqrt(tau2 * sig2 / (tau2 + sig2))))
        den += float(np.nanmean(np.sqrt(sig2)))
    return num / den


def openllm_boards(matrix, groups, eligible, seeds=(0, 1, 2), sizes=(20, 22, 25)) -> dict:
    """{name: rows} of the openllm distinct boards."""
    cols = Layout.of(matrix).cols
    return {
        f"openllm.s{seed}": distinct_rows(matrix.scores, cols, groups, eligible, size, seed)
        for seed, size in zip(seeds, sizes)
    }


def routerbench_board(data_dir: Path):
    """(matrix, families) of ../shared/data/routerbench's MBPP files (train and test questions together), or None
    without them."""
    files = sorted((Path(data_dir) / "routerbench").glob("mbpp_*.csv"))
    if not files:
        return None
    long = pd.concat([read_drop(f, "routerbench").responses for f in files], ignore_index=True)
    m = ResponseMatrix.from_long(long.drop(columns=["leaderboard"]))
    return m, model_groups(m.models).to_numpy()


def run_distinct(
    data_dir: Path, matrix, full_wide, groups, eligible, v2=None, seed: int = 0, frontier: bool = False
) -> dict:
    """The ``distinct`` contract: {board: {"models", "items", "by_n": {"30": {...}, "100": {...}}}} plus extras
    (with ``frontier``, the ``frontier`` of each board of MIN_FRONTIER_BOARD models or more: :func:`frontier_figures`)."""
    res, inputs = {}, {}
    lay = Layout.of(matrix)  # each scenario's columns and the balance weights
    cols, w = lay.cols, lay.w
    openllm_rows = openllm_boards(matrix, groups, eligible)
    for name, rows in openllm_rows.items():
        Yb = matrix.scores[rows]
        keep = ~np.isnan(Yb).all(0)
        inputs[name] = (
            Yb,
            w,
            cols,
            np.asarray(matrix.models)[rows],  # one family per model: each is its family's only model here
            matrix.items,
            np.asarray(matrix.subscenarios),
            (10, 20, 30, 50),
        )
        res[name] = board_figures(name, *inputs[name], seed=seed, full=full_wide[rows])
        res[name]["accuracy_range"] = [
            round(float(np.nanmean(Yb[:, keep], axis=1).min()), 3),
            round(float(np.nanmean(Yb[:, keep], axis=1).max()), 3),
        ]
        print_board(name, res[name])
    if v2 is not None:
        m, fam = v2
        lay, subs = Layout.of(m), np.asarray(m.subscenarios)
        vcols, vw = lay.cols, lay.w
        inputs["openllm_v2"] = (m.scores, vw, vcols, fam, np.asarray(m.items), subs, (10, 20, 30, 50, 100, 200))
        res["openllm_v2"] = board_figures("openllm_v2", *inputs["openllm_v2"], seed=seed)
        print_board("openllm_v2", res["openllm_v2"])
        for s in ("mmlu_pro", "bbh"):
            c = vcols[s]
            rows = np.flatnonzero(~np.isnan(m.scores[:, c]).all(1))
            inputs[f"v2.{s}"] = (
                m.scores[np.ix_(rows, c)],
                vw[c],
                {s: np.arange(len(c))},
                fam[rows],
                np.asarray(m.items)[c],
                subs[c],
                (10, 20, 30, 50, 100, 200),
            )
            res[f"v2.{s}"] = board_figures(f"v2.{s}", *inputs[f"v2.{s}"], seed=seed)
            print_board(f"v2.{s}", res[f"v2.{s}"])
    rb = routerbench_board(data_dir)
    if rb is not None:
        m, fam = rb
        lay = Layout.of(m)
        args = (lay.w, lay.cols, fam, np.asarray(m.items), np.asarray(m.subscenarios))
        inputs["routerbench.mbpp"] = (m.scores, *args, (10, 20, 30, 50, 100, 200))
        res["routerbench.mbpp"] = board_figures("routerbench.mbpp", *inputs["routerbench.mbpp"], seed=seed)
        print_board("routerbench.mbpp", res["routerbench.mbpp"])
    for name in [b for b in res if len(inputs[b][0]) >= MIN_FRONTIER_BOARD] if frontier else ():
        full = full_wide[openllm_rows[name]] if name in openllm_rows else None
        res[name]["frontier"] = frontier_figures(*inputs[name], seed=seed, full=full)
        print_frontier(name, res[name]["frontier"])
    return res
