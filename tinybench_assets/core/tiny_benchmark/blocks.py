"""The artifact's scenario blocks read and checked (:mod:`.schema`), every field decoded, into the shape the steps'
``to_dict`` wrote them in, so that each step's ``from_dict`` rebuilds it (:class:`ScenarioBlocks`): per scenario its
items and balance weights, its IRT rows (own and joint fit), anchors, lambdas, stacks, and estimators with their T1
intervals and T2 maps."""

from __future__ import annotations

import numpy as np

from ..estimation.calibration import StoredIsotonicMap
from ..estimation.names import MEDIANS, STACKS
from ..estimation.shrinkage import SHRINKAGE
from .format import JSON_BASE, LEARNED_BASE
from .schema import Reader

STACK_MEMBERS = {**STACKS, **MEDIANS}  # every stack an artifact may carry: the convex ones and a small board's median

MAX_ITEMS = 10_000_000
MAX_DIM = 1_000


def _interval(r: Reader, d: dict, path: str) -> dict:
    """A conformal interval's fields (``ConformalInterval.to_dict``), checked and decoded."""
    fields = {k: r.number(d, k, path, finite=True) for k in ("alpha", "floor", "lo", "hi")}
    fields.update(scale=r.text(d, "scale", path, ("binomial", "none")), q_lo=r.number(d, "q_lo", path))
    fields.update(q_hi=r.number(d, "q_hi", path), n=r.integer(d, "n", path, 0) if "n" in d else 0)
    sym = d.get("symmetric", False)
    if not isinstance(sym, bool):
        r.fail(f"{path}.symmetric", "expected true or false")
    if sym:  # an artifact from before the field reads as not symmetric (to_dict wrote none)
        fields["symmetric"] = True
    return fields


def _calibration(r: Reader, d: dict, path: str) -> dict:
    """An isotonic T2 map's fields (``IsotonicCalibrator.to_dict``), checked (it must rebuild) and decoded."""
    x = r.vector(d, "x", path, finite=True)
    y = r.vector(d, "y", path, n=len(x), finite=True)
    if not len(x) or (np.diff(x) <= 0).any():
        r.fail(f"{path}.x", "expected a non-empty increasing list (the isotonic map's thresholds)")
    fields = {"x": x, "y": y, "y_min": r.number(d, "y_min", path, finite=True)}
    fields["y_max"] = r.number(d, "y_max", path, finite=True)
    if "slope" in d:  # a map with tails (IsotonicCalibrator(tails=True)); without the field: clipped at its ends
        fields["slope"] = r.number(d, "slope", path, finite=True)
    try:
        StoredIsotonicMap.from_dict(fields)
    except ValueError as e:  # an ArtifactError is one too
        r.fail(path, f"not an isotonic map ({e})")
    return fields


def json_names(stacks: dict, shrinkage: bool) -> set[str]:
    """Estimators of one scenario computed from the JSON alone: the base ones (shrunk / shrunk_joint with a
    ``shrinkage`` prior) and the ``stacks`` ({name: {"members", ...}}) of only those."""
    base = {*JSON_BASE, *(SHRINKAGE if shrinkage else ())}
    return {*base, *(k for k, st in stacks.items() if set(st["members"]) <= base)}


