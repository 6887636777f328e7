"""Router figures for the Dagster UI: accuracy bars beside the baselines, pick shares, accuracy-cost curve."""
from __future__ import annotations

from tinybench_assets.io.plots import _plt, _png


def router_bars(title: str, figures: dict, pick_share: dict) -> bytes:
    """Left: accuracy (%) of the served router, the best single model, the oracle, a random model, and the
    other routers; right: the served router's pick share per model."""
    fig, (ax, bx) = _plt().subplots(1, 2, figsize=(10, 3.8), gridspec_kw={"width_ratios": [1.3, 1]})
    names = list(figures)
    vals = [100 * figures[n] for n in names]
    colors = ["tab:blue" if n.startswith("router") else "tab:gray" if n in ("best single", "random") else
              "tab:green" if n == "oracle" else "tab:cyan" for n in names]
    ax.barh(names[::-1], vals[::-1], color=colors[::-1])
    lo = max(0.0, min(vals) - 5)
    ax.set_xlim(lo, min(100, max(vals) + 3))
    for i, v in enumerate(vals[::-1]):
        ax.text(v, i, f" {v:.2f}", va="center", fontsize=7)
    ax.set_xlabel("test accuracy (%)")
    ax.set_title(title, fontsize=9)
    models = list(pick_share)
    bx.barh([m.split("/")[-1][:28] for m in models][::-1], [100 * pick_share[m] for m in models][::-1], color="tab:blue")
    bx.set_xlabel("questions routed to the model (%)")
    bx.set_title("served router: pick shares", fontsize=9)
    fig.tight_layout()
    return _png(fig)


def cost_curve(title: str, curve, single) -> bytes:
    """The router's accuracy against mean cost over a lambda sweep, each model alone as a point."""
    fig, ax = _plt().subplots(figsize=(5.5, 4))
    ax.plot(curve["cost"], 100 * curve["accuracy"], marker=".", label="router (P - lambda x cost)")
    ax.scatter(single["cost"], 100 * single["accuracy"], color="tab:red", zorder=3, label="each model alone")
    for r in single.itertuples():
        ax.annotate(str(r.model).split("/")[-1][:18], (r.cost, 100 * r.accuracy), fontsize=6)
    ax.set_xlabel("mean cost per question")
    ax.set_ylabel("accuracy (%)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return _png(fig)
