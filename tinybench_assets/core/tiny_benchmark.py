"""Export a fitted :class:`~tinybench_assets.core.predictor.AnchorPredictor` as a self-contained tiny
benchmark, and estimate a NEW model's accuracy from its answers to the anchors, offline.

The artifact of one leaderboard is a folder::

    tiny_benchmark.json   everything the JSON-evaluable estimators need (format FORMAT, see below)
    predictor.pkl         the pickled predictor, for the learned estimators (gbm, gbm_joint, stacks over
                          them); the JSON records its sha256 and nothing is unpickled unless it matches

This is tinyBenchmarks' ``evaluate()`` for any leaderboard tinybench has learned: a model answers the
``n`` anchor items of every scenario, and :func:`estimate_from_artifact` returns, per scenario, its
estimated balance-weighted accuracy on the scenario's item pool (T1) and its full-benchmark score (T2),
each with a split-conformal interval.

JSON layout (``format = "tinybench.tiny_benchmark/1"``)::

    format, leaderboard, created, n, clustering, clustering_source ("selected" | "given"), alpha,
    interval_scale, scenario_order [s, ...], irt_dims {scenario | "joint": D}, training {fit_models,
    validation_models, seed}, binarization (as given to the export, informational), predictor {file, sha256,
    learned_estimators [...]}, json_estimators [...],
    scenarios {s: {
        n_items, items [pool item ids], balance_weights [per pool item],
        anchors {items [ids], local [pool index], weights [sum 1], texts [str | null]},
        irt {sep {a [[D]] per pool item, b}, joint {a, b} (the joint fit's rows of this scenario's items)},
        lambdas {sep {tutorial, validation}, joint {...}, b_sep, b_joint, v},
        stacks {name: {members, w_t1, w_t2}}        (only stacks whose members are all JSON-evaluable),
        estimators {name: {val_mae_t1, val_mae_t2, n_val, interval_t1 {alpha, scale, floor, lo, hi, q_lo,
                     q_hi, n}, calibration_t2 {x, y, y_min, y_max} | null, interval_t2 {...} | null}},
        recommended {t1, t2}                          (best JSON-evaluable on validation models),
        recommended_learned {t1, t2}                  (best of all estimators: the predictor's tinybench
                                                       selection when the clustering is the selected one)
    }}

Non-finite floats are written as ``null`` (NaN) or the strings ``"inf"`` / ``"-inf"``, so the file is
strict JSON. Everything is chosen on the predictor's training models (its validation table); test models
are never looked at. Pure python / numpy / pandas: no Dagster, no DuckDB.
"""
from __future__ import annotations

import csv
import io
import json
import math
import pickle
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from . import estimators as est
from .calibration import ConformalInterval, IsotonicCalibrator
from .irt import estimate_ability, item_curve
from .predictor import JOINT, PER_SCENARIO, STACKS
from ..hashing import file_sha256

FORMAT_NAME = "tinybench.tiny_benchmark"
FORMAT_VERSION = 1
FORMAT = f"{FORMAT_NAME}/{FORMAT_VERSION}"
JSON_FILE = "tiny_benchmark.json"
PICKLE_FILE = "predictor.pkl"

#: estimators computed from the JSON alone (stacks too when all their members are among these)
JSON_BASE = ("anchor", "irt", "pirt", "gpirt", "gpirt_val", "irt_joint", "pirt_joint", "gpirt_joint", "gpirt_val_joint")

__all__ = [
    "FORMAT", "JSON_BASE", "ArtifactError", "AnswerError", "export_tiny_benchmark", "save_artifact", "load_artifact",
    "load_predictor", "read_answers", "estimate_from_artifact", "evaluate_json", "anchor_list", "artifact_tables",
]


class ArtifactError(ValueError):
    """The artifact is missing, malformed, of another format version, or its predictor pickle does not match."""


class AnswerError(ValueError):
    """The answers are unusable: unknown or missing items, scores that are not numbers in [0, 1], empty, ..."""


# ====================================================================== JSON float helpers
def _enc(x) -> Any:
    """A float for strict JSON: NaN -> None, +-inf -> "inf" / "-inf"."""
    x = float(x)
    if math.isnan(x):
        return None
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _dec(x) -> float:
    if x is None:
        return float("nan")
    if isinstance(x, str):
        if x in ("inf", "-inf"):
            return float(x)
        raise ArtifactError(f"artifact holds {x!r} where a number was expected")
    return float(x)


def _enc_list(a) -> list:
    return [_enc(v) for v in np.asarray(a, dtype=float).ravel()]


