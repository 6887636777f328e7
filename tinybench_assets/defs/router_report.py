"""What the router asset computes and reports for one scenario partition, so that ``router_accuracy`` only loads,
calls, writes and returns metadata::

    RoutingInputs.read(db, key)     the embedded questions, the 0/1 matrix, the train / test split, groups, the prior
    score_routers(inputs, ...)      every family's CV-best router fitted on all training questions, scored on the test
                                    questions beside the best single model, the oracle and a random model
    accuracy_tables / gap_report_part / cost_part
                                    the router_* tables and the UI's metadata (RouteLLM's measures for two models;
                                    the cost objective, its curve and AIQ where costs landed: cost_part, from
                                    defs/router_cost_report.py)
    served_router_file              the ServedRouter ``tinybench route`` loads (the cost objective's family where
                                    one is served)

Every choice is made on training questions; test questions only report.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from functools import cached_property

import dagster as dg
import numpy as np
import pandas as pd

from tinybench_assets.core.routing import evaluate_routing, route
from tinybench_assets.core.routing.calibrated import CalibratedRouter
from tinybench_assets.core.routing.families import base_family, same_config, simplicity
from tinybench_assets.core.routing.gap import gap_report
from tinybench_assets.core.routing.routers import EnsembleRouter, model_accuracy
from tinybench_assets.core.routing.served import ServedRouter
from tinybench_assets.core.routing.surface import SurfaceFeatures
from tinybench_assets.defs.router_cost_report import CostPart, cost_file_meta, cost_part
from tinybench_assets.io import plots, router_plots
from tinybench_assets.io.routing_reads import partition_rows, question_groups, question_texts, routing_data
from tinybench_assets.io.static_encoder import PREFIX as STATIC_PREFIX
from tinybench_assets.io.store import Store

__all__ = [
    "RoutingInputs",
    "Scores",
    "CostPart",
    "accuracy_metadata",
    "accuracy_tables",
    "cost_part",
    "gap_metadata",
    "gap_report_part",
    "gap_table",
    "score_routers",
    "served_router_file",
    "tutorial_accuracy",
]


def gap_table(rep: dict) -> pd.DataFrame:
    """The one-row router_gap table (RouteLLM's measures; shares as fractions)."""
    cols = [
        "family",
        "apgr",
        "apgr_lo",
        "apgr_hi",
        "cpt50",
        "cpt50_lo",
        "cpt50_hi",
        "cpt80",
        "cpt80_lo",
        "cpt80_hi",
        "weak_acc",
        "strong_acc",
        "n_test",
        "level",
    ]
    return pd.DataFrame(
        [{**{c: rep[c] for c in cols}, "strong_model": rep["strong_model"], "weak_model": rep["weak_model"]}]
    )


def gap_metadata(rep: dict, key: str) -> dict:
    """The UI's view of RouteLLM's measures: a line each and the gap-recovered curve."""

    def ci(name, pct=True):
        f = 100 if pct else 1
        return f"{f * rep[name]:.{1 if pct else 3}f} [{f * rep[name + '_lo']:.{1 if pct else 3}f}, {f * rep[name + '_hi']:.{1 if pct else 3}f}]"

    png = router_plots.gap_curve(f"{key}: {rep['family']} on {rep['n_test']} test questions", rep)
    return {
        "routellm_apgr": f"{ci('apgr', False)} (random router 0.500; {int(100 * rep['level'])} % bootstrap)",
        "routellm_cpt50": f"{ci('cpt50')} % of calls to {rep['strong_model']} (random router 50 %)",
        "routellm_cpt80": f"{ci('cpt80')} % (random router 80 %)",
        "routellm_family": f"{rep['family']} (best training-CV APGR: "
        + ", ".join(f"{f} {v:.3f}" for f, v in sorted(rep["cv_apgr"].items()))
        + ")",
        "gap_recovered": dg.MetadataValue.md(plots.markdown_image(png, "performance gap recovered")),
    }


def tutorial_accuracy(db: Store, key: str, items, models, Y, prior) -> float:
    """Test accuracy of the tutorial router: argmax of the stored p-IRT predictions (tie-break by training accuracy)."""
    p = partition_rows(db, "pirt_predictions", key, "model, item, p")
    if p.empty:
        return float("nan")
    P = p.pivot(index="item", columns="model", values="p").reindex(index=items, columns=models).to_numpy()
    ok = ~np.isnan(P).any(axis=1)
    picks = route(P[ok], prior)
    return float(Y[ok][np.arange(ok.sum()), picks].mean())


@dataclass
class RoutingInputs:
    """One partition's routing data: questions ``emb`` (item, encoder, ...), embeddings E, answers Y (questions x
    models), ``test`` (bool per question), the complete test questions' rows (``Ete``, ``Yte``, ``test_items``),
    the question groups of the training questions and each model's training accuracy (``prior``, ``best``)."""

    key: str
    emb: pd.DataFrame
    E: np.ndarray
    Y: np.ndarray
    models: list
    test: np.ndarray
    complete: np.ndarray
    groups: np.ndarray
    prior: np.ndarray
    best: int
    surface: SurfaceFeatures | None = None  # joined to E (questions embedded with the static encoder)

    @classmethod
    def read(cls, db: Store, key: str, surface_features: int = 0) -> RoutingInputs:
        """``surface_features`` > 0: where the questions were embedded with the static encoder (a bag of token
        vectors), the texts' hashed character n-grams (core/routing/surface.py) are joined to the embeddings: RouteLLM
        MMLU training-CV APGR 0.668 -> 0.685, test 0.696 -> 0.712, cross-fitted 0.692 (MiniLM 0.690)."""
        emb, E, Y, models, test = routing_data(db, key)
        surface = None
        if surface_features > 0 and len(emb) and str(emb["encoder"].iloc[0]).startswith(STATIC_PREFIX):
            surface = SurfaceFeatures(surface_features)
            E = surface.join(E, question_texts(db, key, emb["item"]))
        complete = ~np.isnan(Y[test]).any(axis=1)
        if not complete.any():
            raise dg.Failure(f"{key}: no test question has an answer from every model; nothing to score routing on")
        prior = model_accuracy(Y[~test])
        return cls(
            key,
            emb,
            E,
            Y,
            models,
            test,
            complete,
            question_groups(db, key, emb["item"]),
            prior,
            int(np.argmax(prior)),
            surface,
        )

    @cached_property
    def train(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(E, Y, groups) of the training questions (sliced once)."""
        return self.E[~self.test], self.Y[~self.test], self.groups[~self.test]

    @cached_property
    def scored(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(E, Y, items) of the test questions every model answered (sliced once)."""
        return (
            self.E[self.test][self.complete],
            self.Y[self.test][self.complete],
            self.emb["item"][self.test].to_numpy()[self.complete],
        )


@dataclass
class Scores:
    """What :func:`score_routers` gives: a row per family scored, each family's test P and fitted router, and the
    served family's evaluation, router and picks."""

    rows: list
    test_P: dict
    fitted: dict
    served_eval: dict
    served_router: object
    served_picks: np.ndarray


def score_routers(d: RoutingInputs, sel, config, device: str) -> Scores:
    """Every family's CV-best router (the served one only unless ``config.evaluate_all``) fitted on all training
    questions (an ensemble or a calibrated router from members fitted here, not again) and scored on the test
    questions with a paired bootstrap against the best single model."""
    (Etr, Ytr, gtr), (Ete, Yte, _) = d.train, d.scored
    rows, test_P, fitted, served = [], {}, {}, None
    for fam, (cfg, cv_acc) in sel.best.items():
        if fam != sel.served and not config.evaluate_all:
            continue
        members = sel.best[fam][0].get("members", []) if fam == "ensemble" else []
        base = base_family(fam)
        if members and all(m in fitted for m in members):
            router = EnsembleRouter.of_fitted([fitted[m] for m in members], Ytr)
        elif fam in sel.calibrators and base in fitted and same_config(sel.best[base][0], cfg):
            router = CalibratedRouter.of_fitted(fitted[base], sel.calibrators[fam], Ytr)
        else:
            router = sel.make(fam, device=device, seed=config.seed).fit(Etr, Ytr, gtr)
        test_P[fam], fitted[fam] = router.predict_proba(Ete), router
        picks = route(test_P[fam], d.prior, margin=float(cfg.get("margin", 0.0)))
        ev = evaluate_routing(Yte, picks, d.best, d.models, n_boot=config.n_boot, seed=config.seed)
        rows.append(
            {
                "router": fam,
                "config": json.dumps(cfg),
                "cv_acc": cv_acc,
                "gate_lower": sel.gate.get(fam),
                "test_acc": ev["router_acc"],
                "delta": ev["delta"],
                "delta_lo": ev["delta_ci95"][0],
                "delta_hi": ev["delta_ci95"][1],
                "served": fam == sel.served,
            }
        )
        if fam == sel.served:
            served = (ev, router, picks)
    return Scores(rows, test_P, fitted, *served)


def accuracy_tables(d: RoutingInputs, sel, sc: Scores, tut: float, config, t0: float) -> dict:
    """router_metrics, router_summary, router_picks, router_routes and router_cv."""
    (_, Ytr, _), (_, Yte, test_items) = d.train, d.scored
    ev, models = sc.served_eval, d.models
    metrics = pd.DataFrame(
        [
            {
                "served_router": sel.served,
                "router_config": json.dumps(sel.best[sel.served][0]),
                "router_acc": ev["router_acc"],
                "best_single_model": ev["best_single_model"],
                "best_single_acc": ev["best_single_acc"],
                "oracle_acc": ev["oracle_acc"],
                "random_acc": ev["random_acc"],
                "tutorial_knn_irt_acc": tut,
                "delta": ev["delta"],
                "delta_lo": ev["delta_ci95"][0],
                "delta_hi": ev["delta_ci95"][1],
                "n_train": int(len(Ytr)),
                "n_test": int(len(Yte)),
                "n_test_incomplete": int((~d.complete).sum()),
                "cv_folds": config.n_folds,
                "gate_level": config.gate_level,
                "seconds": time.perf_counter() - t0,
                "updated_at": pd.Timestamp.now(),
            }
        ]
    )
    picks_df = pd.DataFrame(
        {
            "model": models,
            "pick_share": [ev["pick_share"][m] for m in models],
            "test_acc": [ev["model_acc"][m] for m in models],
            "train_acc": d.prior,
        }
    )
    routes = pd.DataFrame(
        {
            "item": test_items,
            "model": np.asarray(models, dtype=object)[sc.served_picks],
            "correct": Yte[np.arange(len(Yte)), sc.served_picks].astype(np.int8),
        }
    )
    cv = sel.table.assign(config=sel.table["config"].map(json.dumps))[
        ["family", "config", "cv_acc", "chosen_in_family", "served"]
    ]
    return {
        "router_metrics": metrics,
        "router_summary": pd.DataFrame(sc.rows),
        "router_picks": picks_df,
        "router_routes": routes,
        "router_cv": cv,
    }


def gap_report_part(d: RoutingInputs, sel, sc: Scores, config) -> tuple[dict, dict]:
    """RouteLLM's measures where two models route (the share of calls to the stronger one): (tables, metadata)."""
    if len(d.models) != 2:
        return {}, {}

    (_, Ytr, _), (_, Yte, _) = d.train, d.scored
    gap = gap_report(
        sel.oof, sc.test_P, Ytr, Yte, d.prior, simplicity, n_boot=min(config.n_boot, 1000), seed=config.seed
    )
    gap.update(strong_model=d.models[gap["strong"]], weak_model=d.models[gap["weak"]])
    return {"router_gap": gap_table(gap)}, gap_metadata(gap, d.key)


def served_router_file(d: RoutingInputs, sel, sc: Scores, cost: CostPart, config):
    """The ServedRouter of the partition: the served family, or the cost objective's family where one is served."""
    saved, file_meta = (
        sc.served_router,
        {
            "served": sel.served,
            "margin": sel.margin,
            "config": sel.best[sel.served][0],
            "cv_acc": sel.best[sel.served][1],
        },
    )
    if cost.Ctr is not None and cost.objective != "accuracy":
        fam = cost.choice[0]
        saved, file_meta = (
            sc.fitted[fam],
            {
                "served": fam,
                "margin": float(sel.best[fam][0].get("margin", 0.0)),
                "config": sel.best[fam][0],
                "cv_acc": sel.best[fam][1],
                "cost": cost_file_meta(
                    cost.objective, config, cost.choice, sel.oof[fam], d.train[1], cost.Ctr, d.prior
                ),
            },
        )
    return ServedRouter(
        saved,
        {
            "partition": d.key,
            "models": d.models,
            "prior": [float(x) for x in d.prior],
            **file_meta,
            "encoder": str(d.emb["encoder"].iloc[0]),
            "surface": d.surface.params() if d.surface is not None else None,  # tinybench route joins them too
            "created": pd.Timestamp.now().isoformat(),
        },
    )


def accuracy_metadata(d: RoutingInputs, sel, sc: Scores, tut: float, summary: pd.DataFrame) -> dict:
    """The served router beside the baselines: figures, CV accuracies, pick shares, the routers table and the bar
    chart."""
    ev, Yte = sc.served_eval, d.scored[1]
    figs = {
        f"router: {sel.served}": ev["router_acc"],
        "best single": ev["best_single_acc"],
        "oracle": ev["oracle_acc"],
        "random": ev["random_acc"],
        "tutorial p-IRT": tut,
    }
    figs.update({f"{r['router']} (not served)": r["test_acc"] for r in sc.rows if not r["served"]})
    png = router_plots.router_bars(f"{d.key}: {len(Yte)} test questions", figs, ev["pick_share"])
    return {
        "served_router": f"{sel.served} {sel.best[sel.served][0]}",
        "router_acc": ev["router_acc"],
        "best_single_acc": ev["best_single_acc"],
        "best_single_model": ev["best_single_model"],
        "oracle_acc": ev["oracle_acc"],
        "random_acc": ev["random_acc"],
        "tutorial_knn_irt_acc": tut,
        "delta_ci95": f"{100 * ev['delta']:+.2f} [{100 * ev['delta_ci95'][0]:+.2f}, {100 * ev['delta_ci95'][1]:+.2f}] points",
        "cv_accuracy": dg.MetadataValue.json({f: round(v[1], 4) for f, v in sel.best.items()}),
        "pick_share": dg.MetadataValue.json({m: round(v, 4) for m, v in ev["pick_share"].items()}),
        "routers": dg.MetadataValue.md(summary.drop(columns=["config"]).round(4).to_markdown(index=False)),
        "router_vs_baselines": dg.MetadataValue.md(plots.markdown_image(png, "router vs baselines")),
        "train_questions": int((~d.test).sum()),
        "test_questions": len(Yte),
    }
