"""The router asset: routers chosen by cross-validation on training questions, scored on test questions
beside the best single model, the oracle, a random model and the tutorial's p-IRT argmax."""
import json
import time

import numpy as np
import pandas as pd

import dagster as dg

from tinybench_assets.defs.assets.responses import binarized_responses
from tinybench_assets.defs.assets.routing import (
    GROUP, RouterConfig, load_embeddings, partition_rows, pirt_predictions, question_embeddings,
)
from tinybench_assets.defs.cards import card
from tinybench_assets.defs.versions import code_version
from tinybench_assets.defs.partitions import scenario_partitions
from tinybench_assets.defs.resources import DUCKDB_POOL, ModelStore, StoreResource, TorchDevice
from tinybench_assets.io import plots, router_plots
from tinybench_assets.io.store import Store, load_matrix

CODE_VERSION = code_version("router")


def routing_data(db: Store, key: str):
    """Embeddings and 0/1 correctness (questions x models) of the partition's train and test questions."""
    emb, E = load_embeddings(db, key)
    matrix = load_matrix(db, key, binarized=True)
    col = {it: j for j, it in enumerate(matrix.items)}
    keep = emb["item"].isin(col).to_numpy()
    emb, E = emb[keep].reset_index(drop=True), E[keep]
    Y = matrix.scores[:, [col[i] for i in emb["item"]]].T  # (questions, models)
    test = (emb["split"] == "test").to_numpy()
    return emb, E, Y, list(matrix.models), test


def tutorial_accuracy(db: Store, key: str, items, models, Y, prior) -> float:
    """Test accuracy of the tutorial router: argmax of the stored p-IRT predictions (tie-break by training accuracy)."""
    from tinybench_assets.core.routing import route

    p = partition_rows(db, "pirt_predictions", key, "model, item, p")
    if p.empty:
        return float("nan")
    P = p.pivot(index="item", columns="model", values="p").reindex(index=items, columns=models).to_numpy()
    ok = ~np.isnan(P).any(axis=1)
    picks = route(P[ok], prior)
    return float(Y[ok][np.arange(ok.sum()), picks].mean())


def cost_matrix(db: Store, key: str, items, models) -> np.ndarray | None:
    """Per-(question, model) costs when the drop carried them for every test question, else None."""
    costs = db.costs(key)
    if costs.empty:
        return None
    C = costs.pivot_table(index="item", columns="model", values="cost", aggfunc="last").reindex(index=items, columns=models)
    return None if C.isna().any().any() else C.to_numpy(dtype=float)


@dg.asset(group_name=GROUP, code_version=CODE_VERSION, pool=DUCKDB_POOL, partitions_def=scenario_partitions,
          deps=[pirt_predictions, question_embeddings, binarized_responses],
          **card("Router accuracy", "Routers (best single, KNN vote, shrunk KNN, KNN-IRT, logistic, ensemble) chosen by "
                 "cross-validation on TRAINING questions; the served one routes every test question. Router accuracy vs "
                 "best single model, oracle, random model and the tutorial's p-IRT argmax, pick shares, paired bootstrap "
                 "95% interval, cost curve when costs exist. Plot: accuracy beside the baselines with pick shares. Check: "
                 "the served router matches the best single model on training CV.",
                 kinds=("python", "scikit-learn", "duckdb")))