def _enc_matrix(a) -> list:
    a = np.asarray(a, dtype=float)
    return [[_enc(v) for v in row] for row in a]


def _arr(x) -> np.ndarray:
    return np.array([_dec(v) for v in x], dtype=float)


def _mat(x) -> np.ndarray:
    return np.array([[_dec(v) for v in row] for row in x], dtype=float)


# ====================================================================== export
def _json_evaluable(name: str, stacks: dict) -> bool:
    if name in JSON_BASE:
        return True
    st = stacks.get(name)
    return st is not None and all(m in JSON_BASE for m in st["members"])


def _interval(ci: ConformalInterval | None) -> dict | None:
    if ci is None:
        return None
    return {"alpha": float(ci.alpha), "scale": ci.scale, "floor": float(ci.floor), "lo": float(ci.lo),
            "hi": float(ci.hi), "q_lo": _enc(ci.q_lo_), "q_hi": _enc(ci.q_hi_), "n": int(getattr(ci, "n_", 0))}


def _calibration(cal: IsotonicCalibrator | None) -> dict | None:
    if cal is None:
        return None
    iso = cal.iso_
    return {"x": _enc_list(iso.X_thresholds_), "y": _enc_list(iso.y_thresholds_),
            "y_min": _enc(cal.y_min), "y_max": _enc(cal.y_max)}


def _best(rows: pd.DataFrame) -> dict:
    """{t1, t2}: lowest validation MAE (T2 falls back to T1's choice when no T2 MAE exists). Same tie rule
    (first row) as the predictor's selection."""
    r1 = rows.loc[rows.val_mae_t1.idxmin()]
    r2rows = rows.dropna(subset=["val_mae_t2"])
    r2 = r2rows.loc[r2rows.val_mae_t2.idxmin()] if len(r2rows) else r1
    return {"t1": str(r1.estimator), "t2": str(r2.estimator)}


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
    dict in the layout of this module's docstring. ``predictor.sha256`` is filled by :func:`save_artifact`.
    """
    p = predictor
    if not hasattr(p, "anchors_"):
        raise ArtifactError("the predictor is not fitted")
    if int(n) not in p.n_values:
        raise ArtifactError(f"n={n} was not prepared by the predictor (it has n_values={list(p.n_values)})")
    n = int(n)
    scenarios = list(p.scenarios_)
    c_sel = p.selection_[(n, scenarios[0], "tinybench")]["t1"][0]
    if clustering is None:
        clustering, source = c_sel, "selected"
    else:
        if clustering not in p.clusterings:
            raise ArtifactError(f"clustering {clustering!r} was not prepared (have {list(p.clusterings)})")
        source = "given"
    c = clustering
    texts = item_texts or {}
    v = p.validation_
    v = v[(v.clustering == c) & (v.n == n)]
    json_names: set[str] = set()
    out_sc = {}
    for s in scenarios:
        cols = p.cols_[s]
        A = p.anchors_[(c, n, s)]
        ps, pj = p.irt_[s], p.irt_["joint"]
        stacks = {name: st for (cc, nn, ss, name), st in p.stacks_.items() if (cc, nn, ss) == (c, n, s)}
        vs = v[v.scenario == s]
        ests = {}
        for r in vs.itertuples(index=False):
            e = r.estimator
            if not _json_evaluable(e, stacks):
                continue
            key = (c, n, s, e)
            ests[e] = {
                "val_mae_t1": _enc(r.val_mae_t1), "val_mae_t2": _enc(r.val_mae_t2), "n_val": int(r.n_val),
                "interval_t1": _interval(p.int_t1_.get(key)),
                "calibration_t2": _calibration(p.t2_cal_.get(key)),
                "interval_t2": _interval(p.int_t2_.get(key)),
            }
        json_names |= set(ests)
        if not ests:
            raise ArtifactError(f"scenario {s!r}: no JSON-evaluable estimator in the predictor's validation table")
        if c == c_sel:
            sel = p.selection_[(n, s, "tinybench")]
            learned = {"t1": sel["t1"][1], "t2": sel["t2"][1]}
        else:
            learned = _best(vs)
        lam = {fit: {k: _enc(x) for k, x in p.lambdas_[(c, n, s, fit)].items()} for fit in ("sep", "joint")}
        lam.update(b_sep=_enc(p.b_[("sep", s)]), b_joint=_enc(p.b_[("joint", s)]), v=_enc(p.v_[s]))
        out_sc[s] = {
            "n_items": int(len(cols)),
            "items": [str(p.items_[j]) for j in cols],
            "balance_weights": _enc_list(p.w_[cols]),
            "anchors": {
                "items": [str(p.items_[j]) for j in A.items],
                "local": [int(i) for i in A.local],
                "weights": _enc_list(A.weights),
                "texts": [texts.get(p.items_[j]) for j in A.items],
            },
            "irt": {"sep": {"a": _enc_matrix(ps.a), "b": _enc_list(ps.b)},
                    "joint": {"a": _enc_matrix(pj.a[cols]), "b": _enc_list(pj.b[cols])}},
            "lambdas": lam,
            "stacks": {name: {"members": list(st["members"]), "w_t1": _enc_list(st["w_t1"]), "w_t2": _enc_list(st["w_t2"])}
                       for name, st in stacks.items() if _json_evaluable(name, stacks)},
            "estimators": ests,
            "recommended": _best(vs[vs.estimator.isin(list(ests))]),
            "recommended_learned": learned,
        }
    learned_names = sorted({e for s in scenarios for e in out_sc[s]["recommended_learned"].values()} - json_names)
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
        "irt_dims": {k: int(p.irt_[k].dim) for k in [*scenarios, "joint"]},
        "training": {"fit_models": int(p.n_fit_), "validation_models": int(p.n_val_), "seed": int(p.seed)},
        "binarization": binarization,
        "json_estimators": sorted(json_names),
        "predictor": {"file": PICKLE_FILE, "sha256": None, "learned_estimators": learned_names},
        "scenarios": out_sc,
    }


# ====================================================================== save / load
def save_artifact(artifact: dict, predictor, folder) -> Path:
    """Write ``folder/predictor.pkl`` (when a predictor is given) and ``folder/tiny_benchmark.json``.

    The JSON records the pickle's sha256 (``predictor.sha256``; null without a predictor). Both files are
    written to temporary names and renamed, so a reader never sees half a file. Returns the JSON path.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    art = {k: v for k, v in artifact.items() if not k.startswith("_")}
    art["predictor"] = dict(art.get("predictor") or {"file": PICKLE_FILE})
    if predictor is not None:
        pkl = folder / art["predictor"].get("file", PICKLE_FILE)
        tmp = pkl.with_name(pkl.name + ".tmp")
        with open(tmp, "wb") as fh:
            pickle.dump(predictor, fh, protocol=pickle.HIGHEST_PROTOCOL)
        tmp.replace(pkl)
        art["predictor"]["sha256"] = file_sha256(pkl)
    else:
        art["predictor"]["sha256"] = None
    path = folder / JSON_FILE
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(art, allow_nan=False, ensure_ascii=False, indent=1))
    tmp.replace(path)
    return path


