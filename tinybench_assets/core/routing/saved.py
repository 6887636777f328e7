"""Saved routers: one .npz per router (its arrays, flattened keys) with its JSON description inside; no pickle."""

from __future__ import annotations

import json

import numpy as np

from .calibrated import CalibratedRouter
from .guard import GuardedRouter
from .routers import BaseRouter, BestSingleRouter, EnsembleRouter, KNNIRTRouter, KNNVoteRouter, LogisticRouter, MFRouter
from .task import TaskRouter

_CLASSES = {c.name: c for c in (BestSingleRouter, KNNVoteRouter, KNNIRTRouter, LogisticRouter, MFRouter)}
_CLASSES.update({"knn_shrunk": KNNVoteRouter, "task_prior": TaskRouter, "knn_task": TaskRouter})
ALIAS_MIN_BYTES = 1 << 16  # smaller arrays are written as they are: comparing them saves nothing


def router_from_state(state: dict) -> BaseRouter:
    """Rebuild a fitted router from :meth:`BaseRouter.state` (arrays and JSON-able params)."""
    name = state["router"]
    if name == "calibrated":
        return CalibratedRouter.from_state(router_from_state(state["members"][0]), state["arrays"])
    if name == "guarded":
        r = GuardedRouter(router_from_state(state["members"][0]), **(state.get("params") or {}))
    elif name == "ensemble":
        r = EnsembleRouter([router_from_state(s) for s in state["members"]])
    elif name in _CLASSES:
        params = dict(state.get("params") or {})
        r = _CLASSES[name](**params)
        r.name = name  # one class serves several families (knn_vote / knn_shrunk, task_prior / knn_task)
    else:
        raise ValueError(f"unknown router {name!r}")
    for key, value in state["arrays"].items():
        setattr(r, key, np.asarray(value))
    return r


def _same_as(arr: np.ndarray, stored: list) -> str | None:
    """The key of a stored array equal to ``arr`` (same shape, dtype and values), or None."""
    for key, other in stored:
        if other.shape == arr.shape and other.dtype == arr.dtype and np.array_equal(other, arr):
            return key
    return None


def save_router(router: BaseRouter, path, meta: dict) -> None:
    """Write a fitted router as one .npz (arrays, flattened keys) with its JSON description inside. An array equal to
    one already written is written once: the members of an ensemble each keep their own copy of the training
    questions' inputs (RouteLLM's leaderboard router: four of 69 MB), so ``array_aliases`` maps its key to the stored one."""
    flat, aliases, stored = {}, {}, []

    def walk(st, prefix):
        entry = {"router": st["router"], "params": st["params"], "arrays": sorted(st["arrays"]), "members": []}
        for key, arr in st["arrays"].items():
            arr = np.asarray(arr)
            same = _same_as(arr, stored) if arr.nbytes >= ALIAS_MIN_BYTES else None
            if same is None:
                flat[f"{prefix}{key}"] = arr
                stored.append((f"{prefix}{key}", arr))
            else:
                aliases[f"{prefix}{key}"] = same
        for i, sub in enumerate(st.get("members", [])):
            entry["members"].append(walk(sub, f"{prefix}m{i}."))
        return entry

    desc = walk(router.state(), "")
    head = {"router": desc, **({"array_aliases": aliases} if aliases else {}), **meta}
    flat["__meta__"] = np.frombuffer(json.dumps(head).encode(), dtype=np.uint8)
    with open(path, "wb") as fh:
        np.savez_compressed(fh, **flat)


def load_router(path) -> tuple[BaseRouter, dict]:
    """Read a router written by :func:`save_router`; returns (router, meta). An aliased array is read once and shared
    by the routers that wrote equal copies."""
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(bytes(z["__meta__"]).decode())
        aliases, read = meta.pop("array_aliases", {}), {}

        def array(key):
            key = aliases.get(key, key)
            if key not in read:
                read[key] = z[key]
            return read[key]

        def build(entry, prefix):
            st = {
                "router": entry["router"],
                "params": entry["params"],
                "arrays": {k: array(f"{prefix}{k}") for k in entry["arrays"]},
                "members": [build(sub, f"{prefix}m{i}.") for i, sub in enumerate(entry["members"])],
            }
            return st

        state = build(meta.pop("router"), "")
    return router_from_state(state), meta
