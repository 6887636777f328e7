"""The leaderboard router: one router for mixed traffic, questions of every scenario of a leaderboard arriving with
no scenario label (RouterDC's setting).

It trains on every routable scenario's TRAINING questions (the split ``question_embeddings`` recorded), with each
question's scenario as its task (the task families of core/routing/task.py recognise it from the text: its embedding
with the hashed character n-grams of core/routing/surface.py beside it, ``RouterConfig.surface_features``), and is
chosen by the scenario routers' cross-validation and gate (``RouterConfig``). Its candidates are the models that
answered every routable scenario; the others are named in the metadata. Test questions only report: per scenario the
router beside the best single model overall, the per-scenario best model (which needs the label) and the oracle.
The saved router (``<board>/router.npz``) carries its training questions' embeddings, so ``tinybench route`` flags a
question unlike all of them (core/routing/guard.py) and sends it to the model the router trusts most overall.
"""

import json
import time

import dagster as dg
import numpy as np
import pandas as pd

from tinybench_assets.core.routing.served import ServedRouter
from tinybench_assets.core.routing.surface import SurfaceFeatures
from tinybench_assets.defs.cards import card
from tinybench_assets.defs.partitions import leaderboard_partitions
from tinybench_assets.defs.resources import DUCKDB_POOL, ModelStore, StoreResource, TorchDevice
from tinybench_assets.defs.settings import ROUTER_GROUP as GROUP
from tinybench_assets.defs.settings import RouterConfig
from tinybench_assets.io import plots, router_plots
from tinybench_assets.io.routing_reads import board_routing_data
from tinybench_assets.orchestration.versions import code_version

CODE_VERSION = code_version("router")


def per_scenario(Yte, picks, task_te, prior, Ytr, task_tr, models) -> pd.DataFrame:
    """Test accuracy per scenario: the router, the best single model overall, the per-scenario best (chosen on that
    scenario's training questions) and the oracle, then their macro average."""
    from tinybench_assets.core.routing.routers import model_accuracy

    best = int(np.argmax(prior))
    rows = []
    for t in dict.fromkeys(task_te):
        te, tr = task_te == t, task_tr == t
        own = int(np.argmax(model_accuracy(Ytr[tr])))
        Y = Yte[te]
        rows.append(
            {
                "scenario": t,
                "router": float(Y[np.arange(len(Y)), picks[te]].mean()),
                "best_overall": float(Y[:, best].mean()),
                "per_task_best": float(Y[:, own].mean()),
                "per_task_best_model": models[own],
                "oracle": float(Y.max(axis=1).mean()),
                "n": int(te.sum()),
            }
        )
    df = pd.DataFrame(rows)
    macro = {
        "scenario": "macro",
        **{c: float(df[c].mean()) for c in ("router", "best_overall", "per_task_best", "oracle")},
        "per_task_best_model": "",
        "n": int(df["n"].sum()),
    }
    return pd.concat([df, pd.DataFrame([macro])], ignore_index=True)


ALL_EMBEDDINGS = dg.AssetDep("question_embeddings", partition_mapping=dg.AllPartitionMapping())
ALL_ITEM_PARAMS = dg.AssetDep("irt_model", partition_mapping=dg.AllPartitionMapping())


