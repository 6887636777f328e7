"""What every drop reader shares: the ``Drop`` it returns, the ``DropError`` it raises, the frames' columns, name
cleaning, the scenario partition key (``partition_key`` / ``split_partition_key``, the one parser of
``leaderboard.scenario`` keys), matrix sidecars and response de-duplication.

``io.drops`` (the entry point, long tables) and the format readers ``io.routerdc_drops``, ``io.wide_drops``,
``io.matrix_drops``, ``io.pickle_drops`` and ``io.price_drops`` import these from here, so the dispatcher and its
readers form no import circle; ``io.drops`` re-exports every name, so ``from tinybench_assets.io.drops import Drop, DropError`` keeps working.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

RESPONSE_COLUMNS = ["leaderboard", "scenario", "subscenario", "item", "model", "score"]
ITEM_COLUMNS = ["leaderboard", "scenario", "subscenario", "item", "text", "split"]
FULL_SCORE_COLUMNS = ["leaderboard", "scenario", "model", "full_score", "split"]
COST_COLUMNS = ["leaderboard", "scenario", "item", "model", "cost"]
#: a scored cell's answer length in tokens, estimated from the response text a wide table carries (``io.wide_responses``)
RESPONSE_TOKEN_COLUMNS = ["leaderboard", "scenario", "item", "model", "tokens"]
#: a leaderboard's prices file (``prices.csv``, read by ``io.price_drops``): a price per model, per question or per
#: million tokens, and the answer's length in tokens (NaN where not given)
PRICE_COLUMNS = ["leaderboard", "model", "cost_per_question", "input_per_mtok", "output_per_mtok", "output_tokens"]
TEXT_COLUMNS = ("prompt", "text", "question")
NAME_RE = re.compile(r"[^a-z0-9_\-]+")
ROUTERDC_NAME_RE = re.compile(r"^(?P<scenario>.+?)[-_](?P<split>train|test)$", re.IGNORECASE)


class DropError(ValueError):
    """A drop that cannot be ingested. ``str(err)`` names the file, the row/column and the problem."""

    def __init__(self, path: Path | str, problem: str, *, row: int | None = None, column: str | None = None):
        self.path, self.problem, self.row, self.column = str(path), problem, row, column
        where = [f"file {self.path}"]
        if row is not None:
            where.append(f"row {row}")
        if column is not None:
            where.append(f"column {column!r}")
        super().__init__(", ".join(where) + f": {problem}")


@dataclass
class Drop:
    """One validated drop: what a file adds to the store."""

    path: Path
    leaderboard: str
    format: str
    sha256: str
    responses: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=RESPONSE_COLUMNS))
    items: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=ITEM_COLUMNS))
    full_scores: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=FULL_SCORE_COLUMNS))
    # per-(model, item) cost of answering (wide tables' <model>|total_cost): finite, >= 0
    costs: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=COST_COLUMNS))
    # per-(model, item) answer length in tokens (wide tables' response text): int >= 0; output tokens for token prices
    response_tokens: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=RESPONSE_TOKEN_COLUMNS))
    # a prices file's rows (PRICE_COLUMNS): each model's price, for the questions no drop gives a cost
    prices: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=PRICE_COLUMNS))
    # rows a reader left out of an otherwise good file: ``row`` (1 = first data row), ``reason``, then the row's cells
    # as read; the ingest writes them to ``<quarantine>/<leaderboard>/<file>.rejected.csv``
    rejected: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["row", "reason"]))
    # scenario -> binarization rule ("auto" = tutorial threshold unless already 0/1, "positive" = score > 0)
    binarize_rules: dict[str, str] = field(default_factory=dict)
    # what the reader decided on its own (detected matrix orientation, ignored columns); logged by the ingest
    notes: list[str] = field(default_factory=list)

    @property
    def kind(self) -> str:
        """What the drop adds, its first non-empty frame: ``responses``, ``items``, ``full_scores`` or ``prices``."""
        return next(
            (k for k in ("responses", "items", "full_scores", "prices") if len(getattr(self, k))), "full_scores"
        )

    @property
    def n_rows(self) -> int:
        return len(self.responses) + len(self.items) + len(self.full_scores) + len(self.prices)

    def partition_keys(self) -> list[str]:
        """Scenario partition keys (``leaderboard.scenario``) this drop touches; none for a prices file, whose prices
        hold for the whole leaderboard and change no partition's responses."""
        frames = [f for f in (self.responses, self.items, self.full_scores, self.costs) if len(f)]
        scen = sorted(set().union(*[set(f["scenario"].unique()) for f in frames])) if frames else []
        return [partition_key(self.leaderboard, s) for s in scen]


