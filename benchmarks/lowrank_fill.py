"""The ridge fill-in (the product's ``fill``) against a low-rank fill-in on the distinct-model dev boards (issue 58).

Issue 58 names two collaborative fill-ins: the ridge fill-in, which the product serves (core/estimation/fill.py: the
new model's anchor answers regressed on the board models' answers at the same items), and a low-rank one (top-k SVD
item factors). The low-rank fill-in learns its item factors from the board models' answers to every item of the
scenario, not only the anchors::

    Yc = Y_board - item means = U S V'            (F models x I items, thin SVD)
    factors = V_k S_k / sqrt(F)                    (I, k)
    z = argmin ||y_anchors - mean_anchors - factors_anchors z||^2 + zl ||z||^2
    estimate = weighted answered anchors + weighted sum over the other items of clip(mean + factors z, 0, 1)

Both read the same anchors: stratified random items (allocated over subscenarios in proportion to their weight), five
draws per held-out family, each family held out in turn (leave-family-out), the board models being the others. The
reference is the plain weighted mean of the same anchors (random items). Every setting of both grids is reported,
with each grid's best fixed setting in hindsight (the comparison most favourable to each).

    .venv/bin/python benchmarks/lowrank_fill.py --json benchmarks/results/lowrank_fill.json

Boards: openllm.s0-s2 scenario by scenario and every scenario of openllm_v2 (distinct_boards.py), n = 30 everywhere
and n = 100 where the pool has at least 300 items. About half a minute on 2 cores.
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
sys.path.insert(0, str(ROOT / "benchmarks"))

from distinct_boards import MIN_POOL_100, openllm_boards  # noqa: E402
from estimation import SCENARIOS, aggregate_table, default_data_dir, load_openllm  # noqa: E402
from meta import run_meta  # noqa: E402
from small_v2 import load_v2  # noqa: E402

from tinybench_assets.core.estimation.fill import FILL_LAMBDAS, fill_means  # noqa: E402
from tinybench_assets.core.estimation.groups import lockbox_mask, model_groups  # noqa: E402
from tinybench_assets.core.estimation.strata import prefix_allocation  # noqa: E402

RANKS = (3, 5, 8, 12)
RANK_RIDGE = (0.003, 0.01, 0.03, 0.1)
DRAWS = 5


def draw_anchors(sub: np.ndarray, w: np.ndarray, n: int, rng) -> np.ndarray:
    """n items allocated over subscenarios in proportion to their weight, drawn at random inside each."""
    out = []
    for u, k in prefix_allocation(sub, w, n).items():
        items = np.flatnonzero(sub == u)
        if k > 0:
            out += list(rng.choice(items, min(k, len(items)), replace=False))
    return np.sort(np.asarray(out, dtype=int))


def fill_ins(Yb: np.ndarray, Yt: np.ndarray, anchors: np.ndarray, w: np.ndarray) -> dict:
    """{setting: (m,) estimate} of the held-out rows ``Yt`` (m, I) from their answers at ``anchors``, the board
    ``Yb`` (F, I) (a missing answer of a board model counts as the item's mean): the plain anchor mean ("random"),
    the product's ridge fill-in per lam ("ridge <lam>") and the low-rank fill-in per rank and ridge ("rank <k> <zl>")."""
    Yb = np.where(np.isnan(Yb), np.nanmean(Yb, 0, keepdims=True), Yb)
    Yb = np.nan_to_num(Yb, nan=0.5)
    wn = w / w.sum()
    rest = np.ones(len(w), dtype=bool)
    rest[anchors] = False
    ya, Wa = Yt[:, anchors], wn[anchors]
    out = {"random": ya @ Wa / Wa.sum()}
    values = (Yb[:, rest] @ wn[rest])[:, None]  # each board model's share of the score on the other items
    for lam in FILL_LAMBDAS:
        pred_a, pred_v = fill_means(ya, Yb[:, anchors], values, lam)
        out[f"ridge {lam:g}"] = np.where(np.isnan(ya), pred_a, ya) @ Wa + np.clip(pred_v[:, 0], 0, 1 - Wa.sum())
    mu = Yb.mean(0)
    U, S, Vt = np.linalg.svd(Yb - mu, full_matrices=False)
    for k in RANKS:
        if k > len(S) - 1:
            continue
        fac = Vt[:k].T * S[:k] / np.sqrt(len(Yb))  # (I, k)
        G = fac[anchors].T @ fac[anchors]
        for zl in RANK_RIDGE:
            z = np.linalg.solve(G + zl * np.eye(k), fac[anchors].T @ (ya - mu[anchors]).T)  # (k, m)
            pred = np.clip(mu + (fac @ z).T, 0, 1)
            out[f"rank {k} {zl:g}"] = ya @ Wa + pred[:, rest] @ wn[rest]
    return out


def board_rows(name: str, Y: np.ndarray, w: np.ndarray, sub: np.ndarray, fam: np.ndarray, seed: int) -> list:
    """One row per n: the random items' MAE (points) and every setting's MAE as a ratio to it."""
    truth = np.nan_to_num(Y) @ (w / w.sum())
    whole = ~np.isnan(Y).any(1)
    rows = []
    for n in (30, 100):
        if n == 100 and Y.shape[1] < MIN_POOL_100:
            continue
        err: dict = {}
        for i, f in enumerate(np.unique(fam)):
            test = (fam == f) & whole
            if not test.any():
                continue
            for d in range(DRAWS):
                a = draw_anchors(sub, w, n, np.random.default_rng([seed, n, i, d]))
                for key, x in fill_ins(Y[fam != f], Y[test], a, w).items():
                    err.setdefault(key, []).extend(np.abs(x - truth[test]).tolist())
        ref = float(np.mean(err.pop("random")))
        ratios = {k: round(float(np.mean(v)) / ref, 4) for k, v in err.items()}
        rows.append({"board": name, "n": n, "models": int(len(Y)), "random_mae": round(100 * ref, 3), **ratios})
        best_r = min(v for k, v in ratios.items() if k.startswith("ridge"))
        best_k = min(v for k, v in ratios.items() if k.startswith("rank"))
        print(
            f"{name:<22} n={n:>3}: random {100 * ref:5.2f} points; ridge best {best_r:.3f}x, low-rank best {best_k:.3f}x"
        )
    return rows


def boards(data_dir: Path):
    """(name, Y, w, subscenarios, families) of every board-scenario (module docstring)."""
    matrix, _ = load_openllm(data_dir)
    groups = model_groups(matrix.models, aggregate_table(data_dir)).to_numpy().astype(str)
    cols = {s: np.flatnonzero(matrix.scenarios == s) for s in SCENARIOS}
    Y, w, subs = matrix.scores, matrix.balance_weights(), np.asarray(matrix.subscenarios).astype(str)
    complete = np.column_stack([~np.isnan(Y[:, c]).any(1) for c in cols.values()]).all(1)
    models = np.asarray(matrix.models)
    for name, rows in openllm_boards(matrix, groups, complete & ~lockbox_mask(groups)).items():
        for s, c in cols.items():  # one family per model on these boards
            yield f"{name}/{s}", Y[np.ix_(rows, c)], w[c], subs[c], models[rows]
    m, fam = load_v2(data_dir)
    vw, vsub = m.balance_weights(), np.asarray(m.subscenarios).astype(str)
    for s in pd.unique(m.scenarios):
        c = np.flatnonzero(m.scenarios == s)
        rows = np.flatnonzero(~np.isnan(m.scores[:, c]).all(1))
        yield f"openllm_v2/{s}", m.scores[np.ix_(rows, c)], vw[c], vsub[c], fam[rows]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--data-dir", type=Path, default=None)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    rows = []
    for i, (name, Y, w, sub, fam) in enumerate(boards(args.data_dir or default_data_dir())):
        rows += board_rows(name, Y, w, sub, fam, seed=i)
    df = pd.DataFrame(rows)
    settings = [c for c in df.columns if c.startswith(("ridge", "rank"))]
    summary = {}
    for n, g in df.groupby("n"):
        mean = g[settings].mean()
        ridge = mean[[c for c in settings if c.startswith("ridge")]]
        rank = mean[[c for c in settings if c.startswith("rank")]]
        summary[str(n)] = {
            "board_scenarios": int(len(g)),
            "ridge_best": [ridge.idxmin(), round(float(ridge.min()), 4)],
            "rank_best": [rank.idxmin(), round(float(rank.min()), 4)],
            "mean_ratio": {k: round(float(v), 4) for k, v in mean.items()},
        }
        print(
            f"n = {n}, mean over {len(g)} board-scenarios: ridge best {ridge.idxmin()} {ridge.min():.3f}x, "
            f"low-rank best {rank.idxmin()} {rank.min():.3f}x random items'"
        )
    print(f"total {time.perf_counter() - t0:.1f}s")
    if args.json:
        out = {"by_board": rows, "summary": summary, "seconds": round(time.perf_counter() - t0, 1), "meta": run_meta()}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