@dg.asset(
    group_name=GROUP,
    code_version=CODE_VERSION,
    pool=DUCKDB_POOL,
    partitions_def=leaderboard_partitions,
    deps=[ALL_EMBEDDINGS, ALL_ITEM_PARAMS],
    **card(
        "Leaderboard router (mixed traffic)",
        "One router for questions of every scenario of the leaderboard, "
        "with no scenario label: trained on every scenario's training questions, the scenario recognised "
        "from the question (task families), chosen by cross-validation and the gate. Test figures per "
        "scenario beside the best single model overall, the per-scenario best model and the oracle. "
        "`tinybench route --leaderboard L` without --scenario uses it; a question unlike every training "
        "question is flagged out of distribution.",
        kinds=("python", "scikit-learn", "duckdb"),
    ),
)
def leaderboard_router(
    context: dg.AssetExecutionContext,
    config: RouterConfig,
    store: StoreResource,
    torch_device: TorchDevice,
    model_store: ModelStore,
) -> dg.MaterializeResult:
    from tinybench_assets.core.routing import route, select_router
    from tinybench_assets.core.routing.guard import GuardedRouter
    from tinybench_assets.core.routing.routers import model_accuracy

    board, db, t0 = context.partition_key, store.get(), time.perf_counter()
    E, Y, models, task, test, encoder, left_out, scenarios, texts = board_routing_data(db, board)
    if len(scenarios) < 2:
        return dg.MaterializeResult(
            metadata={
                "skipped": f"{len(scenarios)} routable scenario(s) {scenarios}: a "
                "leaderboard router needs two or more (each scenario has its own router)"
            }
        )
    if not models:
        return dg.MaterializeResult(
            metadata={
                "skipped": "no model answered every routable scenario",
                "models_left_out": dg.MetadataValue.json(left_out),
            }
        )
    device = torch_device.resolve()
    surface = SurfaceFeatures(config.surface_features) if config.surface_features > 0 else None
    if surface is not None:
        E = surface.join(E, texts)
    Etr, Ytr, gtr = E[~test], Y[~test], task[~test]
    complete = test & ~np.isnan(Y).any(axis=1)
    prior = model_accuracy(Ytr)
    sel = select_router(
        Etr,
        Ytr,
        groups=gtr,
        families=config.families,
        n_folds=config.n_folds,
        seed=config.seed,
        device=device,
        margins=config.margins,
        gate_level=config.gate_level,
        n_boot=config.n_boot,
        log=context.log.info,
    )
    router = sel.make(sel.served, device=device, seed=config.seed).fit(Etr, Ytr, gtr)
    guarded = GuardedRouter(router).fit(Etr, Ytr)
    picks = route(router.predict_proba(E[complete]), prior, margin=sel.margin)
    figs = per_scenario(Y[complete], picks, task[complete], prior, Ytr, gtr, models)
    _, ood = guarded.novelty(E[complete])
    table = figs.assign(
        served_router=sel.served,
        router_config=json.dumps(sel.best[sel.served][0]),
        best_overall_model=models[int(np.argmax(prior))],
        n_train=int(len(Ytr)),
        ood_test_share=float(ood.mean()),
        ood_threshold=float(guarded.threshold_),
        seconds=time.perf_counter() - t0,
        updated_at=pd.Timestamp.now(),
    )
    cv = sel.table.assign(config=sel.table["config"].map(json.dumps))[
        ["family", "config", "cv_acc", "chosen_in_family", "served"]
    ]
    db.replace_partition({"board_router_metrics": table, "board_router_cv": cv}, board)
    path = model_store.save_board_router(
        board,
        ServedRouter(
            guarded,
            {
                "partition": board,
                "scope": "leaderboard",
                "scenarios": scenarios,
                "models": models,
                "prior": [float(x) for x in prior],
                "served": sel.served,
                "margin": sel.margin,
                "config": sel.best[sel.served][0],
                "cv_acc": sel.best[sel.served][1],
                "encoder": encoder,
                "surface": surface.params() if surface is not None else None,
                "created": pd.Timestamp.now().isoformat(),
            },
        ),
    )
    macro = figs.iloc[-1]
    png = router_plots.router_bars(
        f"{board}: mixed traffic, {int(macro['n'])} test questions",
        {
            f"router: {sel.served}": macro["router"],
            "best single": macro["best_overall"],
            "per-scenario best (needs the label)": macro["per_task_best"],
            "oracle": macro["oracle"],
        },
        {m: float(np.mean(picks == i)) for i, m in enumerate(models)},
    )
    return dg.MaterializeResult(
        metadata={
            "served_router": f"{sel.served} {sel.best[sel.served][0]}",
            "macro_router": float(macro["router"]),
            "macro_best_overall": float(macro["best_overall"]),
            "macro_per_task_best": float(macro["per_task_best"]),
            "macro_oracle": float(macro["oracle"]),
            "scenarios": dg.MetadataValue.json(scenarios),
            "per_scenario": dg.MetadataValue.md(figs.round(4).to_markdown(index=False)),
            "cv_accuracy": dg.MetadataValue.json({f: round(v[1], 4) for f, v in sel.best.items()}),
            "families_sat_out": dg.MetadataValue.json(sel.sat_out),
            "models_left_out": dg.MetadataValue.json(left_out),
            "ood_threshold": float(guarded.threshold_),
            "ood_test_share": float(ood.mean()),
            "router_vs_baselines": dg.MetadataValue.md(plots.markdown_image(png, "leaderboard router vs baselines")),
            "router_file": dg.MetadataValue.path(str(path)),
            "train_questions": int(len(Ytr)),
            "test_questions": int(complete.sum()),
            "seconds": round(time.perf_counter() - t0, 1),
        }
    )


leaderboard_assets = [leaderboard_router]
