"""A new model's answers for ``tinybench estimate`` and ``tinybench adaptive run``: today's CSV / JSON file
(``core.tiny_benchmark.read_answers``), or lm-evaluation-harness output of one model: a ``samples_<task>_<timestamp>.jsonl``
file or the model's folder of them (items named as the harness drops name them, ``<task>.<doc_hash[:16]>``)."""

from __future__ import annotations

from pathlib import Path

# cli: lazy (see cli/__init__.py): subcommands import what they run inside their functions


def read_model_answers(path) -> dict[str, float]:
    """{item: score} from ``path``; errors (AnswerError) name the file and the line."""
    from tinybench_assets.core.tiny_benchmark import AnswerError, read_answers
    from tinybench_assets.io.drops import DropError
    from tinybench_assets.io.harness_drops import is_harness_file, read_answers_folder

    path = Path(path)
    if path.is_dir() or (path.suffix.lower() == ".jsonl" and is_harness_file(path)):
        try:
            return read_answers_folder(path)
        except DropError as e:
            raise AnswerError(str(e)) from None
    return read_answers(path)
