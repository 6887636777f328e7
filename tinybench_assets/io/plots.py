"""Small matplotlib figures for the Dagster UI (PNG, embedded in markdown metadata) and artifacts."""
from __future__ import annotations

import base64
import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def markdown_image(png: bytes, alt: str = "plot") -> str:
    return f"![{alt}](data:image/png;base64,{base64.b64encode(png).decode()})"


def save(png: bytes, path: Path | str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png)
    return path


def difficulty_vs_discrimination(b: np.ndarray, a: np.ndarray, groups: np.ndarray | None = None, title: str = "") -> bytes:
    """Scatter of item intercept-difficulty b against discrimination ||a|| (one point per item)."""
    fig, ax = plt.subplots(figsize=(5.5, 4))
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
    """Lines of MAE (points) against the number of anchor items, one per estimator. ``table``: DataFrame n x estimator."""
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for est in table.columns:
        ax.plot(table.index, table[est], marker="o", label=str(est))
    ax.set_xlabel("items answered (n)")
    ax.set_ylabel("MAE (accuracy points)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return _png(fig)
