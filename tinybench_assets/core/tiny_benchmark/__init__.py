"""Export a fitted :class:`~tinybench_assets.core.estimation.predictor.AnchorPredictor` as a self-contained tiny
benchmark, and estimate a NEW model's accuracy from its answers to the anchors, offline.

This is tinyBenchmarks' ``evaluate()`` for any leaderboard tinybench has learned: a model answers the
``n`` anchor items of every scenario, and :func:`estimate_from_artifact` returns, per scenario, its
estimated balance-weighted accuracy on the scenario's item pool (T1) and its full-benchmark score (T2),
each with a split-conformal interval. The artifact is a JSON file and a file of numeric tree arrays: loading
one from an unknown source unpickles nothing and checks every field.

One module per job (this file only re-exports, so importers write
``from tinybench_assets.core.tiny_benchmark import load_artifact``):

* ``format.py``   the artifact's folder and JSON layout, FORMAT / FORMAT_VERSION, ArtifactError, the strict-JSON
  float encoding, the format check (version 1 refused)
* ``trees.py``    the learned regressors as numeric arrays: export from sklearn, the tree file's layout, its
  safe reader and checks, TreeEnsemble (a pure-numpy evaluator equal to sklearn's predict)
* ``schema.py``   Reader: checked, typed reads of the JSON (errors name the file and the field)
* ``model.py``    ArtifactModel: the predictor's steps rebuilt from the artifact
* ``files.py``    save_artifact, load_artifact, load_model / attach_trees (the tree file, sha256-checked)
* ``export.py``   export_tiny_benchmark (a fitted predictor -> the artifact dict)
* ``answers.py``  read_answers, AnswerError, score checks, answers laid out per scenario
* ``evaluate.py`` evaluate_json, evaluate_artifact, estimate_from_artifact, COLUMNS
* ``tables.py``   anchor_list, artifact_tables (flat tables for the DuckDB store)

Pure python / numpy / pandas / scikit-learn: no Dagster, no DuckDB.
"""

from __future__ import annotations

from .answers import AnswerError, read_answers
from .evaluate import COLUMNS, estimate_from_artifact, evaluate_artifact, evaluate_json
from .export import export_tiny_benchmark
from .files import load_artifact, load_model, save_artifact
from .format import (
    FORMAT,
    FORMAT_NAME,
    FORMAT_VERSION,
    JSON_BASE,
    JSON_FILE,
    LEARNED_BASE,
    PICKLE_FILE,
    TREES_FILE,
    ArtifactError,
)
from .model import ArtifactModel
from .tables import anchor_list, artifact_tables

__all__ = [
    "FORMAT",
    "JSON_BASE",
    "LEARNED_BASE",
    "ArtifactError",
    "AnswerError",
    "export_tiny_benchmark",
    "save_artifact",
    "load_artifact",
    "load_model",
    "ArtifactModel",
    "read_answers",
    "estimate_from_artifact",
    "evaluate_json",
    "evaluate_artifact",
    "anchor_list",
    "artifact_tables",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "JSON_FILE",
    "TREES_FILE",
    "PICKLE_FILE",
    "COLUMNS",
]
