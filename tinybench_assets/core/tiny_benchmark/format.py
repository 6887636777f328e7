"""The format of the portable tiny benchmark: its layout, version tag, float encoding, and how the
artifact folder is saved and loaded (:func:`save_artifact`, :func:`load_artifact`, :func:`load_predictor`).

The artifact of one leaderboard is a folder::

    tiny_benchmark.json   everything the JSON-evaluable estimators need (format FORMAT, see below)
    predictor.pkl         the pickled predictor, for the learned estimators (gbm, gbm_joint, stacks over
                          them); the JSON records its sha256 and nothing is unpickled unless it matches


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

import json
import math
import pickle
from pathlib import Path
from typing import Any

import numpy as np

from ...hashing import file_sha256

FORMAT_NAME = "tinybench.tiny_benchmark"
FORMAT_VERSION = 1
FORMAT = f"{FORMAT_NAME}/{FORMAT_VERSION}"
JSON_FILE = "tiny_benchmark.json"
PICKLE_FILE = "predictor.pkl"

#: estimators computed from the JSON alone (stacks too when all their members are among these)
JSON_BASE = ("anchor", "irt", "pirt", "gpirt", "gpirt_val", "irt_joint", "pirt_joint", "gpirt_joint", "gpirt_val_joint")


class ArtifactError(ValueError):
    """The artifact is missing, malformed, of another format version, or its predictor pickle does not match."""


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
