"""The artifact's scenario blocks read into what :class:`~.model.ArtifactModel` builds its steps from, with every
field checked (:mod:`.schema`): per scenario its items and balance weights, its IRT rows (own and joint fit), anchors,
lambdas, stacks, and estimators with their T1 intervals and T2 maps (:class:`ScenarioBlocks`)."""

from __future__ import annotations

import numpy as np

from ..calibration import ConformalInterval, IsotonicCalibrator
from ..estimation.anchor_sets import AnchorSet
from ..estimation.names import STACKS
from ..estimation.shrinkage import SHRINKAGE
from .format import JSON_BASE, LEARNED_BASE
from .schema import Reader

MAX_ITEMS = 10_000_000
MAX_DIM = 1_000


class _IRT:
    """Item parameters of one 2PL fit (what the features read: ``a`` (I, D), ``b`` (I,))."""

    def __init__(self, a, b):
        self.a, self.b = a, b


class _Calibration:
    """An isotonic T2 map rebuilt from its stored thresholds (same interpolation as the fitted one)."""

    def __init__(self, x, y, y_min, y_max):
        self.const = float(y[0]) if len(x) == 1 else None
        if self.const is None:
            cal = IsotonicCalibrator(y_min=y_min, y_max=y_max).fit(x, y)
            iso = cal.iso_
            if not (np.array_equal(iso.X_thresholds_, x) and np.array_equal(iso.y_thresholds_, y)):
                # refitting an isotonic sequence may move a plateau by an ulp; pin the stored thresholds exactly
                iso.X_thresholds_, iso.y_thresholds_ = x, y
                iso.X_min_, iso.X_max_ = float(x[0]), float(x[-1])
                iso._build_f(x, y)
            self.cal = cal

    def transform(self, e):
        if self.const is not None:  # a constant map
            return np.where(np.isfinite(np.asarray(e, dtype=float)), self.const, np.nan)
        return self.cal.transform(e)


def _interval(r: Reader, d: dict, path: str) -> ConformalInterval:
    fields = {k: r.number(d, k, path, finite=True) for k in ("alpha", "floor", "lo", "hi")}
    fields.update(scale=r.text(d, "scale", path, ("binomial", "none")), q_lo=r.number(d, "q_lo", path))
    fields.update(q_hi=r.number(d, "q_hi", path), n=r.integer(d, "n", path, 0) if "n" in d else 0)
    return ConformalInterval.from_dict(fields)


def _calibration(r: Reader, d: dict, path: str) -> _Calibration:
    x = r.vector(d, "x", path, finite=True)
    y = r.vector(d, "y", path, n=len(x), finite=True)
    if not len(x) or (np.diff(x) <= 0).any():
        r.fail(f"{path}.x", "expected a non-empty increasing list (the isotonic map's thresholds)")
    try:
        return _Calibration(x, y, r.number(d, "y_min", path, finite=True), r.number(d, "y_max", path, finite=True))
    except ValueError as e:  # an ArtifactError is one too
        r.fail(path, f"not an isotonic map ({e})")


def json_names(stacks: dict, shrinkage: bool) -> set[str]:
    """Estimators of one scenario computed from the JSON alone: the base ones (shrunk / shrunk_joint with a
    ``shrinkage`` prior) and the ``stacks`` ({name: {"members", ...}}) of only those."""
    base = {*JSON_BASE, *(SHRINKAGE if shrinkage else ())}
    return {*base, *(k for k, st in stacks.items() if set(st["members"]) <= base)}


