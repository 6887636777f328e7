"""Small matplotlib figures for the Dagster UI (PNG, embedded in markdown metadata) and artifacts."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import numpy as np


def _plt():
    """matplotlib.pyplot on the Agg backend, imported on first use (keeps the definitions fast to load)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig, dpi: int = 90) -> bytes:
    plt = _plt()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def markdown_image(png: bytes, alt: str = "plot") -> str:
    return f"![{alt}](data:image/png;base64,{base64.b64encode(png).decode()})"


def save(png: bytes, path: Path | str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png)
    return path


def difficulty_vs_discrimination(
    b: np.ndarray, a: np.ndarray, groups: np.ndarray | None = None, title: str = ""
) -> bytes:
    """Scatter of item intercept-difficulty b against discrimination ||a|| (one point per item)."""
    fig, ax = _plt().subplots(figsize=(5.5, 4))
    disc = np.linalg.norm(np.atleast_2d(a), axis=1)
    if groups is None or len(set(groups)) == 1:
        ax.scatter(b, disc, s=8, alpha=0.6)
    else:
        for g in sorted(set(groups)):
            sel = groups == g
            ax.scatter(b[sel], disc[sel], s=8, alpha=0.6, label=str(g))
        ax.legend(fontsize=7, markerscale=2)
    ax.set_xlabel("difficulty b (intercept)")
    ax.set_ylabel("discrimination ||a||")
    ax.set_title(title, fontsize=9)
    return _png(fig)


def error_vs_n(table, title: str = "") -> bytes:
    """Lines of MAE (points) against the number of anchor items, one per estimator. ``table``: DataFrame n x estimator.
    A ``random`` column (the random-items baseline) is drawn dashed grey."""
    fig, ax = _plt().subplots(figsize=(5.5, 4))
    for est in table.columns:
        style = {"color": "grey", "linestyle": "--"} if est == "random" else {}
        ax.plot(table.index, table[est], marker="o", label=str(est), **style)
    ax.set_xlabel("items answered (n)")
    ax.set_ylabel("MAE (accuracy points)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return _png(fig)


def budget_curve(table, title: str = "") -> bytes:
    """A small board's error and 90 % half-width against the anchor budget, one line per scenario (left: MAE,
    right: mean half-width, accuracy points). ``table``: rows n, scenario, mae, half_width (``budget_table``)."""
    fig, axes = _plt().subplots(1, 2, figsize=(9, 3.8), sharex=True)
    for s, g in table.groupby("scenario", sort=False):
        g = g.sort_values("n")
        axes[0].plot(g.n, g.mae, marker="o", label=str(s))
        axes[1].plot(g.n, g.half_width, marker="o", label=str(s))
    for ax, label in zip(axes, ("MAE (accuracy points)", "mean 90 % half-width (points)")):
        ax.set_xscale("log")
        ax.set_xlabel("anchors per scenario (n)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    return _png(fig)


def validation_error_vs_dim(errors: dict, sd: dict | None = None, chosen: int | None = None, title: str = "") -> bytes:
    """Validation error of the IRT fit against the dimension D (error bars: SD over validation models)."""
    fig, ax = _plt().subplots(figsize=(5, 3.4))
    dims = sorted(errors)
    y = [errors[d] for d in dims]
    yerr = [sd.get(d, 0.0) for d in dims] if sd else None
    ax.errorbar(dims, y, yerr=yerr, marker="o", capsize=3)
    if chosen is not None and chosen in errors:
        ax.scatter(
            [chosen], [errors[chosen]], s=120, facecolors="none", edgecolors="red", label=f"chosen D={chosen}", zorder=3
        )
        ax.legend(fontsize=7)
    ax.set_xlabel("IRT dimension D")
    ax.set_ylabel("validation error")
    ax.set_xticks(dims)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    return _png(fig)


def coverage_vs_n(table, nominal: float = 0.9, title: str = "") -> bytes:
    """Empirical coverage of the intervals against n, one line per (estimator, target); ``table``: n x label."""
    fig, ax = _plt().subplots(figsize=(5.5, 3.6))
    for col in table.columns:
        ax.plot(table.index, table[col], marker="o", label=str(col))
    ax.axhline(nominal, color="grey", linestyle="--", label=f"nominal {nominal:.0%}")
    ax.set_ylim(max(0.0, min(nominal - 0.2, float(np.nanmin(table.to_numpy())) - 0.02) if table.size else 0.5), 1.0)
    ax.set_xlabel("items answered (n)")
    ax.set_ylabel("interval coverage")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return _png(fig)


def matrix_histograms(model_accuracy: np.ndarray, item_mean: np.ndarray, title: str = "") -> bytes:
    """Two histograms: models' accuracy and items' mean score (how hard the scenario is, and for whom)."""
    fig, (ax1, ax2) = _plt().subplots(1, 2, figsize=(8, 3))
    ax1.hist(np.asarray(model_accuracy, dtype=float)[np.isfinite(model_accuracy)], bins=30, color="tab:blue")
    ax1.set_xlabel("model accuracy")
    ax1.set_ylabel("models")
    ax2.hist(np.asarray(item_mean, dtype=float)[np.isfinite(item_mean)], bins=30, color="tab:orange")
    ax2.set_xlabel("item mean score")
    ax2.set_ylabel("items")
    fig.suptitle(title, fontsize=9)
    return _png(fig)


def magi_trends(sizes, scores: np.ndarray, roles: list, title: str = "") -> bytes:
    """MAGI's progressive deletion: every chosen model's score (columns of ``scores``, one row per size) against the
    items left, voters grey, the top models blue, the reference red."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    style = {
        "voter": dict(color="0.7", lw=0.7),
        "top": dict(color="tab:blue", lw=1.0),
        "reference": dict(color="tab:red", lw=2.2),
    }
    seen = set()
    for j, role in enumerate(roles):
        ax.plot(sizes, scores[:, j], label=None if role in seen else role, **style[role])
        seen.add(role)
    ax.invert_xaxis()
    ax.set_xlabel("items left")
    ax.set_ylabel("score on the items left")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return _png(fig, dpi=70)


def magi_penalty(pen, curve) -> bytes:
    """MAGI's voter penalty: the mean per method before and after offset padding (``pen``), and against the number
    of voters (``curve``)."""
    plt = _plt()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
    g = pen.groupby("method")[["penalty_before", "penalty_after"]].mean()
    x = np.arange(len(g))
    ax1.bar(x - 0.2, g["penalty_before"], 0.4, label="before padding")
    ax1.bar(x + 0.2, g["penalty_after"], 0.4, label="after padding")
    ax1.set_xticks(x, g.index, rotation=30, fontsize=7)
    ax1.set_ylabel("mean voter penalty (points)")
    ax1.legend(fontsize=7)
    for method, c in curve.groupby("method"):
        ax2.plot(c["n_voters"], c["mean_penalty"], marker="o", label=method)
    ax2.set_xscale("log")
    ax2.set_xlabel("number of voters")
    ax2.set_ylabel("mean voter penalty (points)")
    ax2.legend(fontsize=7)
    ax2.grid(alpha=0.3)
    return _png(fig, dpi=70)