def router_accuracy(context: dg.AssetExecutionContext, config: RouterConfig, store: StoreResource,
                    torch_device: TorchDevice, model_store: ModelStore) -> dg.MaterializeResult:
    from tinybench_assets.core.routing import accuracy_cost_curve, evaluate_routing, route, select_router
    from tinybench_assets.core.routing.routers import model_accuracy

    key, db, t0 = context.partition_key, store.get(), time.perf_counter()
    if partition_rows(db, "question_embeddings", key, "item").empty:
        return dg.MaterializeResult(metadata={"skipped": "no questions embedded (see question_embeddings)"})
    emb, E, Y, models, test = routing_data(db, key)
    device = torch_device.resolve()
    Etr, Ytr = E[~test], Y[~test]
    complete = ~np.isnan(Y[test]).any(axis=1)
    Ete, Yte, test_items = E[test][complete], Y[test][complete], emb["item"][test].to_numpy()[complete]
    if len(Yte) == 0:
        raise dg.Failure(f"{key}: no test question has an answer from every model; nothing to score routing on")
    prior = model_accuracy(Ytr)
    best = int(np.argmax(prior))
    sel = select_router(Etr, Ytr, families=config.families, n_folds=config.n_folds, seed=config.seed, device=device,
                        margins=config.margins, gate_level=config.gate_level, n_boot=config.n_boot, log=context.log.info)
    rows, served_eval, served_router = [], None, None
    for fam, (cfg, cv_acc) in sel.best.items():
        if fam != sel.served and not config.evaluate_all:
            continue
        router = sel.make(fam, device=device, seed=config.seed).fit(Etr, Ytr)
        margin = float(cfg.get("margin", 0.0))
        picks = route(router.predict_proba(Ete), prior, margin=margin)
        ev = evaluate_routing(Yte, picks, best, models, n_boot=config.n_boot, seed=config.seed)
        rows.append({"router": fam, "config": json.dumps(cfg), "cv_acc": cv_acc, "gate_lower": sel.gate.get(fam),
                     "test_acc": ev["router_acc"], "delta": ev["delta"], "delta_lo": ev["delta_ci95"][0],
                     "delta_hi": ev["delta_ci95"][1], "served": fam == sel.served})
        if fam == sel.served:
            served_eval, served_router, served_picks, served_P = ev, router, picks, router.predict_proba(Ete)
    tut = tutorial_accuracy(db, key, list(test_items), models, Yte, prior)
    summary = pd.DataFrame(rows)
    ev = served_eval
    metrics = pd.DataFrame([{
        "served_router": sel.served, "router_config": json.dumps(sel.best[sel.served][0]), "router_acc": ev["router_acc"],
        "best_single_model": ev["best_single_model"], "best_single_acc": ev["best_single_acc"], "oracle_acc": ev["oracle_acc"],
        "random_acc": ev["random_acc"], "tutorial_knn_irt_acc": tut, "delta": ev["delta"], "delta_lo": ev["delta_ci95"][0],
        "delta_hi": ev["delta_ci95"][1], "n_train": int(len(Ytr)), "n_test": int(len(Yte)),
        "n_test_incomplete": int((~complete).sum()), "cv_folds": config.n_folds, "gate_level": config.gate_level,
        "seconds": time.perf_counter() - t0, "updated_at": pd.Timestamp.now()}])
    picks_df = pd.DataFrame({"model": models, "pick_share": [ev["pick_share"][m] for m in models],
                             "test_acc": [ev["model_acc"][m] for m in models], "train_acc": prior})
    routes = pd.DataFrame({"item": test_items, "model": np.asarray(models, dtype=object)[served_picks],
                           "correct": Yte[np.arange(len(Yte)), served_picks].astype(np.int8)})
    cv = sel.table.assign(config=sel.table["config"].map(json.dumps))[["family", "config", "cv_acc", "chosen_in_family", "served"]]
    tables = {"router_metrics": metrics, "router_summary": summary, "router_picks": picks_df, "router_routes": routes, "router_cv": cv}
    meta = {}
    C = cost_matrix(db, key, list(test_items), models)
    if C is not None:
        cc = accuracy_cost_curve(served_P, Yte, C, prior, models=models)
        tables["router_cost_curve"] = cc["curve"]
        meta["cost_auc"] = cc["auc"]
        meta["cost_curve"] = dg.MetadataValue.md(plots.markdown_image(
            router_plots.cost_curve(f"{key}: accuracy vs cost", cc["curve"], cc["models"]), "accuracy vs cost"))
    db.replace_partition(tables, key)
    path = model_store.save_router(key, served_router, {
        "partition": key, "models": models, "prior": [float(x) for x in prior], "margin": sel.margin,
        "served": sel.served, "config": sel.best[sel.served][0], "encoder": str(emb["encoder"].iloc[0]),
        "cv_acc": sel.best[sel.served][1], "created": pd.Timestamp.now().isoformat()})
    figs = {f"router: {sel.served}": ev["router_acc"], "best single": ev["best_single_acc"], "oracle": ev["oracle_acc"],
            "random": ev["random_acc"], "tutorial p-IRT": tut}
    figs.update({f"{r['router']} (not served)": r["test_acc"] for r in rows if not r["served"]})
    png = router_plots.router_bars(f"{key}: {len(Yte)} test questions", figs, ev["pick_share"])
    return dg.MaterializeResult(metadata={
        "served_router": f"{sel.served} {sel.best[sel.served][0]}", "router_acc": ev["router_acc"],
        "best_single_acc": ev["best_single_acc"], "best_single_model": ev["best_single_model"], "oracle_acc": ev["oracle_acc"],
        "random_acc": ev["random_acc"], "tutorial_knn_irt_acc": tut,
        "delta_ci95": f"{100 * ev['delta']:+.2f} [{100 * ev['delta_ci95'][0]:+.2f}, {100 * ev['delta_ci95'][1]:+.2f}] points",
        "cv_accuracy": dg.MetadataValue.json({f: round(v[1], 4) for f, v in sel.best.items()}),
        "pick_share": dg.MetadataValue.json({m: round(v, 4) for m, v in ev["pick_share"].items()}),
        "routers": dg.MetadataValue.md(summary.drop(columns=["config"]).round(4).to_markdown(index=False)),
        "router_vs_baselines": dg.MetadataValue.md(plots.markdown_image(png, "router vs baselines")),
        "router_file": dg.MetadataValue.path(str(path)), "train_questions": len(Ytr), "test_questions": len(Yte),
        "seconds": round(time.perf_counter() - t0, 1), **meta,
    })
