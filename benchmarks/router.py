"""Router benchmark on RouterDC (MMLU, ARC-Challenge, GSM8K), RouterBench MBPP (11 models with per-question dollar
costs) and RouteLLM's evaluation data (MMLU, GSM8K; Mixtral vs GPT-4, no split landed: the assets split the questions
themselves): the router assets run cold on a fresh store, then again to show the embedding cache, then a
shuffled-answers check of the served routers. On MBPP, the cost-quality report: AIQ of the router against the zero
router (RouterBench's non-decreasing convex hull of the single models) and the point served for quality_at_min_cost.
RouterDC's mixed traffic: the leaderboard router (no scenario label) per task beside the best single model overall,
the per-task best model and the oracle. RouteLLM: APGR, CPT(50 %), CPT(80 %) with bootstrap intervals.

    .venv/bin/python benchmarks/router.py --json benchmarks/results/router.json

Prints, per benchmark, the served router's test accuracy beside the best single model, the oracle, a random
model, the tutorial's KNN-IRT and every CV-chosen router, with the independent reference figures on MMLU.
Runs on the CPU with 2 torch threads unless --device says otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from meta import run_meta  # noqa: E402  (benchmarks/meta.py: date, commit, machine)

REFERENCE_MMLU = {
    "best_single_acc": 0.6459,
    "oracle_acc": 0.8526,
    "random_acc": 0.6054,
    "tutorial_knn_irt_acc": 0.623,
    "router_acc": 0.6478,
}
BENCHMARKS = {
    "mmlu": "routerdc.mmlu",
    "arc_challenge": "routerdc.arc_challenge",
    "gsm8k": "routerdc.gsm8k",
    "mbpp": "routerbench.mbpp",
    "routellm_mmlu": "routellm.mmlu",
    "routellm_gsm8k": "routellm.gsm8k",
}
BOARDS = ("routerdc", "routellm")  # the leaderboard routers (mixed traffic)
ROUTELLM_BARS = {"mmlu": {"apgr": 0.63, "cpt50": 0.33, "cpt50_hi": 0.50}, "gsm8k": {"apgr": 0.58}}
COST_BARS = {"aiq_delta_lo": 0.0, "accuracy_below_best_single_points": 1.0, "cost_ratio": 0.25}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="write the contract JSON here")
    ap.add_argument("--data", default=None, help="RouterDC folder (default ../shared/data/routerdc)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--keep", help="keep the temporary store in this folder")
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    import dagster as dg

    from tinybench_assets import paths
    from tinybench_assets.core.routing import evaluate_routing, route
    from tinybench_assets.core.routing.routers import model_accuracy
    from tinybench_assets.core.routing.saved import load_router
    from tinybench_assets.defs.assets import encoders, irt, responses, router_board, router_eval, routing
    from tinybench_assets.defs.partitions import register_partitions
    from tinybench_assets.defs.resources import EncoderResource, LandingResource, ModelStore, StoreResource, TorchDevice
    from tinybench_assets.io.store import Store

    src = Path(args.data or Path(paths.default_data_dir()) / "routerdc")
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="tinybench_router_"))
    (root / "incoming" / "routerdc").mkdir(parents=True, exist_ok=True)
    for f in sorted(src.glob("*.json")):
        shutil.copy(f, root / "incoming" / "routerdc" / f.name)
    (root / "incoming" / "routerbench").mkdir(parents=True, exist_ok=True)
    for f in sorted((Path(paths.default_data_dir()) / "routerbench").glob("mbpp_*.csv")):
        shutil.copy(f, root / "incoming" / "routerbench" / f.name)
    (root / "incoming" / "routellm").mkdir(parents=True, exist_ok=True)
    for f in sorted((Path(paths.default_data_dir()) / "routellm").glob("*.csv")):
        shutil.copy(f, root / "incoming" / "routellm" / f.name)
    os.environ["TINYBENCH_ARTIFACTS"] = str(root / "artifacts")
    res = {
        "store": StoreResource(database=str(root / "tb.duckdb")),
        "landing": LandingResource(incoming=str(root / "incoming"), quarantine=str(root / "quarantine")),
        "torch_device": TorchDevice(device=args.device, num_threads=args.threads),
        "encoder": EncoderResource(device=args.device, num_threads=args.threads),
        "model_store": ModelStore(),
    }
    instance = dg.DagsterInstance.ephemeral()
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    t0 = time.perf_counter()
    assert dg.materialize([responses.landing_ingest], instance=instance, resources=res, run_config=quiet).success
    ts = time.perf_counter()  # as the ingest job does: the static encoder, distilled once for this artifacts folder
    r = dg.materialize([encoders.static_encoder], instance=instance, resources=res, run_config=quiet)
    assert r.success
    static_s, static_md = time.perf_counter() - ts, r.asset_materializations_for_node("static_encoder")[0].metadata
    print(f"static_encoder: {static_md['built'].value} ({static_s:.1f} s)", flush=True)
    register_partitions(instance, BENCHMARKS.values())
    up = [responses.raw_responses, responses.response_matrix, responses.binarized_responses, irt.irt_model]
    for key in BENCHMARKS.values():
        assert dg.materialize(up, partition_key=key, instance=instance, resources=res, run_config=quiet).success
    upstream_s = time.perf_counter() - t0
    print(f"upstream (ingest, matrices, IRT on training questions): {upstream_s:.1f} s", flush=True)

    stage = [*routing.scenario_assets, router_eval.router_accuracy]
    t1, embedded, encode_s, step_s, chosen = time.perf_counter(), 0, 0.0, {}, {}
    for name, key in BENCHMARKS.items():
        ts = time.perf_counter()
        r = dg.materialize(stage, partition_key=key, instance=instance, resources=res, run_config=quiet)
        assert r.success, key
        step_s[name] = time.perf_counter() - ts
        md = r.asset_materializations_for_node("question_embeddings")[0].metadata
        embedded += md["embedded_now"].value
        encode_s += md["encode_seconds"].value
        chosen[name] = {"encoder": md["encoder"].value, "encoder_rule": md["encoder_rule"].value}
        print(
            f"router stage {key}: {step_s[name]:.1f} s ({md['embedded_now'].value} texts embedded; "
            f"{md['encoder'].value}: {md['encoder_rule'].value})",
            flush=True,
        )
    for board in BOARDS:
        ts = time.perf_counter()
        r = dg.materialize(
            [router_board.leaderboard_router], partition_key=board, instance=instance, resources=res, run_config=quiet
        )
        assert r.success, board
        chosen[f"board_{board}"] = r.asset_materializations_for_node("leaderboard_router")[0].metadata["encoder"].value
        step_s[f"board_{board}"] = time.perf_counter() - ts
        print(f"leaderboard router {board}: {step_s[f'board_{board}']:.1f} s", flush=True)
    stage_s = time.perf_counter() - t1
    second = 0
    for key in BENCHMARKS.values():
        r = dg.materialize(
            [routing.question_embeddings], partition_key=key, instance=instance, resources=res, run_config=quiet
        )
        second += r.asset_materializations_for_node("question_embeddings")[0].metadata["embedded_now"].value

    store = Store(root / "tb.duckdb")
    out = {}
    print()
    hdr = f"{'benchmark':<14}{'served router':<14}{'router':>8}{'best1':>8}{'oracle':>8}{'random':>8}{'tutorial':>9}  delta [95% CI] (points)"
    print(hdr)
    print("-" * len(hdr))
    for name, key in BENCHMARKS.items():
        m = store.query("SELECT * FROM router_metrics WHERE partition_key = ?", [key]).iloc[0]
        out[name] = {
            "router_acc": float(m.router_acc),
            "best_single_acc": float(m.best_single_acc),
            "oracle_acc": float(m.oracle_acc),
            "random_acc": float(m.random_acc),
            "tutorial_knn_irt_acc": float(m.tutorial_knn_irt_acc),
            "delta_ci95": [float(m.delta_lo), float(m.delta_hi)],
            "served_router": str(m.served_router),
            "best_single_model": str(m.best_single_model),
            "n_test": int(m.n_test),
            "stage_seconds": round(step_s[name], 1),
            **chosen[name],
        }
        print(
            f"{name:<14}{m.served_router:<14}{100 * m.router_acc:8.2f}{100 * m.best_single_acc:8.2f}{100 * m.oracle_acc:8.2f}"
            f"{100 * m.random_acc:8.2f}{100 * m.tutorial_knn_irt_acc:9.2f}  {100 * m.delta:+.2f} [{100 * m.delta_lo:+.2f}, {100 * m.delta_hi:+.2f}]"
        )
        if name == "mmlu":
            r = REFERENCE_MMLU
            print(
                f"{'  reference':<14}{'CV-selected':<14}{100 * r['router_acc']:8.2f}{100 * r['best_single_acc']:8.2f}"
                f"{100 * r['oracle_acc']:8.2f}{100 * r['random_acc']:8.2f}{100 * r['tutorial_knn_irt_acc']:9.2f}"
            )
    cq = store.query("SELECT * FROM router_cost_quality WHERE partition_key = ?", [BENCHMARKS["mbpp"]]).iloc[0]
    fams = sorted(
        store.query("SELECT DISTINCT family FROM router_cv WHERE partition_key = ?", [BENCHMARKS["mbpp"]])["family"]
    )
    out["mbpp"].update(
        {
            "aiq_router": float(cq.aiq_router),
            "aiq_zero": float(cq.aiq_zero),
            "aiq_delta": float(cq.aiq_delta),
            "aiq_delta_lo": float(cq.aiq_delta_lo),
            "aiq_delta_hi": float(cq.aiq_delta_hi),
            "served_objective": str(cq.objective),
            "served_family": str(cq.family),
            "aiq_family": str(cq.curve_family),
            "served_lambda": None if cq["lambda"] is None or np.isnan(cq["lambda"]) else float(cq["lambda"]),
            "served_policy": str(cq.policy),
            "served_policy_value": None
            if cq.policy_value is None or np.isnan(cq.policy_value)
            else float(cq.policy_value),
            "policies_tried": ["single", "lambda", "cascade"],
            "served_acc": float(cq.served_acc),
            "served_acc_ci": [float(cq.served_acc_lo), float(cq.served_acc_hi)],
            "served_cost": float(cq.served_cost),
            "served_cost_ci": [float(cq.served_cost_lo), float(cq.served_cost_hi)],
            "best_single_cost": float(cq.best_single_cost),
            "best_single_acc_cost_table": float(cq.best_single_acc),
            "cost_ratio": float(cq.cost_ratio),
            "families_tried": fams,
        }
    )
    below = 100 * (cq.best_single_acc - cq.served_acc)
    print(f"\nMBPP cost-quality ({int(cq.n_test)} test questions; {int(100 * cq.level)} % bootstrap intervals):")
    print(
        f"  AIQ router {100 * cq.aiq_router:.2f} [{100 * cq.aiq_router_lo:.2f}, {100 * cq.aiq_router_hi:.2f}] vs zero router "
        f"{100 * cq.aiq_zero:.2f} [{100 * cq.aiq_zero_lo:.2f}, {100 * cq.aiq_zero_hi:.2f}]: delta {100 * cq.aiq_delta:+.2f} "
        f"[{100 * cq.aiq_delta_lo:+.2f}, {100 * cq.aiq_delta_hi:+.2f}] (bar: lower end > 0)"
    )
    print(
        f"  served ({cq.objective}: {cq.family}, {cq.policy} {cq.policy_value}): {100 * cq.served_acc:.2f} % "
        f"[{100 * cq.served_acc_lo:.2f}, {100 * cq.served_acc_hi:.2f}] at ${cq.served_cost:.6f} per question vs best single "
        f"{cq.best_single_model} {100 * cq.best_single_acc:.2f} % at ${cq.best_single_cost:.6f}: {below:+.2f} points below "
        f"(bar <= 1) at {100 * cq.cost_ratio:.1f} % of its cost (bar <= 25 %)"
    )
    print(f"  families tried: {fams}; rule: {cq.rule}")
    # What the training questions allow: over every family's out-of-fold P and the lambda grid, the best training-CV
    # accuracy at <= 25 % of the best single model's training cost (the bar's cost), against the accuracy that
    # quality_at_min_cost needs (the best single model's, minus the tolerance). Training questions only.
    from tinybench_assets.core.routing.cost import (
        Policy,
        expected_cost,
        lambda_grid,
        lambda_policies,
        policy_figures,
        training_aiq_gain,
    )
    from tinybench_assets.core.routing.select import DEFAULT_FAMILIES, select_router
    from tinybench_assets.io.routing_reads import cost_matrix, routing_data

    emb_, E_, Y_, models_, test_ = routing_data(store, BENCHMARKS["mbpp"])
    C_ = cost_matrix(store, BENCHMARKS["mbpp"], list(emb_["item"]), models_)
    tr_ = ~test_ & ~np.isnan(C_).any(axis=1)
    sel_ = select_router(E_[tr_], Y_[tr_], families=[*DEFAULT_FAMILIES, "mf"], n_boot=200)  # mf too (opt-in)
    prior_ = model_accuracy(Y_[tr_])
    quarter = 0.25 * float(C_[tr_][:, int(np.argmax(prior_))].mean())

    def best_within(acc, cost):  # the best accuracy at <= a quarter of the best single model's cost
        return float(acc[cost <= quarter].max()) if (cost <= quarter).any() else float("nan")

    ceiling, cascade, cv_aiq = {}, {}, {}
    lams = lambda_policies(lambda_grid(expected_cost(C_[tr_])))
    taus = [Policy("cascade", float(t)) for t in np.linspace(0.0, 1.0, 101)]
    for fam_, P_ in sel_.oof.items():
        ceiling[fam_] = best_within(*policy_figures(lams, P_, Y_[tr_], C_[tr_], prior_))
        cascade[fam_] = best_within(*policy_figures(taus, P_, Y_[tr_], C_[tr_], prior_))  # cheapest confident first
        cv_aiq[fam_] = training_aiq_gain(P_, Y_[tr_], C_[tr_], prior_)  # out-of-fold, training only
    need = float(np.nan_to_num(Y_[tr_][:, int(np.argmax(prior_))]).mean()) - 0.01
    out["mbpp"].update(
        {
            "cv_best_acc_at_quarter_cost": max(ceiling.values()),
            "cv_acc_needed": need,
            "cv_best_acc_at_quarter_cost_by_family": ceiling,
            "cv_cascade_best_acc_at_quarter_cost": max(cascade.values()),
            "cv_cascade_best_acc_at_quarter_cost_by_family": cascade,
            "cv_aiq_delta_by_family": cv_aiq,
        }
    )
    print(
        f"  training CV, best accuracy at <= 25 % of the best single's cost over every family and lambda: "
        f"{100 * max(ceiling.values()):.2f} %, as a cascade: {100 * max(cascade.values()):.2f} % (needed for "
        f"quality_at_min_cost at tolerance 1: {100 * need:.2f} %); "
        + ", ".join(f"{f} {100 * v:.2f}/{100 * cascade[f]:.2f}" for f, v in sorted(ceiling.items()))
    )
    print(
        "  training CV, AIQ gain over the zero router of each family's out-of-fold lambda sweep (points): "
        + ", ".join(f"{f} {100 * v:+.2f}" for f, v in sorted(cv_aiq.items()))
    )
    # RouterDC's mixed traffic: the leaderboard router (no scenario label), per task and macro
    bm = store.query("SELECT * FROM board_router_metrics WHERE partition_key = 'routerdc'")
    per = {
        r.scenario: {
            "router": float(r.router),
            "best_overall": float(r.best_overall),
            "per_task_best": float(r.per_task_best),
            "oracle": float(r.oracle),
            "n": int(r.n),
        }
        for r in bm.itertuples()
        if r.scenario != "macro"
    }
    mac = bm[bm["scenario"] == "macro"].iloc[0]
    out["routerdc_mixed"] = {
        "macro_router": float(mac.router),
        "macro_best_overall": float(mac.best_overall),
        "macro_per_task_best": float(mac.per_task_best),
        "macro_oracle": float(mac.oracle),
        "served_router": str(mac.served_router),
        "best_overall_model": str(mac.best_overall_model),
        "ood_test_share": float(mac.ood_test_share),
        "per_task": per,
        "stage_seconds": round(step_s["board_routerdc"], 1),
        "encoder": chosen["board_routerdc"],
    }
    print(f"\nRouterDC mixed traffic (leaderboard router {mac.served_router}, no scenario label; test questions, %):")
    print(f"  {'task':<16}{'router':>8}{'best1':>8}{'per-task':>10}{'oracle':>8}{'n':>6}")
    for t, v in [
        *per.items(),
        (
            "macro",
            {
                "router": mac.router,
                "best_overall": mac.best_overall,
                "per_task_best": mac.per_task_best,
                "oracle": mac.oracle,
                "n": mac.n,
            },
        ),
    ]:
        print(
            f"  {t:<16}{100 * v['router']:8.2f}{100 * v['best_overall']:8.2f}{100 * v['per_task_best']:10.2f}"
            f"{100 * v['oracle']:8.2f}{int(v['n']):6d}"
        )
    print(
        f"  bars: macro >= per-task best ({100 * mac.per_task_best:.2f}): "
        f"{'met' if mac.router >= mac.per_task_best else 'NOT met'}; >= best overall + 3 ({100 * mac.best_overall + 3:.2f}): "
        f"{'met' if mac.router >= mac.best_overall + 0.03 else 'NOT met'}"
    )
    # RouteLLM's measures on its own data (tinybench's own split of the questions)
    out["routellm"] = {}
    print("\nRouteLLM (Mixtral vs GPT-4; shares of calls to GPT-4, 95 % bootstrap over test questions):")
    for task in ("mmlu", "gsm8k"):
        g = store.query("SELECT * FROM router_gap WHERE partition_key = ?", [f"routellm.{task}"]).iloc[0]
        out["routellm"][task] = {
            k: float(g[k])
            for k in ("apgr", "apgr_lo", "apgr_hi", "cpt50", "cpt50_lo", "cpt50_hi", "cpt80", "weak_acc", "strong_acc")
        }
        out["routellm"][task].update(n_test=int(g.n_test), family=str(g.family))
        bars = ROUTELLM_BARS[task]
        ok = all(g[k] >= v if k == "apgr" else g[k] <= v for k, v in bars.items())
        print(
            f"  {task}: {g.family}: APGR {g.apgr:.3f} [{g.apgr_lo:.3f}, {g.apgr_hi:.3f}], CPT(50 %) {100 * g.cpt50:.1f} % "
            f"[{100 * g.cpt50_lo:.1f}, {100 * g.cpt50_hi:.1f}], CPT(80 %) {100 * g.cpt80:.1f} %; weak {100 * g.weak_acc:.2f} "
            f"strong {100 * g.strong_acc:.2f} on {int(g.n_test)} test questions; bars {bars}: {'met' if ok else 'NOT met'}"
        )
    # the same measures cross-fitted over every question, as the plain-kNN reference was measured
    from crossfit import crossfit_gap

    from tinybench_assets.io.routing_reads import question_groups, routing_data

    print(
        "RouteLLM GSM8K cross-fitted (264 test questions give APGR +-0.09; 5 outer folds over every question, the "
        "product's whole selection per fold; the plain kNN reference, k = 20, on the same folds):"
    )
    for task in ("gsm8k",):  # MMLU's 2,809 test questions measure it closely enough; five more selections take minutes
        t_cf = time.perf_counter()
        emb, E, Y, _models, _test = routing_data(store, f"routellm.{task}")
        cf = crossfit_gap(E, Y, question_groups(store, f"routellm.{task}", emb["item"]), log=lambda m: None)
        out["routellm"][task]["crossfit"] = cf
        p, r = cf["product"], cf["plain_knn"]
        bars = ROUTELLM_BARS[task]
        ok = all(p[k] >= v if k == "apgr" else p[k] <= v for k, v in bars.items())
        print(
            f"  {task}: tinybench APGR {p['apgr']:.3f} [{p['apgr_lo']:.3f}, {p['apgr_hi']:.3f}], CPT(50 %) "
            f"{100 * p['cpt50']:.1f} % [{100 * p['cpt50_lo']:.1f}, {100 * p['cpt50_hi']:.1f}] (families {p['families']}); "
            f"plain kNN APGR {r['apgr']:.3f}, CPT(50 %) {100 * r['cpt50']:.1f} %; {p['n_test']} questions; bars {bars}: "
            f"{'met' if ok else 'NOT met'} ({time.perf_counter() - t_cf:.0f} s)"
        )
    print(
        "\nevery CV-chosen router on test (cv = selection-aware cross-validated accuracy on training questions; "
        "the best single model's cv is in-sample):"
    )
    for name, key in BENCHMARKS.items():
        s = store.query("SELECT * FROM router_summary WHERE partition_key = ? ORDER BY cv_acc DESC", [key])
        out[name]["routers"] = {
            r.router: {"cv_acc": float(r.cv_acc), "test_acc": float(r.test_acc), "config": json.loads(r.config)}
            for r in s.itertuples()
        }
        print(
            f"  {name}: "
            + "; ".join(
                f"{r.router} cv {100 * r.cv_acc:.2f} test {100 * r.test_acc:.2f}{' (served)' if r.served else ''}"
                for r in s.itertuples()
            )
        )

    # Shuffled answers: the same routes scored against test answers permuted across questions. A router's
    # information gain (its accuracy minus what its pick shares would score on random questions) must vanish.
    # Also the tutorial's KNN-IRT at D = 10, k = 20 (the middle of the reference's D = 10-50, k = 20-50).
    print(
        "\ninformation gain on test = accuracy - accuracy of the same pick shares on random questions (points); "
        "shuffled = mean over 20 permutations of the test answers:"
    )
    from tinybench_assets.core.routing.routers import KNNIRTRouter
    from tinybench_assets.core.routing.select import make_router
    from tinybench_assets.defs.router_report import RoutingInputs
    from tinybench_assets.defs.settings import RouterConfig
    from tinybench_assets.io.routing_reads import question_groups

    for name, key in BENCHMARKS.items():
        d_ = RoutingInputs.read(store, key, RouterConfig().surface_features)  # the router's inputs, as the asset's
        emb, E, Y, models, test = d_.emb, d_.E, d_.Y, d_.models, d_.test
        prior = model_accuracy(Y[~test])
        best = int(np.argmax(prior))
        ok = ~np.isnan(Y[test]).any(axis=1)
        Etr, Ytr, Ete, Yte = E[~test], Y[~test], E[test][ok], Y[test][ok]
        gtr = question_groups(store, key, emb["item"])[~test]
        if len(models) >= 3:
            tut10 = KNNIRTRouter(dim=10, k=20).fit(Etr, Ytr)
            out[name]["tutorial_knn_irt_acc_d10"] = evaluate_routing(
                Yte, route(tut10.predict_proba(Ete), prior), best, models, n_boot=10
            )["router_acc"]
        g = np.random.default_rng(0)
        perms = [g.permutation(len(Yte)) for _ in range(20)]
        parts = []
        for fam, spec in out[name]["routers"].items():
            cfg = {k: v for k, v in spec["config"].items() if k not in ("margin", "members")}
            router = None
            if fam == out[name]["served_router"]:  # the saved file holds it, unless a cost objective's family is saved
                saved, saved_meta = load_router(ModelStore().router_path(key))
                router = saved if saved_meta.get("served") == fam else None
            if router is None:
                if fam == "ensemble":
                    continue
                router = make_router(fam, cfg).fit(Etr, Ytr, gtr)
            picks = route(router.predict_proba(Ete), prior, margin=spec["config"].get("margin", 0.0))
            ev = evaluate_routing(Yte, picks, best, models, n_boot=10)
            shuf = [evaluate_routing(Yte[p], picks, best, models, n_boot=10) for p in perms]
            gain, sgain = (
                ev["router_acc"] - ev["no_info_acc"],
                np.mean([e["router_acc"] - e["no_info_acc"] for e in shuf]),
            )
            out[name]["routers"][fam].update(info_gain=float(gain), shuffled_info_gain=float(sgain))
            parts.append(f"{fam} {100 * gain:+.2f} / shuffled {100 * sgain:+.2f}")
        out[name]["shuffled_delta_mean"] = float(
            np.mean(
                [evaluate_routing(Yte[p], np.full(len(Yte), best), best, models, n_boot=10)["delta"] for p in perms]
            )
        )
        print(f"  {name}: " + "; ".join(parts))
        if "tutorial_knn_irt_acc_d10" in out[name]:
            print(
                f"  {name}: tutorial KNN-IRT with the irt_model asset's D: {100 * out[name]['tutorial_knn_irt_acc']:.2f}; "
                f"with D = 10, k = 20: {100 * out[name]['tutorial_knn_irt_acc_d10']:.2f} (reference, MMLU: 62.30)"
            )

    rate = embedded / encode_s if encode_s > 0 else float("nan")
    top = {
        **out,
        "embed_questions_per_s": round(rate, 1),
        "second_run_embedded": int(second),
        "seconds": round(stage_s, 1),
        "upstream_seconds": round(upstream_s, 1),
        "static_encoder_seconds": round(static_s, 1),
        "static_encoder": {
            "built": static_md["built"].value,
            "encoder_id": static_md["encoder_id"].value,
            "distil_seconds": static_md["distil_seconds"].value,
        },
        "embedded_first_run": int(embedded),
        "device": args.device,
        "threads": args.threads,
    }
    print(f"\nembedding: {embedded} texts at {rate:.1f} texts/s (bar >= 40); second run embedded {second} (bar 0)")
    print(
        f"router stage, RouterDC x 3 + MBPP + RouteLLM x 2 + 2 leaderboard routers, cold: {stage_s:.1f} s (bar < 300 s); "
        f"upstream {upstream_s:.1f} s"
    )
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({**top, "meta": run_meta()}, indent=2))
        print(f"wrote {args.json}")
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
