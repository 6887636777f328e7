"""What the ``model_evaluation`` asset computes for one evaluation file: the estimates ``tinybench estimate`` gives
(``io.evaluation_rows.estimate_answers``) as ``evaluations`` rows, or why the file is quarantined (unreadable,
foreign items, scores not in [0, 1], no anchor answered) or the evaluation waits (no tiny benchmark yet); and the
metadata the UI shows (the rows, the picture)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg
import pandas as pd

from tinybench_assets.io import plots
from tinybench_assets.io.evaluation_files import EvaluationFile
from tinybench_assets.io.evaluation_plots import board_rank, evaluation_picture
from tinybench_assets.io.evaluation_rows import artifact_sha256, estimate_answers, evaluation_rows
from tinybench_assets.io.landing import quarantine_file
from tinybench_assets.io.store import Store


@dataclass
class Evaluation:
    """One evaluation's outcome: its ``rows``, or why it was quarantined, or why it waits (``skipped``)."""

    rows: pd.DataFrame | None = None
    quarantined: str | None = None
    skipped: str | None = None
    notes: list[str] = field(default_factory=list)


def evaluate(db: Store, folder: Path, ev: EvaluationFile, answers_sha: str) -> Evaluation:
    """The evaluation of ``ev`` on the tiny benchmark in ``folder`` (its leaderboard's artifact folder), with the
    options ``tinybench estimate --allow-missing`` uses (missing anchors are counted, not fatal)."""
    from tinybench_assets.cli.answers import read_model_answers
    from tinybench_assets.core.tiny_benchmark import AnswerError

    if not (folder / "tiny_benchmark.json").is_file():
        return Evaluation(skipped=f"leaderboard {ev.leaderboard}: no tiny benchmark exported (yet) in {folder}")
    try:
        answers = read_model_answers(ev.path)
        _, df = estimate_answers(folder, answers, allow_missing=True)
    except AnswerError as e:
        return Evaluation(quarantined=f"{ev.relpath}: {e}")
    if df.empty:
        return Evaluation(quarantined=f"{ev.relpath}: no anchor of the {ev.leaderboard} tiny benchmark answered")
    rows = evaluation_rows(
        ev.leaderboard,
        ev.model,
        df,
        answers_path=ev.relpath,
        answers_sha=answers_sha,
        artifact_sha=artifact_sha256(folder),
        drops=db.board_drop_ids(ev.leaderboard),
    )
    return Evaluation(rows=rows, notes=list(df.attrs.get("notes", [])))


def same_version(db: Store, rows: pd.DataFrame) -> bool:
    """Whether the model's latest stored evaluation came from the same answers and the same tiny benchmark version:
    a re-run that reaches it (an upstream re-materialized to other data versions, the same artifact and drops) adds no
    history rows."""
    board, model = rows["leaderboard"].iloc[0], rows["model"].iloc[0]
    latest = db.evaluations(board, model)
    keys = ["answers_sha256", "tiny_benchmark_version"]
    return not latest.empty and latest[keys].drop_duplicates().values.tolist() == [rows[keys].iloc[0].tolist()]


def quarantine(db: Store, ev: EvaluationFile, incoming: Path, quarantine_dir: Path, reason: str, sha: str) -> str:
    """Move the evaluation file (or harness folder) to ``<quarantine>/evaluations/<leaderboard>/`` with its
    ``.error.txt``, and record it; returns where it went."""
    moved = quarantine_file(ev.path, incoming, quarantine_dir, reason)
    db.record_quarantine(ev.relpath, sha, reason, str(moved))
    return str(moved)


def evaluation_metadata(db: Store, leaderboard: str, model: str, rows: pd.DataFrame) -> dict:
    """The UI's view of one evaluation: the table of estimates with where the model would rank, the picture (board
    and history), and the tiny benchmark's version."""
    board = db.board_accuracies(leaderboard)
    history = db.evaluations(leaderboard, model, latest=False)
    table = rows[["scenario", "estimate", "lower", "upper", "estimate_t2", "estimator", "n_answers"]].copy()
    ranks = [
        board_rank(e, board.get(s, [])) if pd.notna(e) else (0, 0) for s, e in zip(rows["scenario"], rows["estimate"])
    ]
    table["rank_on_board"] = [f"#{r} of {n}" if n else "-" for r, n in ranks]
    for c in ("estimate", "lower", "upper", "estimate_t2"):
        table[c] = (100 * table[c].astype(float)).round(1)
    png = evaluation_picture(model, rows, board, history)
    versions = history["tiny_benchmark_version"].drop_duplicates().tolist()
    return {
        "evaluation": dg.MetadataValue.md(plots.markdown_image(png, f"{model} evaluation")),
        "estimates_pct": dg.MetadataValue.md(table.to_markdown(index=False)),
        "tiny_benchmark_version": str(rows["tiny_benchmark_version"].iloc[0]),
        "versions_so_far": len(versions),
        "scenarios": len(rows),
        "answers": dg.MetadataValue.path(str(rows["answers_path"].iloc[0])),
    }
