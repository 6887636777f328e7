"""The evaluations landing folder: ``<incoming>/evaluations/<leaderboard>/``, one file (or lm-evaluation-harness
samples folder) per evaluated model, in every answers format ``tinybench estimate`` reads (CSV ``item,score``, JSON,
``samples_<task>_<timestamp>.jsonl`` files or their model folder).

The model's name is the file's stem (a harness file's model folder name), unless a CSV's ``model`` column names one
model. Each file is one dynamic partition ``<leaderboard>/<model>`` of the ``model_evaluation`` asset. These files
never join a leaderboard's response matrix: the landing folder's drop listing (``io.drops.landing_files``) skips the
``evaluations`` folder.
"""

from __future__ import annotations

import csv
import hashlib
from dataclasses import dataclass
from pathlib import Path

from .drop_types import clean_name

#: the evaluations' folder under the landing folder (never a leaderboard's)
FOLDER = "evaluations"
#: the answers formats an evaluation file may have (a harness model folder is a folder)
SUFFIXES = (".csv", ".json", ".jsonl")
#: partial uploads still being written (as the drops' listing skips them; io/drops.py imports this module)
PARTIAL_SUFFIXES = {".tmp", ".part", ".partial", ".crdownload", ".swp"}


@dataclass(frozen=True)
class EvaluationFile:
    """One evaluated model's answers under the evaluations folder."""

    leaderboard: str
    model: str
    path: Path  # a file, or a harness model folder
    relpath: str  # relative to the landing folder (``evaluations/openllm/mymodel.csv``)

    @property
    def partition(self) -> str:
        return partition_key(self.leaderboard, self.model)

    def sha256(self) -> str:
        """The answers' content hash: the file's bytes, or every samples file of a harness folder (name and bytes)."""
        h = hashlib.sha256()
        for f in _content_files(self.path):
            h.update(f.name.encode() + b"\0")
            h.update(f.read_bytes())
        return h.hexdigest()


def partition_key(leaderboard: str, model: str) -> str:
    return f"{leaderboard}/{model}"


def split_evaluation_key(key: str) -> tuple[str, str]:
    """``openllm/mymodel`` -> ``("openllm", "mymodel")``."""
    board, _, model = key.partition("/")
    if not board or not model:
        raise ValueError(f"evaluation partition key {key!r} is not <leaderboard>/<model>")
    return board, model


def evaluations_dir(incoming: Path | str) -> Path:
    return Path(incoming) / FOLDER


def _content_files(path: Path) -> list[Path]:
    return sorted(p for p in path.glob("samples_*.jsonl") if p.is_file()) if path.is_dir() else [path]


def _visible(path: Path) -> bool:
    return not (
        path.name.startswith(".") or path.suffix.lower() in PARTIAL_SUFFIXES or path.name.upper().startswith("README")
    )


def model_name(path: Path) -> str:
    """The model an answers file is for: a CSV's ``model`` column when it names one model, else the file's stem (a
    harness folder's name; a harness file's folder when it is not directly in the leaderboard's folder)."""
    if path.suffix.lower() == ".csv" and path.is_file():
        try:
            with path.open(newline="", encoding="utf-8-sig") as fh:
                rows = csv.DictReader(fh)
                key = next((f for f in rows.fieldnames or [] if f.strip().lower() == "model"), None)
                names = {(r.get(key) or "").strip() for r in rows} if key else set()
        except (OSError, UnicodeDecodeError, csv.Error):
            names = set()
        names.discard("")
        if len(names) == 1:
            return clean_name(names.pop())
    return clean_name(path.name if path.is_dir() else path.stem)


def evaluation_files(incoming: Path | str) -> list[EvaluationFile]:
    """Every evaluation under ``<incoming>/evaluations/<leaderboard>/``, sorted by partition: files of any suffix
    (an unreadable one is quarantined when it is evaluated) and harness model folders (``<model>/samples_*.jsonl``).
    A name that cleans to nothing gets the file's name (the evaluation quarantines it)."""
    root = evaluations_dir(incoming)
    if not root.is_dir():
        return []
    out = {}
    for board_dir in sorted(p for p in root.iterdir() if p.is_dir() and _visible(p)):
        try:
            board = clean_name(board_dir.name)
        except ValueError:
            continue
        for path in sorted(p for p in board_dir.iterdir() if _visible(p)):
            if path.is_dir() and not _content_files(path):
                continue
            try:
                model = model_name(path)
            except ValueError:
                model = path.name
            ev = EvaluationFile(board, model, path, str(path.relative_to(Path(incoming))))
            out.setdefault(ev.partition, ev)  # two files naming one model: the first in name order
    return [out[k] for k in sorted(out)]


def evaluation_file(incoming: Path | str, key: str) -> EvaluationFile | None:
    """The evaluation file of partition ``key``, None when it is gone (quarantined, removed)."""
    return next((e for e in evaluation_files(incoming) if e.partition == key), None)
