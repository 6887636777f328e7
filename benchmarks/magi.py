"""MAGI subsets on the pooled openllm leaderboard (issue 9): full pool vs each ranking's chosen subset.

    .venv/bin/python benchmarks/magi.py [--json OUT.json] [--trials 60] [--seed 0] [--data ../shared/data]

Voters, tune and eval models as in tinybench_assets/core/subsets/setup.py: every selection step (rankings,
IRT fit, optimizer) sees the voters and the tune half of the non-voters only; the figures below are measured
on the held-out eval half (top-10 std, Kendall tau of the eval top 50 against their real full-benchmark scores,
weakest non-guesser) and on the voters (penalties). Runs on 2 CPU threads.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "2")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from tinybench_assets import paths  # noqa: E402
from tinybench_assets.core.subsets import chance_per_item, prepare, read_aggregate, run_magi  # noqa: E402

SCENARIOS = ("arc", "gsm8k", "mmlu", "truthfulqa")
CONTRACT = ("size", "fraction_of_pool", "top10_std", "top10_std_ratio", "mean_voter_penalty", "max_voter_penalty",
            "min_score", "guesser_advantage", "kendall_tau_nonvoters", "seconds")
ORDER = ("full", "mean_score", "irt", "irt_information", "ref_vs_voters", "irt_discrimination")


def load_openllm(data: Path):
    """Pooled openllm: models present in all four scenarios x 587 items (0/1), item info, mean full score."""
    frames = [pd.read_parquet(data / "openllm" / f"{s}.responses.parquet") for s in SCENARIOS]
    models = sorted(set.intersection(*[set(f["model"]) for f in frames]))
    long = pd.concat(frames)
    long = long[long["model"].isin(models)]
    wide = long.pivot(index="model", columns="item", values="score").sort_index()
    info = long.drop_duplicates("item").set_index("item").loc[wide.columns]
    full = pd.concat([pd.read_parquet(data / "openllm" / f"{s}.full_scores.parquet") for s in SCENARIOS])
    full = full.pivot_table(index="model", columns="scenario", values="full_benchmark_score").mean(axis=1)
    return wide, info, full.reindex(wide.index)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path)
    ap.add_argument("--trials", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", type=Path, default=Path(paths.default_data_dir()))
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(2)
    t0 = time.perf_counter()
    wide, info, full = load_openllm(args.data)
    aggregate = read_aggregate(args.data / "openllm" / "leaderboard_aggregate_scores.csv")
    setup = prepare(wide.to_numpy(dtype=float), list(wide.index), list(wide.columns), info["scenario"].to_numpy(),
                    info["subscenario"].to_numpy(), chance_per_item(info["scenario"].to_numpy()), full.to_numpy(),
                    aggregate=aggregate, seed=args.seed)
    t_load = time.perf_counter() - t0
    result = run_magi(setup, n_trials=args.trials, seed=args.seed)
    stage = time.perf_counter() - t0
    rows = {"full": {**result.full_eval_metrics, "seconds": t_load}}
    rows["full"]["kendall_tau_tune"] = result.full_metrics["kendall_tau_nonvoters"]
    for method, res in result.methods.items():
        rows[method] = {**res.eval_metrics, "seconds": res.seconds,
                        "kendall_tau_tune": res.chosen.metrics["kendall_tau_nonvoters"]}
    base = rows["full"]["top10_std"]
    out = {}
    for method in ORDER:
        r = rows[method]
        r["top10_std_ratio"] = r["top10_std"] / base if base > 0 else float("nan")
        out[method] = {k: (int(r[k]) if k == "size" else float(r[k])) for k in CONTRACT}
        out[method].update({k: float(r[k]) for k in ("top10_std_voters", "mean_abs_voter_penalty", "chance",
                                                     "reference_score", "top10_std_all", "kendall_tau_tune")})
        if method != "full":
            out[method]["params"] = result.methods[method].params.as_dict()
    roles = pd.Series(setup.role).value_counts().to_dict()
    meta = {"models": len(setup.models), "items": len(setup.items), "roles": roles, "guessers": int(setup.guesser.sum()),
            "reference": setup.models[setup.reference], "not_fair_models": int(setup.not_fair.sum()),
            "trials_per_method": args.trials, "seed": args.seed, "stage_seconds": stage, "irt_seconds": result.irt_seconds,
            "torch_threads": torch.get_num_threads(),
            "scenario_validity_tune_top100": result.validity, "demoted_scenarios": list(result.demoted),
            "penalty_sign": "penalty = score without the voter - score with it; positive = penalized"}
    table = pd.DataFrame(out).T[list(CONTRACT) + ["kendall_tau_tune", "top10_std_voters", "mean_abs_voter_penalty"]]
    print(f"pooled openllm: {meta['models']} models x {meta['items']} items; roles {roles}; guessers {meta['guessers']}; "
          f"reference {meta['reference']} ({meta['not_fair_models']} models of its family flagged not fair)")
    print("scenario validity (corr. of scenario score with full score, top-100 tune models):",
          {k: round(v, 3) for k, v in result.validity.items()}, "; deleted first:", list(result.demoted))
    print("figures on the held-out eval non-voters (top-10 std [0,1] scale; penalties in points, positive = "
          "penalized; kendall_tau_tune: the same tau on the tune models the search saw)")
    print(table.to_string(float_format=lambda v: f"{v:.4f}"))
    print(f"whole MAGI stage (load, voters, IRT fit, {len(result.methods)} searches x {args.trials} trials): {stage:.1f} s")
    bars = {
        "subset_le_1/5_std_ge_3x_penalty_le_0.5": any(
            out[m]["fraction_of_pool"] <= 0.2 and out[m]["top10_std_ratio"] >= 3 and out[m]["mean_abs_voter_penalty"] <= 0.5
            for m in out if m != "full"),
        "irt_information_ge_2.5x": out["irt_information"]["top10_std_ratio"] >= 2.5,
        "stage_under_180s": stage < 180,
    }
    print("bars (product default, validity guard on):", bars)

    # The same search without the validity guard: MAGI's spread-only objective, for comparison (docs/magi.md)
    t1 = time.perf_counter()
    loose = run_magi(setup, n_trials=args.trials, seed=args.seed, min_validity=None)
    base_l = loose.full_eval_metrics["top10_std"]
    spread_only = {m: {**{k: (int(r.eval_metrics[k]) if k == "size" else float(r.eval_metrics[k]))
                          for k in CONTRACT if k in r.eval_metrics},
                       "top10_std_ratio": float(r.eval_metrics["top10_std"] / base_l),
                       "kendall_tau_tune": float(r.chosen.metrics["kendall_tau_nonvoters"]), "seconds": float(r.seconds)}
                   for m, r in loose.methods.items()}
    print(f"\nspread-only (guard off; {time.perf_counter() - t1:.1f} s): fraction, top-10 std ratio, mean |penalty|, "
          "tau eval / tune")
    for m, r in spread_only.items():
        print(f"  {m:<20}{r['fraction_of_pool']:6.3f}{r['top10_std_ratio']:7.2f}x "
              f"{loose.methods[m].eval_metrics['mean_abs_voter_penalty']:6.2f}  {r['kendall_tau_nonvoters']:+.2f} / "
              f"{r['kendall_tau_tune']:+.2f}")
    bars_loose = {"subset_le_1/5_std_ge_3x_penalty_le_0.5": any(
        r["fraction_of_pool"] <= 0.2 and r["top10_std_ratio"] >= 3 and loose.methods[m].eval_metrics["mean_abs_voter_penalty"] <= 0.5
        for m, r in spread_only.items()), "irt_information_ge_2.5x": spread_only["irt_information"]["top10_std_ratio"] >= 2.5}
    print("bars (spread-only):", bars_loose, "- but these subsets rank the top models against their full scores (tau < 0)")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({**out, "spread_only": spread_only,
                                         "_meta": {**meta, "bars": bars, "bars_spread_only": bars_loose}},
                                        indent=2, default=float))
    return out


if __name__ == "__main__":
    main()
