"""MAGI subsets on the pooled openllm leaderboard (issue 9): full pool vs each ranking's chosen subset.

    .venv/bin/python benchmarks/magi.py [--json OUT.json] [--trials 60] [--seed 0] [--data ../shared/data] [--variants]

The contract keys per method report the PRODUCT DEFAULT (core DEFAULTS: validity guard, per-scenario IRT, ...);
``spread_only`` holds the same figures for the unguarded first version (pooled 1-D IRT, no guard, plain mean
scores), which maximizes spread only. ``--variants`` also runs the grid of construct-valid variants (balanced
scores x stratified deletion x IRT scope x guard population) and applies the documented rule
(core ``choose_variant``, tune models and voters only) that picked the defaults.

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
from tinybench_assets.core.subsets import (DEFAULTS, chance_per_item, choose_variant, prepare, read_aggregate,  # noqa: E402
                                           run_magi)
from tinybench_assets.core.subsets.search import NO_REFERENCE_METHODS, VARIANT_RULE, fit_irt_models  # noqa: E402

SCENARIOS = ("arc", "gsm8k", "mmlu", "truthfulqa")
CONTRACT = ("size", "fraction_of_pool", "top10_std", "top10_std_ratio", "mean_voter_penalty", "max_voter_penalty",
            "min_score", "guesser_advantage", "kendall_tau_nonvoters", "seconds")
ORDER = ("full", "mean_score", "irt", "irt_information", "ref_vs_voters", "irt_discrimination", "top_discrimination")
SPREAD_ONLY = {"balanced": False, "stratify": False, "irt_scope": "pooled", "validity_top": 100, "min_validity": None,
               "information": "raw"}
EXTRA = ("kendall_tau_tune", "top10_std_ratio_tune", "top10_std_voters", "mean_abs_voter_penalty", "chance",
         "reference_score", "top10_std_all")


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


def figures(result, t_full: float) -> dict:
    """Contract figures per method (eval models; penalties on voters) plus tune tau / tune ratio."""
    rows = {"full": {**result.full_eval_metrics, "seconds": t_full}}
    rows["full"]["kendall_tau_tune"] = result.full_metrics["kendall_tau_nonvoters"]
    rows["full"]["top10_std_tune"] = result.full_metrics["top10_std"]
    for method, res in result.methods.items():
        rows[method] = {**res.eval_metrics, "seconds": res.seconds,
                        "kendall_tau_tune": res.chosen.metrics["kendall_tau_nonvoters"],
                        "top10_std_tune": res.chosen.metrics["top10_std"]}
    base, base_t = rows["full"]["top10_std"], rows["full"]["top10_std_tune"]
    out = {}
    for method in ORDER:
        if method not in rows:
            continue
        r = rows[method]
        r["top10_std_ratio"] = r["top10_std"] / base if base > 0 else float("nan")
        r["top10_std_ratio_tune"] = r["top10_std_tune"] / base_t if base_t > 0 else float("nan")
        out[method] = {k: (int(r[k]) if k == "size" else float(r[k])) for k in CONTRACT}
        out[method].update({k: float(r[k]) for k in EXTRA})
        if method != "full":
            out[method]["params"] = result.methods[method].params.as_dict()
    return out


def bars(out: dict, stage: float) -> dict:
    return {
        "subset_le_1/5_std_ge_3x_penalty_le_0.5": any(
            out[m]["fraction_of_pool"] <= 0.2 and out[m]["top10_std_ratio"] >= 3 and out[m]["mean_abs_voter_penalty"] <= 0.5
            for m in out if m != "full"),
        "irt_information_ge_2.5x": out["irt_information"]["top10_std_ratio"] >= 2.5,
        "stage_under_180s": stage < 180,
    }


def variants(setup, trials: int, seed: int) -> pd.DataFrame:
    """Every construct-valid variant x method: tune figures (what the rule may use) and eval figures (reported).
    irt_information runs with both information rules (raw; full_direction, from one 2-D pooled fit)."""
    fits = {scope: fit_irt_models(setup, seed=seed, scope=scope) for scope in ("pooled", "scenario")}
    fit2 = fit_irt_models(setup, dim=2, seed=seed, scope="pooled")
    rows = []
    for balanced in (False, True):
        for stratify in (False, True):
            for scope in ("pooled", "scenario"):
                for top in (0, 50, 100, 200, 400):  # 0: guard off
                    opts = dict(balanced=balanced, stratify=stratify, irt_scope=scope, validity_top=top or 100,
                                min_validity=0.0 if top else None)
                    methods = ORDER[1:5] + ("top_discrimination",) if scope == "pooled" else ("irt", "irt_information")
                    r = run_magi(setup, methods=methods, n_trials=trials, seed=seed, irt_params=fits[scope],
                                 information="raw", **opts)
                    results = [(m, "raw", res, r) for m, res in r.methods.items()]
                    if scope == "pooled":  # the direction fit does not depend on the IRT scope: run it once
                        rd = run_magi(setup, methods=("irt_information",), n_trials=trials, seed=seed,
                                      irt_params=fits[scope], info_params=fit2, information="full_direction", **opts)
                        results += [(m, "full_direction", res, rd) for m, res in rd.methods.items()]
                    for m, info, res, r in results:
                        ft, fe = r.full_metrics["top10_std"], r.full_eval_metrics["top10_std"]
                        c, e = res.chosen.metrics, res.eval_metrics
                        rows.append({**opts, "validity_top": top, "information": info if m == "irt_information" else "",
                                     "method": m, "tune_fraction": c["fraction_of_pool"],
                                     "tune_ratio": c["top10_std"] / ft, "tune_abs_penalty": c["mean_abs_voter_penalty"],
                                     "tune_guesser_advantage": c["guesser_advantage"],
                                     "tune_kendall_tau": c["kendall_tau_nonvoters"], "eval_ratio": e["top10_std"] / fe,
                                     "eval_kendall_tau": e["kendall_tau_nonvoters"], "demoted": ",".join(r.demoted)})
    return pd.DataFrame(rows)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path)
    ap.add_argument("--trials", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", type=Path, default=Path(paths.default_data_dir()))
    ap.add_argument("--variants", action="store_true", help="also run the variants grid and the default-choosing rule")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(2)
    t0 = time.perf_counter()
    wide, info, full = load_openllm(args.data)
    aggregate = read_aggregate(paths.aggregate_csv("openllm", data_dir=args.data))
    setup = prepare(wide.to_numpy(dtype=float), list(wide.index), list(wide.columns), info["scenario"].to_numpy(),
                    info["subscenario"].to_numpy(), chance_per_item(info["scenario"].to_numpy()), full.to_numpy(),
                    aggregate=aggregate, seed=args.seed, balanced=DEFAULTS["balanced"])
    t_load = time.perf_counter() - t0
    result = run_magi(setup, n_trials=args.trials, seed=args.seed)  # the product default (core DEFAULTS)
    stage = time.perf_counter() - t0
    out = figures(result, t_load)
    t1 = time.perf_counter()
    spread = run_magi(setup, n_trials=args.trials, seed=args.seed, **SPREAD_ONLY)
    spread_stage = time.perf_counter() - t1 + t_load
    out_spread = figures(spread, t_load)
    roles = pd.Series(setup.role).value_counts().to_dict()
    meta = {"models": len(setup.models), "items": len(setup.items), "roles": roles, "guessers": int(setup.guesser.sum()),
            "reference": setup.models[setup.reference], "not_fair_models": int(setup.not_fair.sum()),
            "trials_per_method": args.trials, "seed": args.seed, "stage_seconds": stage, "irt_seconds": result.irt_seconds,
            "spread_only_stage_seconds": spread_stage, "torch_threads": torch.get_num_threads(),
            "product_default": result.options, "spread_only_options": spread.options,
            "scenario_validity_tune_top100": result.validity, "demoted_scenarios": list(result.demoted),
            "penalty_sign": "penalty = score without the voter - score with it; positive = penalized"}
    cols = list(CONTRACT) + ["kendall_tau_tune", "top10_std_ratio_tune", "mean_abs_voter_penalty"]
    print(f"pooled openllm: {meta['models']} models x {meta['items']} items; roles {roles}; guessers {meta['guessers']}; "
          f"reference {meta['reference']} ({meta['not_fair_models']} models of its family flagged not fair)")
    print("scenario validity (corr. of scenario score with full score, top-100 tune models):",
          {str(k): round(v, 3) for k, v in result.validity.items()}, "; deleted first:", [str(g) for g in result.demoted])
    print("figures on the held-out eval non-voters (top-10 std [0,1] scale; penalties in points, positive = penalized;"
          " *_tune: the same on the tune models the search saw)")
    short = {"fraction_of_pool": "frac", "top10_std_ratio": "ratio", "mean_voter_penalty": "pen", "max_voter_penalty":
             "max_pen", "guesser_advantage": "guess_adv", "kendall_tau_nonvoters": "tau", "kendall_tau_tune": "tau_tune",
             "top10_std_ratio_tune": "ratio_tune", "mean_abs_voter_penalty": "abs_pen", "min_score": "min"}
    both = pd.concat({"PRODUCT DEFAULT " + str(result.options): pd.DataFrame(out).T[cols].rename(columns=short),
                      "SPREAD ONLY (no guard, pooled IRT)": pd.DataFrame(out_spread).T[cols].rename(columns=short)}, axis=1)
    with pd.option_context("display.width", 250, "display.max_columns", 40):
        for name in both.columns.levels[0]:
            print(name)
            print(both[name].drop(columns=["seconds", "top10_std"]).to_string(float_format=lambda v: f"{v:.3f}"))
    b, b_spread = bars(out, stage), bars(out_spread, spread_stage)
    print(f"whole MAGI stage, product default (load, voters, IRT fits, {len(result.methods)} searches x {args.trials}"
          f" trials): {stage:.1f} s; spread-only: {spread_stage:.1f} s")
    print("bars, product default:", b)
    print("bars, spread only:    ", b_spread)
    doc = {**out, "spread_only": out_spread, "_meta": {**meta, "bars": b, "bars_spread_only": b_spread}}
    if args.variants:
        grid = variants(setup, args.trials, args.seed)
        pick = choose_variant(grid)
        pick_export = choose_variant(grid, methods=NO_REFERENCE_METHODS)
        with pd.option_context("display.width", 250, "display.max_rows", 500):
            print(grid.drop(columns=["tune_guesser_advantage"]).to_string(float_format=lambda v: f"{v:.3f}"))
        print("rule:", VARIANT_RULE)
        print("rule picks:", None if pick is None else pick.to_dict())
        print("export (no reference burned):", None if pick_export is None else pick_export["method"])
        doc["_variants"] = {"rule": VARIANT_RULE, "rows": grid.to_dict("records"),
                            "pick": None if pick is None else pick.drop("_dist").to_dict(),
                            "export_method": None if pick_export is None else pick_export["method"]}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(doc, indent=2, default=lambda v: v.item() if hasattr(v, "item") else str(v)))
    return out


if __name__ == "__main__":
    main()
