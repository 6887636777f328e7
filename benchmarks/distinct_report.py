"""The distinct-model dev boards' report (issue 58; benchmarks/distinct_boards.py computes the figures): one line per
board and n, the spread over predictor seeds (:func:`seed_spread`, :func:`print_spread`) and the issue's bars
(:func:`distinct_bars`)."""

from __future__ import annotations

import numpy as np


def seed_spread(by_seed: dict) -> dict:
    """{board: {n: {"seeds", "ratio", "max_scenario_ratio", "coverage", "families_below_075": [per seed],
    "mean_ratio", "mean_coverage", "shrinkage_reach", "families", "families_expected_below_075"}}} of
    :func:`run_distinct`'s results {seed: res}, seeds in the given order."""
    seeds = list(by_seed)
    out = {}
    for b, r in by_seed[seeds[0]].items():
        for n, v in r["by_n"].items():
            runs = [by_seed[x][b]["by_n"][n] for x in seeds]
            out.setdefault(b, {})[n] = {
                "seeds": seeds,
                **{k: [u[k] for u in runs] for k in ("ratio", "max_scenario_ratio", "coverage")},
                "mean_ratio": round(float(np.mean([u["ratio"] for u in runs])), 4),
                "mean_coverage": round(float(np.mean([u["coverage"] for u in runs])), 4),
                "shrinkage_reach": v["shrinkage_reach"],
                "families_below_075": [by_seed[x][b]["families"]["below_075"] for x in seeds],  # budgets pooled
                "families": r["families"]["families"],
                "families_expected_below_075": r["families"]["expected_below_075"],  # the first seed's pair counts
            }
    return out


def print_spread(spread: dict) -> None:
    """One line per (board, n) of :func:`seed_spread`."""
    for b, by_n in spread.items():
        for n, v in by_n.items():
            print(
                f"{b:<14} n={n:>3} over seeds {v['seeds']}: ratio "
                + " ".join(f"{x:.3f}" for x in v["ratio"])
                + f" (mean {v['mean_ratio']:.3f}; shrinking random items could reach {v['shrinkage_reach']:.3f}), "
                f"worst scenario up to {max(v['max_scenario_ratio']):.3f}, coverage mean {v['mean_coverage']:.3f} "
                f"min {min(v['coverage']):.3f}; families covered less than 0.75: "
                + " ".join(str(x) for x in v["families_below_075"])
                + f" of {v['families']} ({v['families_expected_below_075']:.1f} expected by chance)",
                flush=True,
            )


def print_board(name: str, r: dict) -> None:
    """One line per n of a board (distinct_boards.board_figures), then its per-family coverage."""
    for n, v in r["by_n"].items():
        print(
            f"{name:<14} {r['models']:>3} models {r['items']:>6} items n={n:>3}: served {v['served_mae']:6.2f} "
            f"random {v['random_mae']:6.2f} ratio {v['ratio']:.3f} (worst scenario {v['max_scenario_ratio']:.3f}) "
            f"coverage {v['coverage']:.3f} half-width {v['half_width']:.2f} ({v['half_width'] / v['served_mae']:.2f}x)"
            "  [" + ", ".join(f"{s}:{x[n]['estimator']}" for s, x in r["scenarios"].items()) + "]",
            flush=True,
        )
    f = r["families"]
    print(
        f"{name:<14} per held-out family (n = {', '.join(r['by_n'])} pooled): {f['below_075']} of {f['families']} "
        f"families cover less than 0.75 ({f['expected_below_075']:.1f} expected by chance); lowest {f['worst'][0]} "
        f"{f['worst'][1]:.3f} of {f['worst'][2]} pairs",
        flush=True,
    )


def print_frontier(name: str, f: dict) -> None:
    """One line per n of a board's frontier case (distinct_boards.frontier_figures)."""
    for n, v in f["by_n"].items():
        print(
            f"{name:<14} its {f['models']} strongest held out ({', '.join(f'{x:.1f}' for x in f['held_out'])}; board "
            f"up to {f['board_max']:.1f}) n={n:>3}: served {v['served_mae']:6.2f} random {v['random_mae']:6.2f} "
            f"ratio {v['ratio']:.3f} bias {v['bias']:+.2f} coverage {v['coverage']:.3f} half-width {v['half_width']:.2f}"
            + (
                f"; T2 MAE {v['mae_t2']:.2f} bias {v['bias_t2']:+.2f} coverage {v['coverage_t2']:.3f} half-width "
                f"{v['half_width_t2']:.2f}"
                if "mae_t2" in v
                else ""
            ),
            flush=True,
        )


def distinct_bars(res: dict) -> dict:
    """Issue 58's bars on the distinct boards."""
    bars = {}
    for b, r in res.items():
        for n, v in r["by_n"].items():
            cap = 0.75 if n == "30" else 0.90
            bars[f"distinct {b} n{n}: ratio <= {cap}"] = v["ratio"] <= cap
            bars[f"distinct {b} n{n}: no scenario above 1.0"] = v["max_scenario_ratio"] <= 1.0
            bars[f"distinct {b} n{n}: coverage >= 0.75"] = v["coverage"] >= 0.75
            bars[f"distinct {b} n{n}: half_width <= 2.5 x served_mae"] = v["half_width"] <= 2.5 * v["served_mae"]
    pooled = [v["coverage"] for r in res.values() for v in r["by_n"].values()]
    if pooled:
        bars["distinct: coverage pooled in [0.85, 0.95]"] = 0.85 <= float(np.mean(pooled)) <= 0.95
    return bars
