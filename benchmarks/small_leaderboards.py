"""Benchmark: tiny benchmarks for SMALL leaderboards (12, 25, 40 models) on the Open LLM Leaderboard data.

For each size and seed, whole model families (core/estimation/groups.py; the lockbox excluded from everything) are
drawn at random until the small board holds about that many models. :class:`SmallBoardPredictor` is fitted on those
models only (leave-family-out CV inside it chooses D, the estimators, lambdas, intervals and T2 maps). Test models are a
seeded sample of models from the OTHER families; each is scored from its answers to the n = 30 anchors of every
scenario (every other answer is blanked before predict sees it) and compared with

* T1: its balance-weighted accuracy on the scenario's whole item pool (the estimate's 90 % interval: coverage), and
* the random-items baseline: 30 uniformly random items per scenario, balance-weighted mean
  (``core/estimation/estimators.random_estimate``), and T2: the real full-benchmark score.

Nothing is tuned on the test models. Only models with all four scenarios take part (board and test).

Then the Open LLM Leaderboard v2 (19 models, six scenarios; benchmarks/small_v2.py): the predictor fitted on the
whole board, its leave-family-out backtest at n = 30 and 100 against random and stratified random items, the
coverage and half-width of its 90 % intervals (calibrated without the scored fold), error and width against n.
``--only v2`` runs that part alone (its keys only).

Then the distinct-model dev boards of issue 58 (benchmarks/distinct_boards.py), the ``distinct`` key and its bars;
``--only distinct`` runs them alone (the JSON then holds that key only). ``distinct`` and its bars are the first of
``--distinct-seeds`` (predictor seeds, default 0-4); ``distinct_seeds`` lists every seed's ratio and coverage per
board and n, their mean, and what shrinking random items could reach there.

Usage::

    flock /tmp/tinybench_heavy.lock .venv/bin/python benchmarks/small_leaderboards.py --json benchmarks/results/small_leaderboards.json
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from estimation import SCENARIOS, aggregate_table, default_data_dir, load_openllm  # noqa: E402

from tinybench_assets.core.estimation import estimators as est  # noqa: E402
from tinybench_assets.core.estimation.groups import lockbox_mask, model_groups  # noqa: E402
from tinybench_assets.core.estimation.small_board import SmallBoardPredictor  # noqa: E402
from tinybench_assets.core.estimation.training import full_scores_wide  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from distinct_boards import run_distinct  # noqa: E402
from distinct_report import distinct_bars, print_spread, seed_spread  # noqa: E402
from meta import run_meta  # noqa: E402  (benchmarks/meta.py: date, commit, machine)
from small_v2 import load_v2, print_v2, run_v2, v2_bars  # noqa: E402

SIZES = (12, 25, 40)
N = 30


def draw_board(groups: np.ndarray, eligible: np.ndarray, target: int, seed: int) -> np.ndarray:
    """Row indices of whole families drawn at random (seeded) until about ``target`` models: a family that would
    overshoot the target by more than 10 % (at least 1 model) is passed over."""
    rng = np.random.default_rng([target, seed])
    fams = np.unique(groups[eligible])
    rows, slack = [], max(1, round(0.1 * target))
    for fam in fams[rng.permutation(len(fams))]:
        members = np.flatnonzero(eligible & (groups == fam))
        if len(rows) + len(members) > target + slack:
            continue
        rows += members.tolist()
        if len(rows) >= target:
            break
    return np.sort(np.asarray(rows))


def run_one(Y, w, cols, T2, groups, eligible, items, size, seed, n_test, n_values, subscenarios=None) -> dict:
    board = draw_board(groups, eligible, size, seed)
    t0 = time.perf_counter()
    pred = SmallBoardPredictor(n_values=n_values, seed=seed).fit(
        Y[board], w, cols, T2[board], groups[board], items=items, subscenarios=subscenarios
    )
    fit_s = time.perf_counter() - t0
    others = np.flatnonzero(eligible & ~np.isin(groups, groups[board]))
    test = np.sort(np.random.default_rng([size, seed, 7]).choice(others, size=min(n_test, len(others)), replace=False))
    anchors = pred.anchor_table()
    keep = anchors[anchors.n == N].item_index.to_numpy()
    Yt = np.full((len(test), Y.shape[1]), np.nan)
    Yt[:, keep] = Y[np.ix_(test, keep)]  # the test models' anchor answers, nothing else
    out = pred.predict(Yt, n=N)
    res = {
        "board_models": int(len(board)),
        "board_families": int(len(np.unique(groups[board]))),
        "folds": int(pred.folds_.n),
        "test_models": int(len(test)),
        "fit_seconds": round(fit_s, 1),
        "notes": pred.notes_,
        "scenarios": {},
        "bank_chosen": {
            "t1": sum(ch.t1 == "bank_joint" for ch in pred.choices_.values()),
            "t2": sum(ch.t2 == "bank_joint" for ch in pred.choices_.values()),
            "of": len(pred.choices_),
        },
    }
    cv = pred.cv_table()
    for j, (s, c) in enumerate(cols.items()):
        o = out[out.scenario == s].reset_index(drop=True)
        t1 = est.weighted_accuracy(Y[np.ix_(test, c)], w[c])
        t2 = T2[test, j]
        rnd = est.random_estimate(Y[np.ix_(test, c)], w[c], N, seed=seed)
        ok2 = np.isfinite(o.estimate_t2.to_numpy()) & np.isfinite(t2)
        ch = pred.choices_[(s, N)]
        cvs = cv[(cv.scenario == s) & (cv.n == N)]
        res["scenarios"][s] = {
            "t1_mae": 100 * float(np.mean(np.abs(o.estimate - t1))),
            "random_t1_mae": 100 * float(np.mean(np.abs(rnd - t1))),
            "coverage90": float(np.mean((t1 >= o.lower) & (t1 <= o.upper))),
            "width90": 100 * float(np.mean(o.upper - o.lower)),
            "t2_mae": 100 * float(np.mean(np.abs(o.estimate_t2[ok2] - t2[ok2]))) if ok2.any() else None,
            "coverage90_t2": float(np.mean((t2[ok2] >= o.lower_t2[ok2]) & (t2[ok2] <= o.upper_t2[ok2])))
            if ok2.any()
            else None,
            "width90_t2": 100 * float(np.mean(o.upper_t2[ok2] - o.lower_t2[ok2])) if ok2.any() else None,
            "estimator": ch.t1,
            "estimator_t2": ch.t2,
            "dim": int(ch.dim),
            "cv_mae_t1_served": 100 * float(ch.served_mae),
            "cv_mae_t1_chosen": 100 * float(cvs[cvs.served_t1].cv_mae_t1.iloc[0]),
        }
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--repeats", type=int, default=5, help="seeds per size")
    ap.add_argument("--test-models", type=int, default=400)
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--only", choices=("openllm", "v2", "distinct"), default=None, help="run one part only")
    ap.add_argument(
        "--distinct-seeds",
        type=lambda x: [int(v) for v in x.split(",")],
        default=[0, 1, 2, 3, 4],
        help="predictor seeds of the distinct boards, comma-separated (the first gives the contract's figures)",
    )
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    data_dir = args.data_dir or default_data_dir()
    if args.only == "v2":
        res = run_v2(data_dir)
        print_v2(res)
        bars = v2_bars(res)
        print("bars: " + "  ".join(f"[{'PASS' if ok else 'MISS'}] {name}" for name, ok in bars.items()))
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(
                json.dumps(
                    {**res, "bars": bars, "seconds": round(time.perf_counter() - t0, 1), "meta": run_meta()},
                    indent=1,
                    default=str,
                )
            )
        return 0
    matrix, full = load_openllm(data_dir)
    groups = model_groups(matrix.models, aggregate_table(data_dir)).to_numpy().astype(str)
    box = lockbox_mask(groups)
    cols = {s: np.flatnonzero(matrix.scenarios == s) for s in SCENARIOS}
    Y, w = matrix.scores, matrix.balance_weights()
    complete = np.column_stack([~np.isnan(Y[:, c]).any(1) for c in cols.values()]).all(1)
    eligible = complete & ~box
    T2 = full_scores_wide(full, matrix.models, SCENARIOS).to_numpy()
    if args.only == "distinct":
        return _distinct_only(args, data_dir, matrix, T2, groups, eligible, t0)
    print(
        f"{int(eligible.sum())} eligible models (all 4 scenarios, lockbox's {int(box.sum())} excluded), "
        f"{len(np.unique(groups[eligible]))} families"
    )
    runs = {}
    for size in SIZES:
        for seed in range(args.repeats):
            r = run_one(
                Y,
                w,
                cols,
                T2,
                groups,
                eligible,
                matrix.items,
                size,
                seed,
                args.test_models,
                (10, 20, 30, 50),
                matrix.subscenarios,
            )
            runs[f"{size}/{seed}"] = r
            sc = r["scenarios"]
            print(
                f"size {size:>2} seed {seed}: {r['board_models']} models / {r['board_families']} families, "
                f"{r['folds']} folds, fit {r['fit_seconds']}s | T1 MAE "
                + " ".join(f"{s} {v['t1_mae']:.2f} ({v['estimator']}@D{v['dim']})" for s, v in sc.items())
                + f" | random {np.mean([v['random_t1_mae'] for v in sc.values()]):.2f}"
                f" | cov {np.mean([v['coverage90'] for v in sc.values()]):.3f}",
                flush=True,
            )
    v2 = None if args.only == "openllm" else run_v2(data_dir)
    spread = None if args.only == "openllm" else distinct_over_seeds(args, data_dir, matrix, T2, groups, eligible)
    distinct = None if spread is None else spread[0]
    seconds = time.perf_counter() - t0

    def mean_of(size, key):
        vals = [
            v[key]
            for k, r in runs.items()
            if k.startswith(f"{size}/")
            for v in r["scenarios"].values()
            if v[key] is not None
        ]
        return float(np.mean(vals))

    keys = [str(s) for s in SIZES]
    out = {
        "t1_n30_mae": {k: round(mean_of(k, "t1_mae"), 3) for k in keys},
        "coverage90": {k: round(mean_of(k, "coverage90"), 4) for k in keys},
        "random_t1_n30_mae": {k: round(mean_of(k, "random_t1_mae"), 3) for k in keys},
        "t2_n30_mae": {k: round(mean_of(k, "t2_mae"), 3) for k in keys},
        "coverage90_t2": {k: round(mean_of(k, "coverage90_t2"), 4) for k in keys},
        "width90_t1": {k: round(mean_of(k, "width90"), 2) for k in keys},
        "width90_t2": {k: round(mean_of(k, "width90_t2"), 2) for k in keys},
        "cv_mae_t1_served": {k: round(mean_of(k, "cv_mae_t1_served"), 3) for k in keys},
        "board_models": {k: [r["board_models"] for kk, r in runs.items() if kk.startswith(f"{k}/")] for k in keys},
        # bank_joint served: n = 30 (scenario x seed pairs), and every (scenario, n) choice
        "bank_chosen_n30": {
            k: sum(
                v["estimator"] == "bank_joint"
                for kk, r in runs.items()
                if kk.startswith(f"{k}/")
                for v in r["scenarios"].values()
            )
            for k in keys
        },
        "bank_chosen_all_n": {
            k: {
                t: sum(r["bank_chosen"][t] for kk, r in runs.items() if kk.startswith(f"{k}/"))
                for t in ("t1", "t2", "of")
            }
            for k in keys
        },
        "seconds": round(seconds, 1),
    }
    per_scen = {
        k: {
            s: {
                m: round(float(np.mean([runs[f"{k}/{i}"]["scenarios"][s][m] for i in range(args.repeats)])), 3)
                for m in ("t1_mae", "random_t1_mae", "coverage90")
            }
            for s in SCENARIOS
        }
        for k in keys
    }
    m25, r25, c25 = out["t1_n30_mae"]["25"], out["random_t1_n30_mae"]["25"], out["coverage90"]["25"]
    m40, r40 = out["t1_n30_mae"]["40"], out["random_t1_n30_mae"]["40"]
    out["bars"] = {
        "25: t1_n30_mae < random": m25 < r25,
        "25: coverage90 in [0.85, 0.97]": 0.85 <= c25 <= 0.97,
        "40: t1_n30_mae <= 0.75 * random": m40 <= 0.75 * r40,
    }
    if v2 is not None:
        out.update(v2)
        out["bars"].update(v2_bars(v2))
    if distinct is not None:
        out["distinct"] = distinct
        out["distinct_seeds"] = spread[1]
        out["bars"].update(distinct_bars(distinct))
    out["per_scenario"] = per_scen
    out["runs"] = runs
    out["config"] = {
        "sizes": list(SIZES),
        "repeats": args.repeats,
        "test_models": args.test_models,
        "n": N,
        "n_values": [10, 20, 30, 50],
        "dims": [1, 2],
        "alpha": 0.1,
        "max_folds": 10,
        "units": "MAE in accuracy points; coverage as a fraction of test model x scenario pairs",
    }

    print(
        f"\n=== small boards, n = {N} anchors per scenario, mean over 4 scenarios x {args.repeats} seeds; "
        f"{args.test_models} test models from other families each ==="
    )
    print(
        f"{'models':>7} {'actual':>16} {'T1 MAE':>7} {'random':>7} {'ratio':>6} {'cov90':>6} {'width':>6} "
        f"{'CV MAE':>7} {'T2 MAE':>7} {'cov90 T2':>8}"
    )
    for k in keys:
        print(
            f"{k:>7} {str(out['board_models'][k]):>16} {out['t1_n30_mae'][k]:7.2f} {out['random_t1_n30_mae'][k]:7.2f} "
            f"{out['t1_n30_mae'][k] / out['random_t1_n30_mae'][k]:6.2f} {out['coverage90'][k]:6.3f} "
            f"{out['width90_t1'][k]:6.1f} {out['cv_mae_t1_served'][k]:7.2f} {out['t2_n30_mae'][k]:7.2f} "
            f"{out['coverage90_t2'][k]:8.3f}"
        )
    print("per scenario (T1 MAE / random / coverage):")
    for k in keys:
        print(
            f"  {k:>3}: "
            + "  ".join(
                f"{s} {v['t1_mae']:.2f}/{v['random_t1_mae']:.2f}/{v['coverage90']:.2f}" for s, v in per_scen[k].items()
            )
        )
    print(
        f"bank_joint served at n = {N} (of {4 * args.repeats} scenario x seed): {out['bank_chosen_n30']}; "
        f"over every (scenario, n): {out['bank_chosen_all_n']}"
    )
    if v2 is not None:
        print_v2(v2)
    if spread is not None:
        print_spread(spread[1])
    print("bars: " + "  ".join(f"[{'PASS' if ok else 'MISS'}] {name}" for name, ok in out["bars"].items()))
    print(f"total {seconds:.1f}s")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({**out, "meta": run_meta()}, indent=1, default=str))
    return 0


def distinct_over_seeds(args, data_dir, matrix, T2, groups, eligible) -> tuple[dict, dict]:
    """(the first seed's ``distinct``, ``distinct_seeds``): the distinct boards once per ``--distinct-seeds``."""
    v2 = load_v2(data_dir)
    by_seed = {}
    for seed in args.distinct_seeds:
        print(f"--- distinct boards, predictor seed {seed}", flush=True)
        first = seed == args.distinct_seeds[0]  # the frontier case at the contract's seed only
        by_seed[seed] = run_distinct(data_dir, matrix, T2, groups, eligible, v2, seed=seed, frontier=first)
    return by_seed[args.distinct_seeds[0]], seed_spread(by_seed)


def _distinct_only(args, data_dir, matrix, T2, groups, eligible, t0) -> int:
    """``--only distinct``: the distinct-model dev boards alone (the ``distinct`` and ``distinct_seeds`` keys and the
    bars)."""
    res, spread = distinct_over_seeds(args, data_dir, matrix, T2, groups, eligible)
    print_spread(spread)
    bars = distinct_bars(res)
    print("bars: " + "  ".join(f"[{'PASS' if ok else 'MISS'}] {name}" for name, ok in bars.items()))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        out = {
            "distinct": res,
            "distinct_seeds": spread,
            "bars": bars,
            "seconds": round(time.perf_counter() - t0, 1),
            "meta": run_meta(),
        }
        args.json.write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
