"""Export a fitted :class:`~tinybench_assets.core.predictor.AnchorPredictor` as a self-contained tiny
benchmark, and estimate a NEW model's accuracy from its answers to the anchors, offline.

This is tinyBenchmarks' ``evaluate()`` for any leaderboard tinybench has learned: a model answers the
``n`` anchor items of every scenario, and :func:`estimate_from_artifact` returns, per scenario, its
estimated balance-weighted accuracy on the scenario's item pool (T1) and its full-benchmark score (T2),
each with a split-conformal interval.

One module per job (this file only re-exports, so importers write
``from tinybench_assets.core.tiny_benchmark import load_artifact``):

* ``format.py``   the artifact's folder and JSON layout, FORMAT / FORMAT_VERSION, ArtifactError, the strict-JSON
  float encoding, save_artifact, load_artifact, load_predictor
* ``export.py``   export_tiny_benchmark (a fitted predictor -> the artifact dict)
* ``answers.py``  read_answers, AnswerError, score checks, answers laid out per scenario
* ``evaluate.py`` evaluate_json (JSON-evaluable estimators), estimate_from_artifact, COLUMNS
* ``tables.py``   anchor_list, artifact_tables (flat tables for the DuckDB store)

Pure python / numpy / pandas: no Dagster, no DuckDB.
"""
from __future__ import annotations

from .answers import AnswerError, read_answers
from .evaluate import COLUMNS, estimate_from_artifact, evaluate_json
from .export import export_tiny_benchmark
from .format import (FORMAT, FORMAT_NAME, FORMAT_VERSION, JSON_BASE, JSON_FILE, PICKLE_FILE, ArtifactError,
                     load_artifact, load_predictor, save_artifact)
from .tables import anchor_list, artifact_tables

__all__ = [
    "FORMAT", "JSON_BASE", "ArtifactError", "AnswerError", "export_tiny_benchmark", "save_artifact", "load_artifact",
    "load_predictor", "read_answers", "estimate_from_artifact", "evaluate_json", "anchor_list", "artifact_tables",
    "FORMAT_NAME", "FORMAT_VERSION", "JSON_FILE", "PICKLE_FILE", "COLUMNS",
]
