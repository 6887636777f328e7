"""MAGI subsets on the pooled openllm leaderboard (issue 9): full pool vs each ranking's chosen subset.

    .venv/bin/python benchmarks/magi.py [--json OUT.json] [--trials 60] [--seed 0] [--splits 10] [--data ../shared/data]
                                        [--variants]

The eval top 10 is ten models, so one tune/eval split gives a noisy spread ratio (seeds 0-5 of the first
multi-split run: irt_information 2.13x to 4.84x). The figures are therefore measured on ``--splits`` seeded
tune/eval splits (default 10; each seeds its split, IRT fits and search) and the contract keys are their means;
the JSON also holds each split's value and a 90 % bootstrap interval of the mean (over splits).

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
from tinybench_assets.core.subsets import (  # noqa: E402
    DEFAULTS,
    chance_per_item,
    choose_export,
    choose_variant,
    prepare,
    read_aggregate,
    run_magi,
)
from tinybench_assets.core.subsets.choice import VARIANT_RULE  # noqa: E402
from tinybench_assets.core.subsets.search import NO_REFERENCE_METHODS, fit_irt_models  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from meta import run_meta  # noqa: E402  (benchmarks/meta.py: date, commit, machine)

SCENARIOS = ("arc", "gsm8k", "mmlu", "truthfulqa")
CONTRACT = (
    "size",
    "fraction_of_pool",
    "top10_std",
    "top10_std_ratio",
    "mean_voter_penalty",
    "max_voter_penalty",
    "min_score",
    "guesser_advantage",
    "kendall_tau_nonvoters",
    "seconds",
)
ORDER = ("full", "mean_score", "irt", "irt_information", "ref_vs_voters", "irt_discrimination", "top_discrimination")
SPREAD_ONLY = {
    "balanced": False,
    "stratify": False,
    "irt_scope": "pooled",
    "validity_top": 100,
    "min_validity": None,
    "information": "raw",
}
EXTRA = (
    "kendall_tau_tune",
    "top10_std_ratio_tune",
    "top10_std_voters",
    "mean_abs_voter_penalty",
    "chance",
    "reference_score",
    "top10_std_all",
)


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
        rows[method] = {
            **res.eval_metrics,
            "seconds": res.seconds,
            "kendall_tau_tune": res.chosen.metrics["kendall_tau_nonvoters"],
            "top10_std_tune": res.chosen.metrics["top10_std"],
        }
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


def meets_3x_bar(r: dict) -> bool:
    """The issue's first bar for one method's figures: at most 1/5 of the pool, top-10 std >= 3x, mean |penalty| <= 0.5."""
    return r["fraction_of_pool"] <= 0.2 and r["top10_std_ratio"] >= 3 and r["mean_abs_voter_penalty"] <= 0.5


def tau_above_0(r: dict) -> bool:
    """The held-out top 50 ranked like their full scores: tau's 90 % interval (or, for one split, tau) above 0."""
    return r.get("kendall_tau_nonvoters_ci90", [r["kendall_tau_nonvoters"]])[0] > 0