class ScenarioBlocks:
    """Every scenario's block of the artifact of (clustering ``c``, budget ``n``), read in ``scenario_order``.

    Attributes: ``parts`` (what the steps are built from: ``items``, ``w``, ``cols``, ``irt`` {scenario: its fit},
    ``ja`` / ``jb`` (the joint fit's rows), ``lambdas``, ``int_t1``, ``t2_cal``, ``int_t2``), ``anchor_sets``
    ({scenario: AnchorSet}), ``stacks`` ({scenario: {name: members and weights}}), ``estimators`` ({scenario: names
    listed}), ``served`` ({scenario: the served estimator's selection-aware T1 interval}).
    """

    def __init__(self, r: Reader, art: dict, order: list, c: str, n: int, shrinkage):
        self.r, self.c, self.n, self.shrinkage = r, c, n, shrinkage
        self.anchor_sets, self.stacks, self.estimators, self.served = {}, {}, {}, {}
        self.parts = self._read(art, order)

    def _read(self, art: dict, order: list) -> dict:
        """Every scenario's block: items, weights, IRT, anchors, lambdas, estimators (into the parts of the steps)."""
        r, c, n = self.r, self.c, self.n
        dims = r.obj(art, "irt_dims", "$")
        dj = r.integer(dims, "joint", "$.irt_dims", 1, MAX_DIM)
        scs = r.obj(art, "scenarios", "$")
        parts = {
            "items": [],
            "w": [],
            "cols": {},
            "irt": {},
            "ja": [],
            "jb": [],
            "lambdas": {},
            "int_t1": {},
            "t2_cal": {},
            "int_t2": {},
        }
        start, seen = 0, set()
        for s in order:
            p = f"$.scenarios.{s}"
            d = r.obj(scs, s, "$.scenarios")
            N = r.integer(d, "n_items", p, 1, MAX_ITEMS)
            items = r.strings(d, "items", p, N)
            parts["items"] += list(items)
            parts["cols"][s] = np.arange(start, start + N)
            parts["w"].append(r.vector(d, "balance_weights", p, N, finite=True))
            irt = r.obj(d, "irt", p)
            sep, joint = r.obj(irt, "sep", f"{p}.irt"), r.obj(irt, "joint", f"{p}.irt")
            D = r.integer(dims, s, "$.irt_dims", 1, MAX_DIM)
            parts["irt"][s] = _IRT(
                r.matrix(sep, "a", f"{p}.irt.sep", N, D), r.vector(sep, "b", f"{p}.irt.sep", N, finite=True)
            )
            parts["ja"].append(r.matrix(joint, "a", f"{p}.irt.joint", N, dj))
            parts["jb"].append(r.vector(joint, "b", f"{p}.irt.joint", N, finite=True))
            self.anchor_sets[s] = self._anchors(r.obj(d, "anchors", p), s, p, items, start, seen)
            lam = r.obj(d, "lambdas", p)
            for fit in ("sep", "joint"):
                lf = r.obj(lam, fit, f"{p}.lambdas")
                parts["lambdas"][(c, n, s, fit)] = {
                    k: r.number(lf, k, f"{p}.lambdas.{fit}") for k in ("tutorial", "validation")
                }
            self._estimators(d, s, p, parts)
            start += N
        return parts

    def _anchors(self, a: dict, s: str, p: str, items: list, start: int, seen: set) -> AnchorSet:
        """Scenario ``s``'s anchors (``items``: its pool, starting at column ``start``; ``seen``: anchors of the
        scenarios read before it)."""
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
        return AnchorSet(
            s,
            self.c,
            self.n,
            local,
            start + local,
            r.vector(a, "weights", f"{p}.anchors", len(ids), finite=True),
            linear,
        )

    def _estimators(self, d: dict, s: str, p: str, parts: dict) -> None:
        """Scenario ``s``'s stacks, estimators (their T1 intervals and T2 maps into ``parts``) and recommendations."""
        r, key = self.r, (self.c, self.n, s)
        self.stacks[s] = {}
        for name, st in r.obj(d, "stacks", p).items():
            q = f"{p}.stacks.{name}"
            if name not in STACKS:
                r.fail(q, "unknown stack")
            members = r.names(st, "members", q, STACKS[name])
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
            parts["int_t1"][(*key, e)] = _interval(r, r.obj(ed, "interval_t1", q), f"{q}.interval_t1")
            cal = r.obj(ed, "calibration_t2", q, nullable=True)
            if cal is not None:
                parts["t2_cal"][(*key, e)] = _calibration(r, cal, f"{q}.calibration_t2")
                parts["int_t2"][(*key, e)] = _interval(r, r.obj(ed, "interval_t2", q), f"{q}.interval_t2")
            self.estimators[s].append(e)
        if not self.estimators[s]:
            r.fail(f"{p}.estimators", "no estimator")
        if set(self.estimators[s]) & set(SHRINKAGE) and self.shrinkage is None:
            r.fail("$.shrinkage", f"scenario {s} lists shrunk estimators but the artifact has no prior")
        rl = r.obj(d, "recommended_learned", p)
        if rl.get("interval_t1") is not None:  # the served estimator's selection-aware T1 interval
            q = f"{p}.recommended_learned.interval_t1"
            self.served[s] = _interval(r, r.obj(rl, "interval_t1", f"{p}.recommended_learned"), q)
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
