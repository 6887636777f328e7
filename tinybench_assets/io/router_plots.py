"""Router figures for the Dagster UI: accuracy bars beside the baselines, pick shares, accuracy-cost curve."""

from __future__ import annotations

import numpy as np

from tinybench_assets.io.plots import _plt, _png


def router_bars(title: str, figures: dict, pick_share: dict) -> bytes:
    """Left: accuracy (%) of the served router, the best single model, the oracle, a random model, and the
    other routers; right: the served router's pick share per model."""
    fig, (ax, bx) = _plt().subplots(1, 2, figsize=(10, 3.8), gridspec_kw={"width_ratios": [1.3, 1]})
    names = list(figures)
    vals = [100 * figures[n] for n in names]
    colors = [
        "tab:blue"
        if n.startswith("router")
        else "tab:gray"
        if n in ("best single", "random")
        else "tab:green"
        if n == "oracle"
        else "tab:cyan"
        for n in names
    ]
    ax.barh(names[::-1], vals[::-1], color=colors[::-1])
    lo = max(0.0, min(vals) - 5)
    ax.set_xlim(lo, min(100, max(vals) + 3))
    for i, v in enumerate(vals[::-1]):
        ax.text(v, i, f" {v:.2f}", va="center", fontsize=7)
    ax.set_xlabel("test accuracy (%)")
    ax.set_title(title, fontsize=9)
    models = list(pick_share)
    bx.barh(
        [m.split("/")[-1][:28] for m in models][::-1], [100 * pick_share[m] for m in models][::-1], color="tab:blue"
    )
    bx.set_xlabel("questions routed to the model (%)")
    bx.set_title("served router: pick shares", fontsize=9)
    fig.tight_layout()
    return _png(fig)


def cost_quality(title: str, rep: dict, models: list[str], served_label: str) -> bytes:
    """Cost-quality view on a log cost axis: each model alone, the zero router's hull, the router's sweep and hull,
    the served point (``rep``: core.routing.cost.cost_quality_report)."""
    import numpy as np

    fig, ax = _plt().subplots(figsize=(6, 4.2))
    ax.scatter(
        rep["curve_cost"],
        100 * np.asarray(rep["curve_acc"]),
        s=6,
        color="tab:blue",
        alpha=0.4,
        label="router sweep (P - lambda x cost)",
    )
    for (hc, ha), style, label in (
        (rep["zero_hull"], "tab:gray", f"zero router (AIQ {100 * rep['aiq_zero']:.1f})"),
        (rep["router_hull"], "tab:blue", f"router hull (AIQ {100 * rep['aiq_router']:.1f})"),
    ):
        hi = float(np.max(rep["single_cost"]))
        xs, ys = list(hc), list(100 * np.asarray(ha))
        if xs[-1] < hi:  # flat past the most accurate point
            xs.append(hi)
            ys.append(ys[-1])
        ax.plot(xs, ys, color=style, lw=1.6, label=label)
    ax.scatter(
        rep["single_cost"], 100 * np.asarray(rep["single_acc"]), color="tab:red", zorder=3, label="each model alone"
    )
    for m, c, a in zip(models, rep["single_cost"], rep["single_acc"]):
        ax.annotate(str(m).split("/")[-1][:16], (c, 100 * a), fontsize=6)
    ax.scatter(
        [rep["served_cost"]],
        [100 * rep["served_acc"]],
        marker="*",
        s=160,
        color="tab:green",
        zorder=4,
        label=f"served: {served_label}",
    )
    ax.set_xscale("log")
    ax.set_xlabel("mean cost per question (log scale)")
    ax.set_ylabel("accuracy (%)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=6, loc="lower right")
    ax.grid(alpha=0.3, which="both")
    return _png(fig)


def gap_curve(title: str, rep: dict) -> bytes:
    """RouteLLM's view of a two-model router: performance gap recovered against the share of calls sent to the strong
    model, beside a random router's diagonal, with CPT(50 %), CPT(80 %) and APGR (``rep``: core.routing.gap)."""
    fig, ax = _plt().subplots(figsize=(5.2, 4))
    ax.plot([0, 100], [0, 100], color="tab:gray", ls="--", lw=1, label="random router (APGR 0.50)")
    ax.plot(
        100 * np.asarray(rep["curve_share"]),
        100 * np.asarray(rep["curve_pgr"]),
        color="tab:blue",
        label=f"router (APGR {rep['apgr']:.3f} [{rep['apgr_lo']:.3f}, {rep['apgr_hi']:.3f}])",
    )
    for x, name in ((50, "cpt50"), (80, "cpt80")):
        ax.axhline(x, color="tab:green", lw=0.6, alpha=0.5)
        ax.plot([100 * rep[name]], [x], "o", color="tab:green")
        ax.annotate(
            f"CPT({x} %) {100 * rep[name]:.1f} %",
            (100 * rep[name], x),
            textcoords="offset points",
            xytext=(6, -12),
            fontsize=7,
        )
    ax.set_xlabel(f"calls to the strong model ({rep.get('strong_model', 'strong')}) (%)")
    ax.set_ylabel("performance gap recovered (%)")
    ax.set_xlim(0, 100)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return _png(fig)