class ScenarioBlocks:
    """Every scenario's block of the artifact (one clustering and budget), read in ``scenario_order``.

    Attributes: ``blocks`` ({scenario: its block checked and decoded: ``items``, ``balance_weights``, ``irt``,
    ``anchors``, ``lambdas``, ``stacks``, ``estimators``, ``recommended_learned``, in the shape of the steps'
    ``to_dict``; what their ``from_dict`` read}), ``stacks`` ({scenario: {name: members and weights}}) and
    ``estimators`` ({scenario: names listed}).
    """

    def __init__(self, r: Reader, art: dict, order: list, shrinkage):
        self.r, self.shrinkage = r, shrinkage
        self.stacks, self.estimators = {}, {}
        self.blocks = self._read(art, order)

    def _read(self, art: dict, order: list) -> dict:
        """Every scenario's block: items, weights, IRT, anchors, lambdas, estimators."""
        r = self.r
        dims = r.obj(art, "irt_dims", "$")
        dj = r.integer(dims, "joint", "$.irt_dims", 1, MAX_DIM)
        scs = r.obj(art, "scenarios", "$")
        blocks, seen = {}, set()
        for s in order:
            p = f"$.scenarios.{s}"
            d = r.obj(scs, s, "$.scenarios")
            N = r.integer(d, "n_items", p, 1, MAX_ITEMS)
            items = r.strings(d, "items", p, N)
            w = r.vector(d, "balance_weights", p, N, finite=True)
            irt = r.obj(d, "irt", p)
            sep, joint = r.obj(irt, "sep", f"{p}.irt"), r.obj(irt, "joint", f"{p}.irt")
            D = r.integer(dims, s, "$.irt_dims", 1, MAX_DIM)
            fits = {"sep": {"a": r.matrix(sep, "a", f"{p}.irt.sep", N, D)}, "joint": {"a": None}}
            fits["sep"]["b"] = r.vector(sep, "b", f"{p}.irt.sep", N, finite=True)
            fits["joint"]["a"] = r.matrix(joint, "a", f"{p}.irt.joint", N, dj)
            fits["joint"]["b"] = r.vector(joint, "b", f"{p}.irt.joint", N, finite=True)
            block = {"items": list(items), "balance_weights": w, "irt": fits}
            block["anchors"] = self._anchors(r.obj(d, "anchors", p), p, items, seen)
            block["lambdas"] = self._lambdas(r.obj(d, "lambdas", p), p)
            blocks[s] = {**block, **self._estimators(d, s, p)}
        return blocks

    def _lambdas(self, lam: dict, p: str) -> dict:
        """A scenario's gp-IRT lambdas per fit and the tutorial's b and v (NaN where the artifact has none)."""
        r = self.r
        out = {}
        for fit in ("sep", "joint"):
            lf = r.obj(lam, fit, f"{p}.lambdas")
            out[fit] = {k: r.number(lf, k, f"{p}.lambdas.{fit}") for k in ("tutorial", "validation")}
        for k in ("b_sep", "b_joint", "v"):
            out[k] = r.number(lam, k, f"{p}.lambdas") if k in lam else float("nan")
        return out

    def _anchors(self, a: dict, p: str, items: list, seen: set) -> dict:
        """A scenario's anchors (``items``: its pool; ``seen``: anchors of the scenarios read before it)."""
        r = self.r
        ids = r.strings(a, "items", f"{p}.anchors")
        if not ids:
            r.fail(f"{p}.anchors.items", "no anchor")
        local = r.indices(a, "local", f"{p}.anchors", len(ids), len(items))
        if any(items[j] != it for j, it in zip(local, ids)):
            r.fail(f"{p}.anchors", "items and local (pool indices) disagree")
        if seen & set(ids):
            r.fail(f"{p}.anchors.items", "an anchor appears in two scenarios")
        seen |= set(ids)
        if "texts" in a and a["texts"] is not None:
            r.strings(a, "texts", f"{p}.anchors", len(ids), nullable=True)
        linear = None
        if a.get("linear") is not None:  # the anchors' linear map (a regressor feature); optional
            lin, q = r.obj(a, "linear", f"{p}.anchors"), f"{p}.anchors.linear"
            linear = {
                "fill": r.vector(lin, "fill", q, len(ids), finite=True),
                "coef": r.vector(lin, "coef", q, len(ids), finite=True),
                "intercept": r.number(lin, "intercept", q, finite=True),
            }
        weights = r.vector(a, "weights", f"{p}.anchors", len(ids), finite=True)
        return {"items": ids, "local": np.asarray(local, dtype=int), "weights": weights, "linear": linear}

    def _estimators(self, d: dict, s: str, p: str) -> dict:
        """Scenario ``s``'s ``stacks``, ``estimators`` (their T1 intervals and T2 maps) and ``recommended_learned``
        (with the served estimator's selection-aware T1 interval, where there is one); the recommendations checked."""
        r, out = self.r, {}
        self.stacks[s] = {}
        for name, st in r.obj(d, "stacks", p).items():
            q = f"{p}.stacks.{name}"
            if name not in STACK_MEMBERS:
                r.fail(q, "unknown stack")
            members = r.names(st, "members", q, STACK_MEMBERS[name])
            if not members:
                r.fail(f"{q}.members", "empty")
            self.stacks[s][name] = {
                "members": members,
                "w_t1": r.vector(st, "w_t1", q, len(members), finite=True),
                "w_t2": r.vector(st, "w_t2", q, len(members), finite=True),
            }
        known = {*JSON_BASE, *SHRINKAGE, *LEARNED_BASE, *self.stacks[s]}
        self.estimators[s] = []
        for e, ed in r.obj(d, "estimators", p).items():
            q = f"{p}.estimators.{e}"
            if e not in known:
                r.fail(q, "unknown estimator (not a base estimator, a learned one or a stack of this scenario)")
            if not isinstance(ed, dict):
                r.fail(q, "expected an object")
            out[e] = {"interval_t1": _interval(r, r.obj(ed, "interval_t1", q), f"{q}.interval_t1")}
            cal = r.obj(ed, "calibration_t2", q, nullable=True)
            out[e]["calibration_t2"] = None if cal is None else _calibration(r, cal, f"{q}.calibration_t2")
            if cal is not None:
                out[e]["interval_t2"] = _interval(r, r.obj(ed, "interval_t2", q), f"{q}.interval_t2")
            self.estimators[s].append(e)
        if not self.estimators[s]:
            r.fail(f"{p}.estimators", "no estimator")
        if set(self.estimators[s]) & set(SHRINKAGE) and self.shrinkage is None:
            r.fail("$.shrinkage", f"scenario {s} lists shrunk estimators but the artifact has no prior")
        rl = r.obj(d, "recommended_learned", p)
        served = None
        if rl.get("interval_t1") is not None:  # the served estimator's selection-aware T1 interval
            q = f"{p}.recommended_learned.interval_t1"
            served = _interval(r, r.obj(rl, "interval_t1", f"{p}.recommended_learned"), q)
        json_ok = json_names(self.stacks[s], self.shrinkage is not None)
        for rec in ("recommended", "recommended_learned"):
            rd = r.obj(d, rec, p)
            for t in ("t1", "t2"):
                r.text(
                    rd,
                    t,
                    f"{p}.{rec}",
                    self.estimators[s]
                    if rec == "recommended_learned"
                    else [e for e in self.estimators[s] if e in json_ok],
                )
        frontier = None
        if rl.get("frontier") is not None:
            frontier = self._frontier(r.obj(rl, "frontier", f"{p}.recommended_learned"), s, p)
        return {
            "stacks": self.stacks[s],
            "estimators": out,
            "recommended_learned": {"interval_t1": served, "frontier": frontier},
        }

    def _frontier(self, d: dict, s: str, p: str) -> dict:
        """The rule for a model beyond the board (``FrontierRule.to_dict``), checked and decoded."""
        r, q = self.r, f"{p}.recommended_learned.frontier"
        names = [e for e in self.estimators[s] if e in JSON_BASE]
        t1 = r.obj(d, "t1", q)
        line = d.get("t2_line")
        if line is not None and not (
            isinstance(line, list) and len(line) == 2 and all(isinstance(v, (int, float)) for v in line)
        ):
            r.fail(f"{q}.t2_line", "expected null or [intercept, slope]")
        if line is not None and not np.isfinite(np.asarray(line, dtype=float)).all():
            r.fail(f"{q}.t2_line", "expected finite numbers")
        iv2 = r.obj(d, "interval_t2", q, nullable=True)
        ivp = r.obj(d, "interval_position", q, nullable=True) if "interval_position" in d else None
        return {
            "position": r.text(d, "position", q, names),
            "threshold": r.number(d, "threshold", q, finite=True),
            "t1": {
                "clustering": r.text(t1, "clustering", f"{q}.t1"),
                "estimator": r.text(t1, "estimator", f"{q}.t1", names),
            },
            "interval_t1": _interval(r, r.obj(d, "interval_t1", q), f"{q}.interval_t1"),
            "t2_line": line,
            "interval_t2": None if iv2 is None else _interval(r, iv2, f"{q}.interval_t2"),
            "interval_position": None if ivp is None else _interval(r, ivp, f"{q}.interval_position"),
            "n_models": r.integer(d, "n_models", q, 0),
            **({"n_calibration": r.integer(d, "n_calibration", q, 0)} if "n_calibration" in d else {}),
        }
