"""Estimates of a new model from the artifact: :func:`evaluate_json` (the JSON-evaluable estimators),
:func:`evaluate_artifact` (every estimator, the learned ones from ``learned_models.npz``) and
:func:`estimate_from_artifact` (the recommended estimators for one model's answers). All of them run the
predictor's own estimation steps on the artifact's state (:class:`.model.ArtifactModel`); nothing is unpickled."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from ..estimation.names import JOINT, PER_SCENARIO
from ..estimation.shrinkage import SHRINKAGE
from ..estimation.table import ESTIMATE_VALUES
from .answers import AnswerError, _prepare_answers, read_answers
from .files import attach_trees, load_artifact, load_model
from .format import TREES_FILE, ArtifactError, check_format


def evaluate_json(artifact: dict, Ya: dict[str, np.ndarray], estimators: Iterable[str] | None = None) -> dict:
    """JSON-only estimates, vectorized over models (the tree file is not read).

    Ya : {scenario: (M, n_s) anchor answers in the artifact's anchor order, NaN = unanswered} for every
    scenario of ``scenario_order`` (an unanswered scenario is all NaN).

    Returns {(scenario, estimator): {estimate, lower, upper, estimate_t2, lower_t2, upper_t2: (M,)}}; a model
    that answered none of a scenario's anchors gets NaN there.
    """
    return load_model(artifact, learned=False).evaluate(Ya, None if estimators is None else set(estimators))


def evaluate_artifact(artifact: dict, Ya: dict[str, np.ndarray], estimators: Iterable[str] | None = None) -> dict:
    """Like :func:`evaluate_json`, with the learned estimators (gbm, gbm_joint, stacks over them) too, their
    regressors read from ``learned_models.npz``. Raises ArtifactError when the artifact has learned regressors
    and the tree file is absent, foreign or malformed."""
    model = load_model(artifact, learned=True)
    if model is None:
        raise ArtifactError(
            f"{TREES_FILE} is not beside the artifact's JSON: the learned estimators cannot be computed"
        )
    return model.evaluate(Ya, None if estimators is None else set(estimators))


# ====================================================================== estimation
COLUMNS = ["scenario", "estimator", "estimator_t2", "answered", "n_anchors", *ESTIMATE_VALUES, "source"]


def _estimators(art: dict, model, answered: list, estimator: str | None, pick: str, notes: list) -> tuple:
    """(model, {scenario: (T1, T2 estimator)}, {scenario: JSON-evaluable names}): the recommended (``pick``) or
    forced estimators; the trees attached when one of them needs them, else the best JSON-evaluable ones (noted)."""
    want = {
        s: (estimator, estimator)
        if estimator is not None
        else (art["scenarios"][s][pick]["t1"], art["scenarios"][s][pick]["t2"])
        for s in answered
    }
    json_ok = {s: model.json_names(s) & set(model.estimators[s]) for s in answered}
    if any(e not in json_ok[s] for s in answered for e in want[s]):
        learned = attach_trees(art, model)
        if learned is not None:
            model = learned
        elif estimator is not None:
            names = sorted(set().union(*json_ok.values()))
            raise AnswerError(
                f"estimator {estimator!r} is not evaluable from the JSON (JSON estimators: "
                f"{', '.join(names)}) and {TREES_FILE} is not available"
            )
        else:
            notes.append(f"{TREES_FILE} not available: learned estimators replaced by the best JSON-evaluable ones")
            for s in answered:
                d = art["scenarios"][s]["recommended"]
                want[s] = tuple(e if e in json_ok[s] else d[t] for e, t in zip(want[s], ("t1", "t2")))
    ok = {
        s: (model.learned_names(s) if model.trees is not None else model.json_names(s)) & set(model.estimators[s])
        for s in answered
    }
    bad = [s for s in answered if any(e not in ok[s] for e in want[s])]
    if bad:
        raise AnswerError(f"estimator {estimator!r} is not available for scenario(s) {bad}")
    return model, want, json_ok


def estimate_from_artifact(
    artifact,
    answers,
    *,
    use_learned: bool = True,
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
    use_learned : use the recommended estimator among ALL estimators (possibly learned: gbm, stacks over it,
        computed from ``learned_models.npz``); otherwise, or when that file is not beside the JSON, the
        recommended JSON-evaluable estimator.
    estimator : force one estimator for T1 and T2 (a JSON one, or a learned one when the tree file is there).
    allow_missing : allow a scenario with some anchors unanswered (they are left out; the anchor weights are
        renormalized, IRT abilities use the answered ones). A scenario with no answer at all is always skipped.
    allow_extra : ignore answered pool items that are not anchors (items unknown to the leaderboard are
        always an error).

    Returns
    -------
    DataFrame, one row per answered scenario: scenario, estimator (T1), estimator_t2, answered, n_anchors,
    estimate, lower, upper (pool accuracy, 1 - alpha interval), estimate_t2, lower_t2, upper_t2 (full-benchmark
    score), source ("json" or "learned_models.npz"). ``df.attrs["notes"]`` lists skipped scenarios and fallbacks.

    Raises AnswerError (a ValueError) for unusable answers, ArtifactError for an unusable artifact. Nothing is
    ever unpickled.
    """
    art = load_artifact(artifact) if isinstance(artifact, (str, Path)) else artifact
    check_format(art)
    model = load_model(art, learned=False)  # every field checked
    answers = _checked_answers(answers, estimator)
    Ya, answered, notes = _prepare_answers(art, answers, allow_missing, allow_extra)
    pick = "recommended_learned" if use_learned else "recommended"
    model, want, json_ok = _estimators(art, model, answered, estimator, pick, notes)
    rules = {s: model.steps["frontier"].rule(model.n, s, "tinybench") if estimator is None else None for s in answered}
    extra = {e for rule in rules.values() if rule is not None for e in (rule.position, rule.t1[1])}
    res = model.evaluate(Ya, {e for pair in want.values() for e in pair} | extra)
    rows = []
    for s in answered:
        (e1, e2), d = want[s], art["scenarios"][s]
        r1, r2 = res[(s, e1)], res[(s, e2)]
        src = ["json" if e in json_ok[s] else TREES_FILE for e in (e1, e2)]
        lo, up = r1["lower"], r1["upper"]
        if estimator is None and pick == "recommended_learned" and e1 == d[pick]["t1"]:
            # the served estimator's selection-aware interval, where the artifact has one
            lo, up = model.steps["served"].predict(model.n, s, "tinybench", r1["estimate"], (lo, up))
        row = {
            "scenario": s,
            "estimator": e1,
            "estimator_t2": e2,
            "answered": int(np.isfinite(Ya[s]).sum()),
            "n_anchors": len(d["anchors"]["items"]),
            "estimate": float(r1["estimate"][0]),
            "lower": float(lo[0]),
            "upper": float(up[0]),
            **{k: float(r2[k][0]) for k in ("estimate_t2", "lower_t2", "upper_t2")},
            "source": src[0] if src[0] == src[1] else "+".join(src),
        }
        rows.append(_beyond_board(row, rules[s], res, s, notes))
    if any(r["source"] == "json (beyond the board)" for r in rows):
        notes.append(ADAPTIVE_HINT)
    df = pd.DataFrame(rows, columns=COLUMNS)
    df.attrs["notes"] = notes
    df.attrs["leaderboard"] = art.get("leaderboard")
    df.attrs["n"] = art["n"]
    df.attrs["clustering"] = art["clustering"]
    return df


def _checked_answers(answers, estimator: str | None) -> dict:
    """The answers as {item: score} (a path is read with :func:`read_answers`); AnswerError for anything else or an
    unknown ``estimator``."""
    if isinstance(answers, (str, Path)):
        answers = read_answers(answers)
    if not isinstance(answers, dict):
        raise AnswerError(f"answers must be a dict {{item: score}} or a file path, got {type(answers).__name__}")
    if estimator is not None and estimator not in (*PER_SCENARIO, *JOINT, *SHRINKAGE):
        raise AnswerError(
            f"unknown estimator {estimator!r}; choose one of {', '.join((*PER_SCENARIO, *JOINT, *SHRINKAGE))}"
        )
    return answers


ADAPTIVE_HINT = (
    "a model beyond the board is estimated more closely by an adaptive test, item by item, where you can run one "
    "(`tinybench adaptive`; docs/estimate.md, 'A model stronger than the board')"
)


def _twin_free_words(rule) -> str:
    """The note's words on twins: that the rule's intervals were fitted on models with no twin on the board where
    they were (fewer models than it was chosen on); nothing where every model was used (too few twin-free ones, or
    an artifact written before the count existed)."""
    return " that have no twin on the board" if rule.n_calibration < rule.n_models else ""


def _beyond_board(row: dict, rule, res: dict, s: str, notes: list) -> dict:
    """``row`` with the frontier ``rule``'s estimate, interval and full score where the model's position (its
    ``rule.position`` estimate) is at or above the rule's threshold, and a note saying so; else ``row``."""
    if rule is None:
        return row
    pos = res[(s, rule.position)]["estimate"]
    if not rule.beyond(pos)[0]:
        return row
    board_t2 = (np.array([row["lower_t2"]], dtype=float), np.array([row["upper_t2"]], dtype=float))
    served = rule.serve(res[(s, rule.t1[1])]["estimate"], pos, board_t2)
    notes.append(
        f"{s}: the answers place this model beyond the board's models (its {rule.position} estimate "
        f"{100 * float(pos[0]):.1f} % is at or above {100 * rule.threshold:.1f} %, where the board's strongest models "
        f"start): served {rule.t1[1]} with the interval made for such models (fitted on {rule.n_calibration} of the "
        f"board's validation models beyond it{_twin_free_words(rule)}), which also spans the {rule.position} "
        f"estimate's own interval; the full score's interval also spans {row['estimator_t2']}'s, the board's"
    )
    out = {**row, "estimator": rule.t1[1], "estimator_t2": rule.t1[1], "source": "json (beyond the board)"}
    return {**out, **{k: float(v[0]) for k, v in served.items()}}