def bars(out: dict, stage: float) -> dict:
    info = out["irt_information"]
    return {
        "subset_le_1/5_std_ge_3x_penalty_le_0.5": any(meets_3x_bar(out[m]) for m in out if m != "full"),
        "irt_information_ge_2.5x": info["top10_std_ratio"] >= 2.5,
        "subset_le_1/5_std_ge_3x_penalty_le_0.5_tau_above_0": any(
            meets_3x_bar(out[m]) and tau_above_0(out[m]) for m in out if m != "full"
        ),
        "irt_information_ge_2.5x_tau_above_0": info["top10_std_ratio"] >= 2.5 and tau_above_0(info),
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
                    opts = dict(
                        balanced=balanced,
                        stratify=stratify,
                        irt_scope=scope,
                        validity_top=top or 100,
                        min_validity=0.0 if top else None,
                    )
                    methods = ORDER[1:5] + ("top_discrimination",) if scope == "pooled" else ("irt", "irt_information")
                    r = run_magi(
                        setup,
                        methods=methods,
                        n_trials=trials,
                        seed=seed,
                        irt_params=fits[scope],
                        information="raw",
                        **opts,
                    )
                    results = [(m, "raw", res, r) for m, res in r.methods.items()]
                    if scope == "pooled":  # the direction fit does not depend on the IRT scope: run it once
                        rd = run_magi(
                            setup,
                            methods=("irt_information",),
                            n_trials=trials,
                            seed=seed,
                            irt_params=fits[scope],
                            info_params=fit2,
                            information="full_direction",
                            **opts,
                        )
                        results += [(m, "full_direction", res, rd) for m, res in rd.methods.items()]
                    for m, info, res, r in results:
                        ft, fe = r.full_metrics["top10_std"], r.full_eval_metrics["top10_std"]
                        c, e = res.chosen.metrics, res.eval_metrics
                        rows.append(
                            {
                                **opts,
                                "validity_top": top,
                                "information": info if m == "irt_information" else "",
                                "method": m,
                                "tune_fraction": c["fraction_of_pool"],
                                "tune_ratio": c["top10_std"] / ft,
                                "tune_abs_penalty": c["mean_abs_voter_penalty"],
                                "tune_guesser_advantage": c["guesser_advantage"],
                                "tune_kendall_tau": c["kendall_tau_nonvoters"],
                                "eval_ratio": e["top10_std"] / fe,
                                "eval_kendall_tau": e["kendall_tau_nonvoters"],
                                "demoted": ",".join(r.demoted),
                            }
                        )
    return pd.DataFrame(rows)


def aggregate(per_split: list[dict], seed: int) -> dict:
    """Per method: each contract/extra key averaged over the splits (``size`` rounded to an int), a 90 % bootstrap
    interval of the mean (over splits, seeded) for the ratio and tau, the per-split values, and in how many splits
    each bar holds."""
    rng = np.random.default_rng(seed)
    out = {}
    for method in per_split[0]:
        rows = [d[method] for d in per_split]
        agg = {}
        for k in CONTRACT + EXTRA:
            v = np.array([r[k] for r in rows], dtype=float)
            agg[k] = int(round(float(np.mean(v)))) if k == "size" else float(np.mean(v))
        for k in ("top10_std_ratio", "kendall_tau_nonvoters", "top10_std_ratio_tune", "kendall_tau_tune"):
            v = np.array([r[k] for r in rows], dtype=float)
            boot = v[rng.integers(0, len(v), (2000, len(v)))].mean(axis=1)
            agg[k + "_ci90"] = [float(np.quantile(boot, 0.05)), float(np.quantile(boot, 0.95))]
            agg[k + "_per_split"] = [float(x) for x in v]
            agg[k + "_median"] = float(np.median(v))
        agg["fraction_of_pool_per_split"] = [float(r["fraction_of_pool"]) for r in rows]
        if "method" in rows[0]:
            agg["method_per_split"] = [r["method"] for r in rows]
        if method != "full":
            agg["splits_meeting_3x_bar"] = int(sum(meets_3x_bar(r) for r in rows))
            agg["splits_tau_positive"] = int(sum(r["kendall_tau_nonvoters"] > 0 for r in rows))
            agg["params_per_split"] = [r.get("params") for r in rows]
        out[method] = agg
    return out


def run_split(wide, info, full, aggregate_table, seed: int, trials: int):
    """One tune/eval split (seed): the product default and the spread-only run, with their figures."""
    t0 = time.perf_counter()
    setup = prepare(
        wide.to_numpy(dtype=float),
        list(wide.index),
        list(wide.columns),
        info["scenario"].to_numpy(),
        info["subscenario"].to_numpy(),
        chance_per_item(info["scenario"].to_numpy()),
        full.to_numpy(),
        aggregate=aggregate_table,
        seed=seed,
        balanced=DEFAULTS["balanced"],
    )
    t_setup = time.perf_counter() - t0
    result = run_magi(setup, n_trials=trials, seed=seed)  # the product default (core DEFAULTS)
    stage = time.perf_counter() - t0
    t1 = time.perf_counter()
    spread = run_magi(setup, n_trials=trials, seed=seed, **SPREAD_ONLY)
    spread_stage = time.perf_counter() - t1 + t_setup
    figs = []
    for res in (result, spread):
        fig = figures(res, t_setup)
        pick = choose_export(res)  # what export_method: auto would export (tune figures only)
        fig["export_auto"] = {**fig[pick], "method": pick}
        figs.append(fig)
    return setup, result, spread, stage, spread_stage, *figs


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path)
    ap.add_argument("--trials", type=int, default=60)
    ap.add_argument(
        "--seed", type=int, default=0, help="first split seed (seeds the split, the IRT fits and the search)"
    )
    ap.add_argument(
        "--splits",
        type=int,
        default=10,
        help="tune/eval splits (seeds seed .. seed+splits-1); the contract keys are means over them",
    )
    ap.add_argument("--data", type=Path, default=Path(paths.default_data_dir()))
    ap.add_argument(
        "--variants",
        action="store_true",
        help="also run the variants grid and the default-choosing rule (first split only)",
    )
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(2)
    t0 = time.perf_counter()
    wide, info, full = load_openllm(args.data)
    aggregate_table = read_aggregate(paths.aggregate_csv("openllm", data_dir=args.data))
    t_load = time.perf_counter() - t0
    splits, stages, spread_stages, firsts = [], [], [], None
    for seed in range(args.seed, args.seed + args.splits):
        setup, result, spread, stage, spread_stage, out, out_spread = run_split(
            wide, info, full, aggregate_table, seed, args.trials
        )
        for fig in (out, out_spread):
            fig["full"]["seconds"] += t_load
        splits.append((out, out_spread, setup.models[setup.reference], list(result.demoted)))
        stages.append(stage + t_load)
        spread_stages.append(spread_stage + t_load)
        firsts = firsts or (setup, result, spread)
        r = out["irt_information"], out["irt"]
        print(
            f"split {seed}: reference {setup.models[setup.reference]}; eval ratio / tau: irt_information "
            f"{r[0]['top10_std_ratio']:.2f} / {r[0]['kendall_tau_nonvoters']:+.2f}, irt {r[1]['top10_std_ratio']:.2f}"
            f" / {r[1]['kendall_tau_nonvoters']:+.2f}; stage {stage + t_load:.1f} s",
            flush=True,
        )
    setup, result, spread = firsts
    out = aggregate([s[0] for s in splits], args.seed)
    out_spread = aggregate([s[1] for s in splits], args.seed)
    stage, spread_stage = max(stages), max(spread_stages)
    for fig in (out, out_spread):
        fig["full"]["seconds"] = t_load
    roles = pd.Series(setup.role).value_counts().to_dict()
    meta = {
        "models": len(setup.models),
        "items": len(setup.items),
        "roles": roles,
        "guessers": int(setup.guesser.sum()),
        "splits": args.splits,
        "split_seeds": list(range(args.seed, args.seed + args.splits)),
        "aggregation": "contract keys are means over the splits (size: rounded mean); *_ci90: 90 % bootstrap "
        "interval of the mean over splits; *_per_split: each split's value",
        "reference_per_split": [s[2] for s in splits],
        "demoted_per_split": [s[3] for s in splits],
        "not_fair_models_first_split": int(setup.not_fair.sum()),
        "trials_per_method": args.trials,
        "seed": args.seed,
        "stage_seconds": stage,
        "stage_seconds_per_split": stages,
        "irt_seconds_first_split": result.irt_seconds,
        "spread_only_stage_seconds": spread_stage,
        "torch_threads": torch.get_num_threads(),
        "product_default": result.options,
        "spread_only_options": spread.options,
        "scenario_validity_tune_top100_first_split": result.validity,
        "penalty_sign": "penalty = score without the voter - score with it; positive = penalized",
    }
    cols = list(CONTRACT) + ["kendall_tau_tune", "top10_std_ratio_tune", "mean_abs_voter_penalty"]
    print(
        f"pooled openllm: {meta['models']} models x {meta['items']} items; roles (first split) {roles}; guessers "
        f"{meta['guessers']}; {args.splits} tune/eval splits (seeds {args.seed}..{args.seed + args.splits - 1})"
    )
    print("references per split (their families flagged not fair):", meta["reference_per_split"])
    print(
        "figures: MEANS OVER THE SPLITS on the held-out eval non-voters (top-10 std [0,1] scale; penalties in points,"
        " positive = penalized; *_tune: the same on the tune models the search saw)"
    )
    short = {
        "fraction_of_pool": "frac",
        "top10_std_ratio": "ratio",
        "mean_voter_penalty": "pen",
        "max_voter_penalty": "max_pen",
        "guesser_advantage": "guess_adv",
        "kendall_tau_nonvoters": "tau",
        "kendall_tau_tune": "tau_tune",
        "top10_std_ratio_tune": "ratio_tune",
        "mean_abs_voter_penalty": "abs_pen",
        "min_score": "min",
    }
    both = pd.concat(
        {
            "PRODUCT DEFAULT " + str(result.options): pd.DataFrame(out).T[cols].rename(columns=short),
            "SPREAD ONLY (no guard, pooled IRT)": pd.DataFrame(out_spread).T[cols].rename(columns=short),
        },
        axis=1,
    )
    with pd.option_context("display.width", 250, "display.max_columns", 40):
        for name in both.columns.levels[0]:
            print(name)
            print(
                both[name]
                .drop(columns=["seconds", "top10_std"])
                .astype(float)
                .to_string(float_format=lambda v: f"{v:.3f}")
            )
            fig = out if name.startswith("PRODUCT") else out_spread
            for m in ORDER[1:] + ("export_auto",):
                if m in fig:
                    f = fig[m]
                    lo, hi = f["top10_std_ratio_ci90"]
                    tlo, thi = f["kendall_tau_nonvoters_ci90"]
                    print(
                        f"  {m:20s} ratio {f['top10_std_ratio']:.2f} [{lo:.2f}, {hi:.2f}] median "
                        f"{f['top10_std_ratio_median']:.2f}; tau {f['kendall_tau_nonvoters']:+.2f} [{tlo:+.2f}, "
                        f"{thi:+.2f}]; splits meeting the 3x bar {f['splits_meeting_3x_bar']}/{args.splits}, tau > 0 "
                        f"{f['splits_tau_positive']}/{args.splits}; per split ratio "
                        + " ".join(f"{v:.2f}" for v in f["top10_std_ratio_per_split"])
                        + ("; picks " + " ".join(f.get("method_per_split", [])) if m == "export_auto" else "")
                    )
    b, b_spread = bars(out, stage), bars(out_spread, spread_stage)
    print(
        f"whole MAGI stage, product default (load, voters, IRT fits, {len(result.methods)} searches x {args.trials}"
        f" trials), slowest split: {stage:.1f} s; spread-only: {spread_stage:.1f} s"
    )
    print("bars on the means over splits, product default:", b)
    print("bars on the means over splits, spread only:    ", b_spread)
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
        doc["_variants"] = {
            "rule": VARIANT_RULE,
            "rows": grid.to_dict("records"),
            "pick": None if pick is None else pick.drop("_dist").to_dict(),
            "export_method": None if pick_export is None else pick_export["method"],
        }
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {**doc, "meta": run_meta()}, indent=2, default=lambda v: v.item() if hasattr(v, "item") else str(v)
            )
        )
    return out


if __name__ == "__main__":
    main()
