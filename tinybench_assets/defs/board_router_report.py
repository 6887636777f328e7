"""What the leaderboard router asset computes and reports, so that ``leaderboard_router`` only reads, calls, writes
and returns metadata::

    skipped_metadata(...)                  why a leaderboard has no mixed-traffic router (None: it has one)
    fit_board_router(E, Y, task, ...)      the router chosen by cross-validation on the training questions (the
                                           scenario as task), fitted with its out-of-distribution guard, and its
                                           picks on the complete test questions
    per_scenario(...)                      the test figures per scenario beside the baselines, then their macro mean
    board_tables / board_router_file / board_metadata
                                           board_router_metrics and board_router_cv, the ServedRouter
                                           ``tinybench route --leaderboard`` loads, the UI's metadata

Every choice is made on training questions; test questions only report.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import dagster as dg
import numpy as np
import pandas as pd

from tinybench_assets.core.routing import route, select_router
from tinybench_assets.core.routing.guard import GuardedRouter
from tinybench_assets.core.routing.routers import model_accuracy
from tinybench_assets.core.routing.served import ServedRouter
from tinybench_assets.core.routing.surface import SurfaceFeatures
from tinybench_assets.io import plots, router_plots


def per_scenario(Yte, picks, task_te, prior, Ytr, task_tr, models) -> pd.DataFrame:
    """Test accuracy per scenario: the router, the best single model overall, the per-scenario best (chosen on that
    scenario's training questions) and the oracle, then their macro average."""
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


def skipped_metadata(scenarios: list, models: list, left_out) -> dict | None:
    """The metadata of a leaderboard without a mixed-traffic router (fewer than two routable scenarios, or no model
    that answered all of them); None when it has one."""
    if len(scenarios) < 2:
        return {
            "skipped": f"{len(scenarios)} routable scenario(s) {scenarios}: a "
            "leaderboard router needs two or more (each scenario has its own router)"
        }
    if not models:
        return {
            "skipped": "no model answered every routable scenario",
            "models_left_out": dg.MetadataValue.json(left_out),
        }
    return None


@dataclass
class BoardRouter:
    """The leaderboard router: the selection (``sel``), the served router with its out-of-distribution guard
    (``guarded``), the surface features joined to the embeddings (None without), the models' training accuracies
    (``prior``), and on the complete test questions its picks, the per-scenario figures (``figs``) and the
    out-of-distribution flags (``ood``)."""

    sel: object
    guarded: object
    surface: SurfaceFeatures | None
    models: list
    prior: np.ndarray
    picks: np.ndarray
    figs: pd.DataFrame
    ood: np.ndarray
    n_train: int
    n_test: int


def fit_board_router(E, Y, task, test, texts, models: list, config, device: str, log) -> BoardRouter:
    """The router chosen by ``select_router`` on the training questions (``task``: each question's scenario; surface
    features joined where ``config.surface_features`` > 0), fitted on all of them with its guard, and scored on the
    test questions every model answered."""
    surface = SurfaceFeatures(config.surface_features) if config.surface_features > 0 else None
    if surface is not None:
        E = surface.join(E, texts)
    Etr, Ytr, gtr = E[~test], Y[~test], task[~test]
    complete = test & ~np.isnan(Y).any(axis=1)
    prior = model_accuracy(Ytr)
    sel = select_router(Etr, Ytr, groups=gtr, device=device, **config.selection(), log=log)
    router = sel.make(sel.served, device=device, seed=config.seed).fit(Etr, Ytr, gtr)
    guarded = GuardedRouter(router).fit(Etr, Ytr)
    picks = route(router.predict_proba(E[complete]), prior, margin=sel.margin)
    figs = per_scenario(Y[complete], picks, task[complete], prior, Ytr, gtr, models)
    _, ood = guarded.novelty(E[complete])
    return BoardRouter(sel, guarded, surface, models, prior, picks, figs, ood, int(len(Ytr)), int(complete.sum()))


def board_tables(fit: BoardRouter, t0: float) -> dict:
    """board_router_metrics (the per-scenario figures with the served router) and board_router_cv."""
    sel = fit.sel
    table = fit.figs.assign(
        served_router=sel.served,
        router_config=json.dumps(sel.best[sel.served][0]),
        best_overall_model=fit.models[int(np.argmax(fit.prior))],
        n_train=fit.n_train,
        ood_test_share=float(fit.ood.mean()),
        ood_threshold=float(fit.guarded.threshold_),
        seconds=time.perf_counter() - t0,
        updated_at=pd.Timestamp.now(),
    )
    cv = sel.table.assign(config=sel.table["config"].map(json.dumps))[
        ["family", "config", "cv_acc", "chosen_in_family", "served"]
    ]
    return {"board_router_metrics": table, "board_router_cv": cv}


def board_router_file(board: str, fit: BoardRouter, scenarios: list, encoder: str) -> ServedRouter:
    """The ServedRouter of the leaderboard (scope "leaderboard"): the guarded router with its serving description."""
    sel = fit.sel
    return ServedRouter(
        fit.guarded,
        {
            "partition": board,
            "scope": "leaderboard",
            "scenarios": scenarios,
            "models": fit.models,
            "prior": [float(x) for x in fit.prior],
            "served": sel.served,
            "margin": sel.margin,
            "config": sel.best[sel.served][0],
            "cv_acc": sel.best[sel.served][1],
            "encoder": encoder,
            "surface": fit.surface.params() if fit.surface is not None else None,
            "created": pd.Timestamp.now().isoformat(),
        },
    )


def board_metadata(board: str, fit: BoardRouter, scenarios: list, left_out, path, t0: float) -> dict:
    """The UI's view: the macro figures beside the baselines (with the bar chart), the per-scenario table, CV
    accuracies, the families that sat out, the models left out, the guard and the router file."""
    sel, figs = fit.sel, fit.figs
    macro = figs.iloc[-1]
    png = router_plots.router_bars(
        f"{board}: mixed traffic, {int(macro['n'])} test questions",
        {
            f"router: {sel.served}": macro["router"],
            "best single": macro["best_overall"],
            "per-scenario best (needs the label)": macro["per_task_best"],
            "oracle": macro["oracle"],
        },
        {m: float(np.mean(fit.picks == i)) for i, m in enumerate(fit.models)},
    )
    return {
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
        "ood_threshold": float(fit.guarded.threshold_),
        "ood_test_share": float(fit.ood.mean()),
        "router_vs_baselines": dg.MetadataValue.md(plots.markdown_image(png, "leaderboard router vs baselines")),
        "router_file": dg.MetadataValue.path(str(path)),
        "train_questions": fit.n_train,
        "test_questions": fit.n_test,
        "seconds": round(time.perf_counter() - t0, 1),
    }
