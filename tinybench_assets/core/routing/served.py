"""The served router: a fitted router with what serving it needs (its models, their training accuracies, the margin,
the encoder, the surface features, the cost policy), saved as one file and read back by ``tinybench route``.

``router_accuracy`` and ``leaderboard_router`` build one and save it through the ``ModelStore`` resource; the CLI
loads it and routes embedded questions exactly as the assets route their test questions. The file is
core/routing/saved.py's .npz (the router's arrays and its JSON description, no pickle) with ``meta`` beside it:

- ``models`` (M,), ``prior`` (M,) training accuracies (the tie-break and the out-of-distribution fallback),
  ``encoder`` (the embeddings' encoder id), ``margin``, ``served``, ``config``, ``cv_acc``, ``created``;
- ``partition`` (``board.scenario``, or the board for a leaderboard router), ``surface`` (the surface features'
  parameters, core/routing/surface.py; absent: embeddings alone), ``cost`` (the cost objective's operating points,
  where costs landed).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .metrics import route
from .saved import load_router, save_router
from .surface import router_input

REQUIRED_META = ("models", "prior", "encoder")


class RouterFileError(ValueError):
    """A router file that cannot be served: unreadable, or its description lacks what serving needs."""


class ServedRouter:
    """A fitted router and its serving description (module docstring)."""

    def __init__(self, router, meta: dict):
        missing = [k for k in REQUIRED_META if k not in meta]
        if missing:
            raise RouterFileError(f"meta lacks {', '.join(missing)} (not written by router_accuracy?)")
        self.router, self.meta = router, dict(meta)

    # ------------------------------------------------------------------ the file
    def save(self, path) -> None:
        save_router(self.router, path, self.meta)

    @classmethod
    def load(cls, path, partition: str | None = None) -> "ServedRouter":
        """Read a router file; RouterFileError naming the file when it cannot be read, lacks what serving needs, or
        serves another partition than ``partition``."""
        path = Path(path)
        try:
            router, meta = load_router(path)
        except Exception as e:  # a truncated or foreign file
            first = str(e).splitlines()[0] if str(e) else ""
            raise RouterFileError(f"cannot read router {path}: {type(e).__name__}: {first}") from None
        try:
            served = cls(router, meta)
        except RouterFileError as e:
            raise RouterFileError(f"router {path}: {e}") from None
        if partition and meta.get("partition") and meta["partition"] != partition:
            raise RouterFileError(f"router {path} is for partition {meta['partition']}, not {partition}")
        return served

    # ------------------------------------------------------------------ serving
    @property
    def models(self) -> list[str]:
        return list(self.meta["models"])

    @property
    def prior(self) -> np.ndarray:
        return np.asarray(self.meta["prior"], dtype=float)

    def inputs(self, E: np.ndarray, texts) -> np.ndarray:
        """The router's input for embedded questions: the embeddings, with the texts' surface features beside them
        where the router was trained so."""
        return router_input(self.meta.get("surface"), E, texts)

    def route(self, X: np.ndarray, policy=None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(P (n, M), picks (n,), out-of-distribution flags (n,) or None) for the router's inputs ``X``
        (:meth:`inputs`). ``policy`` None routes as ``router_accuracy`` routes its test questions (argmax P with the
        margin, ties to the better training accuracy); a core.routing.cost.Policy routes with each model priced at its
        mean training cost, as does a core.routing.threshold.ThresholdPolicy. A guarded router (the leaderboard's) flags
        questions unlike every training question and sends them to the model with the best training accuracy."""
        P = np.asarray(self.router.predict_proba(X), dtype=float)
        if P.shape != (len(X), len(self.models)):
            raise RouterFileError(f"router gives P of shape {P.shape}, expected ({len(X)}, {len(self.models)})")
        prior = self.prior
        if policy is None:
            picks = route(P, prior, margin=float(self.meta.get("margin", 0.0)))
        else:
            # no costs landed: None (a threshold policy reads none)
            cost = (self.meta.get("cost") or {}).get("model_cost")
            picks = policy.picks(P, None if cost is None else np.asarray(cost, dtype=float), prior)
        ood = self.router.novelty(X)[1] if hasattr(self.router, "novelty") else None
        return P, picks if ood is None else np.where(ood, int(np.argmax(prior)), picks), ood
