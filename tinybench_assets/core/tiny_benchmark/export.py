"""Export a fitted :class:`~tinybench_assets.core.estimation.predictor.AnchorPredictor` as a tiny benchmark: the
JSON-serializable dict laid out in :mod:`.format`, plus (key ``_trees``) the learned regressors of its
(clustering, n) as the numeric arrays of :mod:`.trees` (saved with :func:`.files.save_artifact`). Every step writes
its own part of a scenario's block (its ``to_dict``); this module merges them and adds the header and the trees."""

from __future__ import annotations

from datetime import datetime, timezone

from ..estimation.base_estimates import feature_width
from ..json_floats import merge
from . import blocks
from .format import FORMAT, TREES_FILE, ArtifactError
from .trees import hgb_arrays, pack


def _width(st: dict, c: str, n: int):
    """``width(s, kind)`` of the learned regressors' features at (c, n) (``base_estimates.feature_width``): anchors + D
    + its linear score (sep), every scenario's anchors + D_joint + every scenario's linear score (joint)."""
    return lambda s, kind: feature_width(st["anchors"].of(c, n), st["irt"].params_, s, kind)


def learned_models(st: dict, c: str, n: int, models: list[dict]) -> dict:
    """The tree file's arrays: the regressors ``models`` ([{scenario, kind, target}], in order) of (c, n) and the
    answer bank of (c, n) when the predictor has one. st : the predictor's named steps."""
    width, regressors, out = _width(st, c, n), st["learned"].models_, []
    for m in models:
        key = (c, n, m["scenario"], m["kind"], m["target"])
        if key not in regressors:
            raise ArtifactError(f"the predictor has no learned regressor {key}")
        out.append(hgb_arrays(regressors[key], width(m["scenario"], m["kind"])))
    return {**pack(out), **st["bank"].tree_arrays(c, n)}


#: the keys of a scenario's block, in the order the artifact lists them (:mod:`.format`)
BLOCK_KEYS = (
    "n_items",
    "items",
    "balance_weights",
    "anchors",
    "irt",
    "lambdas",
    "stacks",
    "estimators",
    "recommended",
    "recommended_learned",
)


def _scenario_entry(st: dict, lay, c: str, n: int, s: str, texts: dict, selected: bool) -> tuple[dict, set, set]:
    """One scenario's block of the artifact, each step writing its own part (``to_dict``): the layout its items and
    weights, the anchor sets its anchors, the IRT fits and lambdas their parameters, the stacks, the selector the
    validation figures and recommendations (with the served interval when ``selected``: c is the clustering the
    predictor selected), the calibrators every estimator's intervals and T2 map. Returns the block and its
    JSON-evaluable and learned estimator names. ``st``: the predictor's named steps; ``lay``: its item layout."""
    names = list(st["selector"].rows(c, n, s).estimator)
    stacks = st["stacks"].of(c, n, s)
    json_names = set(names) & blocks.json_names(stacks, shrinkage=False)
    if not json_names:
        raise ArtifactError(f"scenario {s!r}: no JSON-evaluable estimator in the predictor's validation table")
    entry = merge(
        lay.to_dict(s),
        st["anchors"].to_dict(c, n, s, lay.items, texts),
        st["lambdas"].to_dict(c, n, s),
        st["irt"].to_dict(s, lay.cols[s]),
        st["stacks"].to_dict(c, n, s),
        st["selector"].to_dict(c, n, s, json_names, st["served"] if selected else None),
        st["calibrators"].to_dict(c, n, s, names),
    )
    if selected and "frontier" in st:  # the rule for a model beyond the board (estimation/frontier.py), if any
        rule = st["frontier"].to_dict(n, s)
        if rule is not None:
            entry["recommended_learned"]["frontier"] = rule
    return {k: entry[k] for k in BLOCK_KEYS}, json_names, set(names) - json_names


def _budget_and_clustering(p, n, clustering: str | None) -> tuple[int, str, str, str]:
    """(n, the clustering to export, its source: "selected" or "given", the clustering the predictor's ``tinybench``
    selection chose for n) of fitted AnchorPredictor ``p``; ArtifactError when it is not fitted or did not prepare
    n or ``clustering``."""
    if "steps_" not in vars(p):
        raise ArtifactError(
            "the predictor is not fitted, or was saved by an older tinybench without its steps: "
            "rebuild it by materializing anchor_sets (or `tinybench run-all`)"
        )
    if int(n) not in p.n_values:
        raise ArtifactError(f"n={n} was not prepared by the predictor (it has n_values={list(p.n_values)})")
    n = int(n)
    c_sel = p.named_steps["selector"].selection_[(n, list(p.layout.scenarios)[0], "tinybench")]["t1"][0]
    if clustering is None:
        return n, c_sel, "selected", c_sel
    if clustering not in p.clusterings:
        raise ArtifactError(f"clustering {clustering!r} was not prepared (have {list(p.clusterings)})")
    return n, clustering, "given", c_sel


def export_tiny_benchmark(
    predictor,
    *,
    leaderboard: str,
    n: int,
    clustering: str | None = None,
    item_texts: dict[str, str] | None = None,
    binarization: dict | None = None,
) -> dict:
    """A JSON-serializable tiny benchmark of ``leaderboard`` with ``n`` anchors per scenario.

    Parameters
    ----------
    predictor : a fitted AnchorPredictor (``n`` must be one of its ``n_values``).
    leaderboard : name recorded in the artifact.
    n : anchor budget per scenario.
    clustering : anchor clustering to export; default the one the predictor's ``tinybench`` selection
        chose for ``n`` on validation models.
    item_texts : optional {item id: prompt text}; anchors without a text get ``null``.
    binarization : optional, informational (e.g. {"rule": "tutorial_threshold", "threshold": 0.5}): how the
        leaderboard's scores were binarized, so a new model's answers can be scored the same way.

    Returns
    -------
    dict in the layout of :mod:`.format`'s docstring, with the learned regressors' arrays under ``_trees`` (not
    JSON: :func:`.files.save_artifact` writes them to ``learned_models.npz`` and fills ``learned.sha256``).
    """
    p = predictor
    n, c, source, c_sel = _budget_and_clustering(p, n, clustering)
    st, lay = p.named_steps, p.layout
    scenarios = list(lay.scenarios)
    texts = item_texts or {}
    json_names: set[str] = set()
    learned_names: set[str] = set()
    out_sc = {}
    for s in scenarios:
        out_sc[s], json_s, learned_s = _scenario_entry(st, lay, c, n, s, texts, c == c_sel)
        json_names |= json_s
        learned_names |= learned_s
    learned = st["learned"].to_dict(c, n, scenarios, _width(st, c, n))
    models, bank = learned["models"], st["bank"].to_dict(c, n)
    return {
        "format": FORMAT,
        "leaderboard": str(leaderboard),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "n": n,
        "clustering": c,
        "clustering_source": source,
        "alpha": float(p.alpha),
        "interval_scale": p.interval_scale,
        "scenario_order": scenarios,
        "irt_dims": {k: int(st["irt"].params_[k].dim) for k in [*scenarios, "joint"]},
        "training": {
            "fit_models": int(st["split"].n_fit_),
            "validation_models": int(st["split"].n_val_),
            "seed": int(p.seed),
        },
        "binarization": binarization,
        "json_estimators": sorted(json_names),
        "learned_estimators": sorted(learned_names),
        "learned": {"file": TREES_FILE if models or bank else None, "sha256": None, **learned, "bank": bank},
        "scenarios": out_sc,
        "_trees": learned_models(st, c, n, models),
    }
