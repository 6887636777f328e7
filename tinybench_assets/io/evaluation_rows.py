"""A new model's estimate from its answers file, as ``tinybench estimate`` makes it, and the rows of the
``evaluations`` table that keep it.

:func:`estimate_answers` is the one path from (a tiny benchmark folder, an answers file) to the per-scenario
estimates: ``tinybench estimate`` prints it and the ``model_evaluation`` asset stores it, so the two agree by
construction. :func:`evaluation_rows` adds what the table records beside each scenario's estimate: the answers
counted and the anchors missing, the notes, and the tiny benchmark's version (the leaderboard's active drop ids and
the artifact's hash).
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import pandas as pd

#: the evaluations table's columns, in order (docs/schema.md)
EVALUATION_COLUMNS = (
    "leaderboard",
    "model",
    "scenario",
    "estimate",
    "lower",
    "upper",
    "estimate_t2",
    "lower_t2",
    "upper_t2",
    "estimator",
    "estimator_t2",
    "source",
    "n_answers",
    "n_anchors",
    "anchors_missing",
    "notes",
    "answers_path",
    "answers_sha256",
    "tiny_benchmark_version",
    "artifact_sha256",
    "drop_ids",
)


def budget_artifact(folder: Path, art: dict, answers: dict) -> tuple[dict, list[str]]:
    """The artifact of the largest prepared budget the answers cover (a small board's export; ``folder``: the
    artifact's folder or its JSON), else ``art``; and the note that says so."""
    from tinybench_assets.core.tiny_benchmark import load_artifact
    from tinybench_assets.core.tiny_benchmark.budgets import budget_for_answers, load_budgets

    budgets = load_budgets(folder)
    if budgets is None:
        return art, []
    chosen_folder = budget_for_answers(budgets, answers)
    if chosen_folder is None:
        return art, []
    chosen = load_artifact(chosen_folder)
    note = []
    if int(chosen["n"]) != int(art["n"]):
        note.append(f"answers cover the prepared budget n={chosen['n']}: scored with its anchors")
    return chosen, note


def estimate_answers(
    folder: Path | str,
    answers: dict,
    *,
    use_learned: bool = True,
    estimator: str | None = None,
    allow_missing: bool = False,
    allow_extra: bool = False,
) -> tuple[dict, pd.DataFrame]:
    """(the artifact that scored them, its per-scenario estimates) for ``answers`` ({item: score}) on the tiny
    benchmark in ``folder``; ``df.attrs["notes"]`` holds the notes. Raises AnswerError / ArtifactError."""
    from tinybench_assets.core.tiny_benchmark import estimate_from_artifact, load_artifact

    folder = Path(folder)
    art = load_artifact(folder)
    art, notes = budget_artifact(folder, art, answers)
    df = estimate_from_artifact(
        art,
        answers,
        use_learned=use_learned,
        estimator=estimator,
        allow_missing=allow_missing,
        allow_extra=allow_extra or bool(notes),
    )
    df.attrs["notes"] = notes + df.attrs.get("notes", [])
    return art, df


def artifact_sha256(folder: Path | str) -> str:
    """The tiny benchmark's content hash: its JSON and its tree file (when there is one)."""
    h = hashlib.sha256()
    for name in ("tiny_benchmark.json", "learned_models.npz"):
        path = Path(folder) / name
        if path.is_file():
            h.update(name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def tiny_benchmark_version(artifact_sha: str, drop_ids: list[str]) -> str:
    """A short id of the tiny benchmark an estimate came from: the artifact's hash and the leaderboard's drops."""
    return hashlib.sha256("\n".join([artifact_sha, *sorted(drop_ids)]).encode()).hexdigest()[:16]


def _finite(x):
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else x


def evaluation_rows(
    leaderboard: str, model: str, df: pd.DataFrame, *, answers_path: str, answers_sha: str, artifact_sha: str, drops
) -> pd.DataFrame:
    """The ``evaluations`` rows of one evaluation (``superseded`` and ``evaluated_at`` are the store's to set)."""
    drops = sorted(drops)
    version = tiny_benchmark_version(artifact_sha, drops)
    notes = " | ".join(df.attrs.get("notes", []))
    rows = [
        {
            "leaderboard": leaderboard,
            "model": model,
            "scenario": r["scenario"],
            **{k: _finite(float(r[k])) for k in ("estimate", "lower", "upper", "estimate_t2", "lower_t2", "upper_t2")},
            "estimator": r["estimator"],
            "estimator_t2": r["estimator_t2"],
            "source": r["source"],
            "n_answers": int(r["answered"]),
            "n_anchors": int(r["n_anchors"]),
            "anchors_missing": int(r["n_anchors"]) - int(r["answered"]),
            "notes": notes,
            "answers_path": answers_path,
            "answers_sha256": answers_sha,
            "tiny_benchmark_version": version,
            "artifact_sha256": artifact_sha,
            "drop_ids": ",".join(drops),
        }
        for r in df.to_dict("records")
    ]
    return pd.DataFrame(rows, columns=list(EVALUATION_COLUMNS))