# ---------------------------------------------------------------------- names
def clean_name(name: str) -> str:
    """Lower-case, [a-z0-9_-] only: leaderboard and scenario names used in partition keys."""
    out = NAME_RE.sub("_", str(name).strip().lower()).strip("_")
    if not out:
        raise ValueError(f"empty name from {name!r}")
    return out


def partition_key(leaderboard: str, scenario: str) -> str:
    """The scenario partition key, e.g. ``openllm.mmlu``."""
    return f"{leaderboard}.{scenario}"


def split_partition_key(key: str) -> tuple[str, str]:
    """``(leaderboard, scenario)`` of a scenario partition key (``openllm.mmlu`` -> ``("openllm", "mmlu")``); the one
    place a key is parsed. The scenario is everything after the first dot; a key without one raises ValueError."""
    leaderboard, _, scenario = key.partition(".")
    if not scenario:
        raise ValueError(f"partition key {key!r} is not of the form leaderboard.scenario")
    return leaderboard, scenario


def drop_ids(sha256: str, leaderboard: str) -> tuple[str, str]:
    """The two ids a drop of these bytes may carry in the ``drops`` table: the sha256 itself (the first leaderboard to
    land the bytes) and the sha256 bound to ``leaderboard`` (the same bytes landed by another leaderboard since: a
    copy in another board's folder is that board's data, not a file landed before)."""
    return sha256, hashlib.sha256(f"{sha256}\0leaderboard\0{leaderboard}".encode()).hexdigest()


# ---------------------------------------------------------------------- sidecars and duplicates
#: a matrix's sidecar, ``<file>.meta.json`` or ``<stem>.meta.json``: read with its matrix, never a drop itself
SIDECAR_SUFFIX = ".meta.json"


def sidecar_path(path: Path) -> Path | None:
    """The sidecar of a ``.csv``/``.parquet`` drop, if there is one."""
    path = Path(path)
    if path.suffix.lower() not in (".csv", ".parquet"):
        return None
    return next(
        (
            c
            for c in (path.with_name(path.name + SIDECAR_SUFFIX), path.with_name(path.stem + SIDECAR_SUFFIX))
            if c.is_file()
        ),
        None,
    )


def dedupe_responses(resp: pd.DataFrame, path: Path) -> pd.DataFrame:
    """Drop exact duplicate (model, item) rows; raise on conflicting ones."""
    key = ["scenario", "model", "item"]
    dup = resp.duplicated(key, keep=False)
    if dup.any():
        clash = resp[dup].groupby(key)["score"].nunique()
        if (clash > 1).any():
            sc, model, item = clash[clash > 1].index[0]
            rows = np.flatnonzero(
                ((resp["scenario"] == sc) & (resp["model"] == model) & (resp["item"] == item)).to_numpy()
            )
            scores = resp["score"].iloc[rows].tolist()
            raise DropError(
                path,
                f"conflicting duplicate rows for model {model!r}, item {item!r} "
                f"(rows {', '.join(str(r + 1) for r in rows[:5])}; scores {scores[:5]})",
                row=int(rows[1]) + 1,
            )
        resp = resp.drop_duplicates(key)
    return resp.reset_index(drop=True)