def _check_format(art) -> None:
    if not isinstance(art, dict):
        raise ArtifactError("artifact is not a JSON object")
    fmt = art.get("format")
    if not isinstance(fmt, str) or "/" not in fmt or fmt.rsplit("/", 1)[0] != FORMAT_NAME:
        raise ArtifactError(f"not a tinybench tiny benchmark (format {fmt!r}, expected {FORMAT!r})")
    ver = fmt.rsplit("/", 1)[1]
    if ver != str(FORMAT_VERSION):
        raise ArtifactError(f"artifact format version {ver} is not supported (this tinybench reads version {FORMAT_VERSION})")
    for key in ("n", "clustering", "scenario_order", "scenarios"):
        if key not in art:
            raise ArtifactError(f"artifact lacks the key {key!r}")


def load_artifact(path) -> dict:
    """Read a tiny benchmark from its folder or its JSON file; checks the format tag and version.

    The returned dict carries ``_folder`` (where ``predictor.pkl`` is looked for)."""
    path = Path(path)
    file = path / JSON_FILE if path.is_dir() else path
    if not file.is_file():
        why = " (the folder holds no tiny_benchmark.json)" if path.is_dir() else ""
        raise ArtifactError(f"{file}: no tiny benchmark there{why}")
    try:
        art = json.loads(file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ArtifactError(f"{file}: not valid JSON ({e})") from None
    try:
        _check_format(art)
    except ArtifactError as e:
        raise ArtifactError(f"{file}: {e}") from None
    art["_folder"] = str(file.parent)
    return art


def load_predictor(artifact: dict):
    """Unpickle the predictor stored beside the artifact's JSON, after checking its sha256.

    Returns None when the artifact records no pickle or the file is absent; raises ArtifactError when the
    file's hash differs from the recorded one (the pickle does not belong to this JSON)."""
    info = artifact.get("predictor") or {}
    sha, folder = info.get("sha256"), artifact.get("_folder")
    if not sha or not folder:
        return None
    pkl = Path(folder) / info.get("file", PICKLE_FILE)
    if not pkl.is_file():
        return None
    got = file_sha256(pkl)
    if got != sha:
        raise ArtifactError(f"{pkl}: sha256 {got[:12]}... differs from the {sha[:12]}... recorded in {JSON_FILE}; "
                            "re-export the artifact (or pass use_learned=False)")
    try:
        with open(pkl, "rb") as fh:
            return pickle.load(fh)
    except Exception as e:  # e.g. pickled by another version of scikit-learn / tinybench
        raise ArtifactError(f"{pkl}: cannot be unpickled ({type(e).__name__}: {e}); use the JSON estimators "
                            "(use_learned=False / --no-learned)") from None


# ====================================================================== answers
def _score(value, where: str) -> float:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        x = float(value)
    elif isinstance(value, str):
        if not value.strip():
            raise AnswerError(f"{where}: empty score (leave out the item instead of an empty score)")
        try:
            x = float(value)
        except ValueError:
            raise AnswerError(f"{where}: score {value!r} is not a number") from None
    else:
        raise AnswerError(f"{where}: score {value!r} is not a number")
    if not math.isfinite(x):
        raise AnswerError(f"{where}: score {value!r} is not a finite number")
    if not 0.0 <= x <= 1.0:
        raise AnswerError(f"{where}: score {x:g} is outside [0, 1] (binarize it as the leaderboard does)")
    return x


def _no_dups(pairs):
    seen = {}
    for k, v in pairs:
        if k in seen:
            raise AnswerError(f"item {k!r} appears twice")
        seen[k] = v
    return seen


def read_answers(path) -> dict[str, float]:
    """A new model's answers from a file: {item id: score in [0, 1]}.

    Accepted: CSV with a header holding ``item`` and ``score`` columns (others are ignored), a JSON object
    ``{item: score}``, or a JSON list ``[{"item": ..., "score": ...}, ...]``. Errors (AnswerError) name the file
    and the row or entry.
    """
    path = Path(path)
    if not path.is_file():
        raise AnswerError(f"{path}: no such file")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise AnswerError(f"{path}: not a UTF-8 text file ({e})") from None
    if not text.strip():
        raise AnswerError(f"{path}: the file is empty")
    out: dict[str, float] = {}
    if path.suffix.lower() == ".json" or text.lstrip()[:1] in "{[":
        try:
            data = json.loads(text, object_pairs_hook=_no_dups)
        except json.JSONDecodeError as e:
            raise AnswerError(f"{path}: not valid JSON ({e})") from None
        except AnswerError as e:
            raise AnswerError(f"{path}: {e}") from None
        if isinstance(data, dict):
            for k, v in data.items():
                out[str(k)] = _score(v, f"{path}: item {k!r}")
        elif isinstance(data, list):
            for i, rec in enumerate(data):
                where = f"{path}: entry {i}"
                if not isinstance(rec, dict) or "item" not in rec or "score" not in rec:
                    raise AnswerError(f"{where}: expected an object with 'item' and 'score'")
                k = str(rec["item"])
                if k in out:
                    raise AnswerError(f"{where}: item {k!r} appears twice")
                out[k] = _score(rec["score"], f"{where} (item {k!r})")
        else:
            raise AnswerError(f"{path}: expected a JSON object {{item: score}} or a list of {{item, score}} objects")
    else:
        reader = csv.DictReader(io.StringIO(text))
        fields = [f.strip().lower() for f in (reader.fieldnames or [])]
        if "item" not in fields or "score" not in fields:
            raise AnswerError(f"{path}: the CSV needs a header with 'item' and 'score' columns (found {reader.fieldnames})")
        reader.fieldnames = fields
        for rec in reader:
            row = reader.line_num
            k = (rec.get("item") or "").strip()
            if not k:
                raise AnswerError(f"{path}, row {row}: empty item id")
            if k in out:
                raise AnswerError(f"{path}, row {row}: item {k!r} appears twice")
            out[k] = _score((rec.get("score") or "").strip(), f"{path}, row {row} (item {k!r})")
    if not out:
        raise AnswerError(f"{path}: no answers in the file")
    return out


def _few(xs: Iterable, k: int = 5) -> str:
    xs = list(xs)
    s = ", ".join(repr(x) for x in xs[:k])
    return s + (f", ... ({len(xs)} in all)" if len(xs) > k else "")


def _prepare_answers(art: dict, answers: dict, allow_missing: bool, allow_extra: bool):
    """Anchor answer arrays {scenario: (1, n_s) with NaN = unanswered}, answered scenarios and notes."""
    if answers is None or len(answers) == 0:
        raise AnswerError("no answers given")
    where = {}
    for s in art["scenario_order"]:
        for i, item in enumerate(art["scenarios"][s]["anchors"]["items"]):
            where[item] = (s, i)
    unknown = [k for k in answers if k not in where]
    notes = []
    if unknown:
        pool = {it for s in art["scenario_order"] for it in art["scenarios"][s]["items"]}
        in_pool = [k for k in unknown if k in pool]
        foreign = [k for k in unknown if k not in pool]
        if foreign or not allow_extra:
            msg = (f"{len(unknown)} answered item(s) are not anchors of the {art.get('leaderboard', '?')} tiny benchmark "
                   f"(n={art['n']}): {_few(unknown)}")
            if in_pool:
                msg += f"; {len(in_pool)} of them are pool items that are not anchors"
            if foreign:
                msg += f"; {len(foreign)} are not items of this leaderboard at all"
            raise AnswerError(msg + " (list the anchors with `tinybench anchors`)")
        notes.append(f"ignored {len(in_pool)} answered pool item(s) that are not anchors")
    Ya, answered = {}, []
    for s in art["scenario_order"]:
        items = art["scenarios"][s]["anchors"]["items"]
        y = np.full((1, len(items)), np.nan)
        for i, item in enumerate(items):
            if item in answers:
                y[0, i] = _score(answers[item], f"item {item!r}")
        k = int(np.isfinite(y).sum())
        if k == 0:
            notes.append(f"scenario {s!r}: no anchor answered, skipped")
        elif k < len(items):
            miss = [it for it, val in zip(items, y[0]) if not np.isfinite(val)]
            if not allow_missing:
                raise AnswerError(f"scenario {s!r}: {len(miss)} of {len(items)} anchors not answered ({_few(miss, 3)}); "
                                  "answer every anchor or allow missing ones (allow_missing=True / --allow-missing)")
            notes.append(f"scenario {s!r}: {len(miss)} of {len(items)} anchors not answered; estimated from the rest")
            answered.append(s)
        else:
            answered.append(s)
        Ya[s] = y
    return Ya, answered, notes


# ====================================================================== JSON evaluator
def _ci(d: dict | None) -> ConformalInterval | None:
    if d is None:
        return None
    ci = ConformalInterval(alpha=float(d["alpha"]), scale=d["scale"], floor=float(d["floor"]), lo=float(d["lo"]), hi=float(d["hi"]))
    ci.q_lo_, ci.q_hi_, ci.n_ = _dec(d["q_lo"]), _dec(d["q_hi"]), int(d.get("n", 0))
    return ci


def _iso(d: dict | None):
    """An IsotonicCalibrator rebuilt from its stored thresholds (same interpolation as the fitted one)."""
    if d is None:
        return None
    x, y = _arr(d["x"]), _arr(d["y"])
    if len(x) == 1:  # a constant map
        const = float(y[0])
        return lambda e: np.where(np.isfinite(np.asarray(e, dtype=float)), const, np.nan)
    cal = IsotonicCalibrator(y_min=_dec(d["y_min"]), y_max=_dec(d["y_max"])).fit(x, y)
    iso = cal.iso_
    if not (np.array_equal(iso.X_thresholds_, x) and np.array_equal(iso.y_thresholds_, y)) and hasattr(iso, "_build_f"):
        # refitting an isotonic sequence may move a plateau by an ulp; pin the stored thresholds exactly
        iso.X_thresholds_, iso.y_thresholds_ = x, y
        iso.X_min_, iso.X_max_ = float(x[0]), float(x[-1])
        iso._build_f(x, y)
    return cal.transform


def evaluate_json(artifact: dict, Ya: dict[str, np.ndarray], estimators: Iterable[str] | None = None) -> dict:
    """JSON-only estimates, vectorized over models.

    Ya : {scenario: (M, n_s) anchor answers in the artifact's anchor order, NaN = unanswered} for every
    scenario of ``scenario_order`` (an unanswered scenario is all NaN). The computation is the predictor's own
    (``AnchorPredictor._features`` / ``_compose`` / ``_apply_stacks`` / ``_finish``) on the stored parameters.

    Returns {(scenario, estimator): {estimate, lower, upper, estimate_t2, lower_t2, upper_t2: (M,)}}; a model
    that answered none of a scenario's anchors gets NaN there.
    """
    art = artifact
    order = art["scenario_order"]
    sc = {s: art["scenarios"][s] for s in order}
    loc = {s: np.asarray(sc[s]["anchors"]["local"], dtype=int) for s in order}
    aj = {s: _mat(sc[s]["irt"]["joint"]["a"]) for s in order}
    bj = {s: _arr(sc[s]["irt"]["joint"]["b"]) for s in order}
    Yall = np.hstack([np.asarray(Ya[s], dtype=float) for s in order])
    thj = estimate_ability(Yall, np.vstack([aj[s][loc[s]] for s in order]), np.concatenate([bj[s][loc[s]] for s in order]))
    out = {}
    for s in order:
        d = sc[s]
        wanted = list(d["estimators"]) if estimators is None else [e for e in estimators if e in d["estimators"]]
        if not wanted:
            continue
        w = _arr(d["balance_weights"])
        a, b = _mat(d["irt"]["sep"]["a"]), _arr(d["irt"]["sep"]["b"])
        Y = np.asarray(Ya[s], dtype=float)
        h = ~np.isnan(Y).all(1)
        Yz = np.where(np.isnan(Y), 0.0, Y)
        th = estimate_ability(Y, a[loc[s]], b[loc[s]])
        P = item_curve(th, a, b)
        Pj = item_curve(thj, aj[s], bj[s])
        vals = {
            "anchor": est.anchor_estimate(Y, _arr(d["anchors"]["weights"])),
            "irt": est.irt_estimate(P, w),
            "pirt": est.pirt_estimate(Yz, P, loc[s], w),
            "irt_joint": est.irt_estimate(Pj, w),
            "pirt_joint": est.pirt_estimate(Yz, Pj, loc[s], w),
        }
        full = {k: np.where(h, x, np.nan) for k, x in vals.items()}
        for fit, sfx in (("sep", ""), ("joint", "_joint")):
            lam = d["lambdas"][fit]
            full["gpirt" + sfx] = est.gpirt_estimate(full["anchor"], full["pirt" + sfx], _dec(lam["tutorial"]))
            full["gpirt_val" + sfx] = est.gpirt_estimate(full["anchor"], full["pirt" + sfx], _dec(lam["validation"]))
        t2in = {}
        for name in STACKS:  # the predictor's order
            st = d["stacks"].get(name)
            if st is None:
                continue
            X = np.column_stack([full[m] for m in st["members"]])
            full[name] = X @ _arr(st["w_t1"])
            t2in[name] = X @ _arr(st["w_t2"])
        for e in wanted:
            ed = d["estimators"][e]
            x = full[e]
            lo, up = _ci(ed["interval_t1"]).predict(x)
            cal = _iso(ed["calibration_t2"])
            if cal is None:
                e2 = lo2 = up2 = np.full(len(x), np.nan)
            else:
                e2 = cal(t2in.get(e, x))
                lo2, up2 = _ci(ed["interval_t2"]).predict(e2)
            out[(s, e)] = {"estimate": x, "lower": lo, "upper": up, "estimate_t2": e2, "lower_t2": lo2, "upper_t2": up2}
    return out


# ====================================================================== estimation
COLUMNS = ["scenario", "estimator", "estimator_t2", "answered", "n_anchors", "estimate", "lower", "upper",
           "estimate_t2", "lower_t2", "upper_t2", "source"]


def _learned_rows(predictor, art: dict, Ya: dict, needed: set[tuple[str, str]]) -> dict:
    """{(scenario, estimator): row} from ``predictor.estimate`` on a matrix that is NaN except the anchors."""
    c, n = art["clustering"], art["n"]
    if n not in getattr(predictor, "n_values", ()) or c not in getattr(predictor, "clusterings", ()):
        raise ArtifactError(f"the predictor was not fitted for n={n}, clustering {c!r}: it does not belong to this artifact")
    mine = {k: [str(i) for i in v] for k, v in predictor.anchor_items(c, n).items()}
    if any(mine.get(s) != art["scenarios"][s]["anchors"]["items"] for s in art["scenario_order"]):
        raise ArtifactError("the predictor's anchors differ from the artifact's: it does not belong to this artifact")
    items = list(predictor.items_)
    index = {str(it): j for j, it in enumerate(items)}
    Y = np.full((1, len(items)), np.nan)
    for s in art["scenario_order"]:
        for it, val in zip(art["scenarios"][s]["anchors"]["items"], Ya[s][0]):
            if it not in index:
                raise ArtifactError(f"anchor {it!r} is not an item of the pickled predictor; re-export the artifact")
            Y[0, index[it]] = val
    device = getattr(predictor, "device", "cpu")
    try:  # one model: the CPU is fast, and a predictor fitted on a GPU also runs where there is none
        predictor.device = "cpu"
        df = predictor.estimate(Y, ["new model"], n_values=[n])
    finally:
        predictor.device = device
    df = df[df.clustering == c]
    rows = {(r.scenario, r.estimator): r for r in df.itertuples(index=False)}
    return {k: rows[k] for k in needed if k in rows}


def estimate_from_artifact(
    artifact,
    answers,
    *,
    use_learned: bool = True,
    predictor=None,
    estimator: str | None = None,
    allow_missing: bool = False,
    allow_extra: bool = False,
) -> pd.DataFrame:
    """Estimated accuracy of a new model per scenario, from its answers to the anchors.

    Parameters
    ----------
    artifact : dict from :func:`export_tiny_benchmark` / :func:`load_artifact`, or a folder / JSON path.
    answers : {item id: score in [0, 1]} (scores taken as given: binarize them as the leaderboard does), or a
        path read with :func:`read_answers`.
    use_learned : use the recommended estimator among ALL estimators (possibly learned: gbm, stacks) when it
        needs the predictor and one is available (``predictor`` or the verified ``predictor.pkl`` beside the
        JSON); otherwise, or when no pickle is there, the recommended JSON-evaluable estimator.
    predictor : a fitted AnchorPredictor to use for learned estimators (skips loading the pickle).
    estimator : force one estimator for T1 and T2 (a JSON one, or a learned one when a predictor is there).
    allow_missing : allow a scenario with some anchors unanswered (they are left out; the anchor weights are
        renormalized, IRT abilities use the answered ones). A scenario with no answer at all is always skipped.
    allow_extra : ignore answered pool items that are not anchors (items unknown to the leaderboard are
        always an error).

    Returns
    -------
    DataFrame, one row per answered scenario: scenario, estimator (T1), estimator_t2, answered, n_anchors,
    estimate, lower, upper (pool accuracy, 1 - alpha interval), estimate_t2, lower_t2, upper_t2 (full-benchmark
    score), source ("json" or "predictor.pkl"). ``df.attrs["notes"]`` lists skipped scenarios and fallbacks.

    Raises AnswerError (a ValueError) for unusable answers, ArtifactError for an unusable artifact.
    """
    art = load_artifact(artifact) if isinstance(artifact, (str, Path)) else artifact
    _check_format(art)
    if isinstance(answers, (str, Path)):
        answers = read_answers(answers)
    if not isinstance(answers, dict):
        raise AnswerError(f"answers must be a dict {{item: score}} or a file path, got {type(answers).__name__}")
    if estimator is not None and estimator not in (*PER_SCENARIO, *JOINT):
        raise AnswerError(f"unknown estimator {estimator!r}; choose one of {', '.join((*PER_SCENARIO, *JOINT))}")
    Ya, answered, notes = _prepare_answers(art, answers, allow_missing, allow_extra)
    want: dict[str, tuple[str, str]] = {}
    for s in answered:
        d = art["scenarios"][s]
        if estimator is not None:
            want[s] = (estimator, estimator)
        elif use_learned:
            want[s] = (d["recommended_learned"]["t1"], d["recommended_learned"]["t2"])
        else:
            want[s] = (d["recommended"]["t1"], d["recommended"]["t2"])
    json_ok = {s: set(art["scenarios"][s]["estimators"]) for s in answered}
    need_pred = {s for s, (e1, e2) in want.items() if e1 not in json_ok[s] or e2 not in json_ok[s]}
    if need_pred and predictor is None and (use_learned or estimator is not None):
        predictor = load_predictor(art)
    if need_pred and predictor is None:
        if estimator is not None:
            raise AnswerError(f"estimator {estimator!r} is not evaluable from the JSON "
                              f"(JSON estimators: {', '.join(art.get('json_estimators', []))}) and no predictor.pkl is available")
        if use_learned:
            notes.append("predictor.pkl not available: learned estimators replaced by the best JSON-evaluable ones")
        for s in need_pred:
            d = art["scenarios"][s]
            e1, e2 = want[s]
            want[s] = (e1 if e1 in json_ok[s] else d["recommended"]["t1"], e2 if e2 in json_ok[s] else d["recommended"]["t2"])
        need_pred = set()
    if estimator is not None and predictor is None:
        bad = [s for s in answered if estimator not in json_ok[s]]
        if bad:
            raise AnswerError(f"estimator {estimator!r} is not available for scenario(s) {bad}")
    names = {e for pair in want.values() for e in pair}
    res = evaluate_json(art, Ya, [e for e in names if any(e in json_ok[s] for s in answered)])
    learned = {}
    if need_pred:
        learned = _learned_rows(predictor, art, Ya, {(s, e) for s in need_pred for e in want[s]})
    rows = []
    for s in answered:
        e1, e2 = want[s]
        part = {}
        src = []
        for e, cols in ((e1, ("estimate", "lower", "upper")), (e2, ("estimate_t2", "lower_t2", "upper_t2"))):
            if (s, e) in res:
                r = res[(s, e)]
                part.update({k: float(r[k][0]) for k in cols})
                src.append("json")
            elif (s, e) in learned:
                r = learned[(s, e)]
                part.update({k: float(getattr(r, k)) for k in cols})
                src.append(PICKLE_FILE)
            else:
                raise AnswerError(f"scenario {s!r}: estimator {e!r} gave no estimate")
        d = art["scenarios"][s]
        rows.append({"scenario": s, "estimator": e1, "estimator_t2": e2, "answered": int(np.isfinite(Ya[s]).sum()),
                     "n_anchors": len(d["anchors"]["items"]), **part,
                     "source": src[0] if src[0] == src[1] else "+".join(src)})
    df = pd.DataFrame(rows, columns=COLUMNS)
    df.attrs["notes"] = notes
    df.attrs["leaderboard"] = art.get("leaderboard")
    df.attrs["n"] = art["n"]
    df.attrs["clustering"] = art["clustering"]
    return df


# ====================================================================== views
def anchor_list(artifact: dict, with_text: bool = False) -> pd.DataFrame:
    """The items a new model must answer: scenario, item, weight (and text)."""
    rows = []
    for s in artifact["scenario_order"]:
        a = artifact["scenarios"][s]["anchors"]
        for i, (it, wt) in enumerate(zip(a["items"], a["weights"])):
            r = {"scenario": s, "item": it, "weight": _dec(wt)}
            if with_text:
                r["text"] = (a.get("texts") or [None] * len(a["items"]))[i]
            rows.append(r)
    return pd.DataFrame(rows)


def artifact_tables(artifact: dict) -> dict[str, pd.DataFrame]:
    """The artifact as flat tables (for the DuckDB store): ``tiny_benchmark`` (one row per scenario),
    ``tiny_benchmark_anchors`` (one row per anchor) and ``tiny_benchmark_estimators`` (one row per scenario x
    JSON-evaluable estimator, with calibration and interval parameters)."""
    art = artifact
    meta, anchors, ests = [], [], []
    for s in art["scenario_order"]:
        d = art["scenarios"][s]
        lam = d["lambdas"]
        meta.append({"scenario": s, "n": art["n"], "clustering": art["clustering"], "n_items": d["n_items"],
                     "recommended_t1": d["recommended"]["t1"], "recommended_t2": d["recommended"]["t2"],
                     "recommended_learned_t1": d["recommended_learned"]["t1"],
                     "recommended_learned_t2": d["recommended_learned"]["t2"],
                     "irt_dim": art["irt_dims"][s], "irt_dim_joint": art["irt_dims"]["joint"],
                     "lambda_tutorial": _dec(lam["sep"]["tutorial"]), "lambda_validation": _dec(lam["sep"]["validation"]),
                     "lambda_tutorial_joint": _dec(lam["joint"]["tutorial"]),
                     "lambda_validation_joint": _dec(lam["joint"]["validation"]),
                     "format": art["format"], "created": art.get("created"),
                     "predictor_sha256": (art.get("predictor") or {}).get("sha256")})
        a = d["anchors"]
        texts = a.get("texts") or [None] * len(a["items"])
        for i, (it, loc, wt) in enumerate(zip(a["items"], a["local"], a["weights"])):
            anchors.append({"scenario": s, "anchor": i, "item": it, "pool_index": int(loc), "weight": _dec(wt),
                            "text": texts[i]})
        for e, ed in d["estimators"].items():
            i1, i2, cal = ed["interval_t1"] or {}, ed["interval_t2"] or {}, ed["calibration_t2"]
            ests.append({"scenario": s, "estimator": e, "recommended_t1": e == d["recommended"]["t1"],
                         "recommended_t2": e == d["recommended"]["t2"], "val_mae_t1": _dec(ed["val_mae_t1"]),
                         "val_mae_t2": _dec(ed["val_mae_t2"]), "n_val": ed["n_val"],
                         "q_lo_t1": _dec(i1.get("q_lo")), "q_hi_t1": _dec(i1.get("q_hi")),
                         "q_lo_t2": _dec(i2.get("q_lo")), "q_hi_t2": _dec(i2.get("q_hi")),
                         "calibration_t2": json.dumps(cal) if cal else None})
    leaderboard = art.get("leaderboard")
    return {name: pd.DataFrame(rows).assign(leaderboard=leaderboard)
            for name, rows in (("tiny_benchmark", meta), ("tiny_benchmark_anchors", anchors),
                               ("tiny_benchmark_estimators", ests))}
