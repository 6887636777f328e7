"""The format of the portable tiny benchmark: its layout, version tag, float encoding and error type. Saving and
loading live in :mod:`.files`, the tree file's layout in :mod:`.trees`.

The artifact of one leaderboard is a folder with two files, and nothing in it is ever unpickled::

    tiny_benchmark.json   everything but the learned regressors (format FORMAT, see below)
    learned_models.npz    the learned estimators' gradient-boosted trees (and the answer bank of bank_joint) as
                          plain numeric arrays (layout in :mod:`.trees`), read without np.load and without pickle, every index checked; the JSON
                          records its sha256. Absent when the predictor has no learned estimator.

Any other file in the folder is ignored; in particular the pipeline keeps its own ``predictor.pkl`` (the fitted
AnchorPredictor, for internal use) in ``data/artifacts/<leaderboard>/`` beside the artifact, and no artifact
path reads it. Version 1 artifacts (which carried ``predictor.pkl`` for the learned estimators) are refused with
a request to re-export.

JSON layout (``format = "tinybench.tiny_benchmark/2"``)::

    format, leaderboard, created, n, clustering, clustering_source ("selected" | "given"), alpha,
    interval_scale, scenario_order [s, ...], irt_dims {scenario | "joint": D}, training {fit_models,
    validation_models, seed}, binarization (as given to the export, informational),
    json_estimators [...]                            (computed from the JSON alone, in some scenario)
    learned_estimators [...]                         (need learned_models.npz: gbm, gbm_joint, bank_joint, stacks
                                                      over them)
    learned {file ("learned_models.npz" | null), sha256 (| null), fit_learned (the predictor's ``learned``),
             models [{scenario, kind ("sep" | "joint"), target ("t1" | "t2"), n_features}]   (the file's order),
             bank {models: F, eps {scenario: eps}} | null    (bank_joint's fit models; arrays in the tree file)},
    scenarios {s: {
        n_items, items [pool item ids], balance_weights [per pool item],
        anchors {items [ids], local [pool index], weights [sum 1], texts [str | null],
                 linear {fill, coef, intercept} | null (the fit models' ridge map from the anchor answers to the pool
                 accuracy; its score is a learned-regressor feature)},
        irt {sep {a [[D]] per pool item, b}, joint {a, b} (the joint fit's rows of this scenario's items)},
        lambdas {sep {tutorial, validation}, joint {...}, b_sep, b_joint, v},
        stacks {name: {members, w_t1, w_t2}},
        estimators {name: {val_mae_t1, val_mae_t2, n_val, interval_t1 {alpha, scale, floor, lo, hi, q_lo,
                     q_hi, n}, calibration_t2 {x, y, y_min, y_max, slope?} | null, interval_t2 {...} | null}}
                                                      (every estimator of the clustering, learned ones too),
        recommended {t1, t2}                          (best JSON-evaluable on validation models),
        recommended_learned {t1, t2, interval_t1?}    (best of all estimators: the predictor's tinybench
                                                       selection when the clustering is the selected one;
                                                       interval_t1: its selection-aware T1 interval)
    }}

The learned regressors' features are the predictor's (``estimation.base_estimates.features``): per scenario ("sep")
the anchor answers, the rounded per-scenario abilities, then the anchors' rounded linear score when ``linear``
is given (anchors + D + 1 features), jointly ("joint") every scenario's anchor answers in scenario order, the
rounded joint abilities, then every scenario's linear score (all anchors + D_joint + scenarios with ``linear``).

Non-finite floats are written as ``null`` (NaN) or the strings ``"inf"`` / ``"-inf"``, so the file is
strict JSON. Everything is chosen on the predictor's training models (its validation table); test models
are never looked at. Pure python / numpy / pandas: no Dagster, no DuckDB.
"""

from __future__ import annotations

FORMAT_NAME = "tinybench.tiny_benchmark"
FORMAT_VERSION = 2
FORMAT = f"{FORMAT_NAME}/{FORMAT_VERSION}"
JSON_FILE = "tiny_benchmark.json"
TREES_FILE = "learned_models.npz"
#: the pipeline's internal pickle that may sit in the same folder; artifacts never read it
PICKLE_FILE = "predictor.pkl"

#: estimators computed from the JSON alone (stacks too when all their members are among these)
JSON_BASE = ("anchor", "irt", "pirt", "gpirt", "gpirt_val", "irt_joint", "pirt_joint", "gpirt_joint", "gpirt_val_joint")
# (a small board's artifact adds shrunk and shrunk_joint, computed from its "shrinkage" block: ArtifactModel.json_names)
#: estimators read from the tree file (the regressors; bank_joint and fill: the answer bank)
LEARNED_BASE = ("gbm", "gbm_joint", "bank_joint", "fill")


class ArtifactError(ValueError):
    """The artifact is missing, malformed, of another format version, or its tree file does not match."""


# ====================================================================== JSON floats (written by ..json_floats)
def _dec(x) -> float:
    if x is None:
        return float("nan")
    if isinstance(x, str):
        if x in ("inf", "-inf"):
            return float(x)
        raise ArtifactError(f"artifact holds {x!r} where a number was expected")
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ArtifactError(f"artifact holds {type(x).__name__} {str(x)[:40]!r} where a number was expected")
    return float(x)


def check_format(art) -> None:
    """The format tag and version (ArtifactError for another format, a version 1 artifact or another version)."""
    if not isinstance(art, dict):
        raise ArtifactError("artifact is not a JSON object")
    fmt = art.get("format")
    if not isinstance(fmt, str) or "/" not in fmt or fmt.rsplit("/", 1)[0] != FORMAT_NAME:
        raise ArtifactError(f"not a tinybench tiny benchmark (format {fmt!r}, expected {FORMAT!r})")
    ver = fmt.rsplit("/", 1)[1]
    if ver == "1":
        raise ArtifactError(
            "artifact format version 1 is not supported: it kept its learned estimators in a pickle, "
            "which this tinybench never loads; re-export the tiny benchmark (materialize the "
            "tiny_benchmark asset) to get a version 2 artifact"
        )
    if ver != str(FORMAT_VERSION):
        raise ArtifactError(
            f"artifact format version {ver} is not supported (this tinybench reads version {FORMAT_VERSION})"
        )
    for key in ("n", "clustering", "scenario_order", "scenarios"):
        if key not in art:
            raise ArtifactError(f"artifact lacks the key {key!r}")
