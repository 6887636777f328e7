"""Which encoder embeds a scenario's questions: the packaged MiniLM or the static encoder distilled from it
(io/static_encoder.py), chosen on TRAINING questions only.

The rule (``choose``):

* **Few questions** (at most ``FEW_QUESTIONS`` with text): MiniLM. Embedding them all costs about what the check
  below would (2,000 texts at MiniLM's 18-78 texts/s on 2 cores), and the static encoder's loss, where it has one, is
  largest on small specialised sets (RouteLLM GSM8K, 1,319 questions: kNN APGR 0.547 against 0.583).
* **Many questions**: a check on a sample of up to ``SAMPLE`` training questions (the first by sha256 of the item id:
  the same sample whatever the test questions are). Both encoders embed the sample; each question's correctness for
  every model is predicted from its ``K`` most cosine-similar other sample questions (leave one out: the neighbours'
  mean); per question, the Brier score over the models. MiniLM is chosen when its Brier score is lower by more than
  ``Z`` standard errors of the paired difference (it pays for its cost); else the static encoder (about 100x faster,
  and as good on MMLU-like and mixed traffic: RouteLLM MMLU kNN APGR 0.629 against 0.630).

The sample's MiniLM embeddings land in the embedding cache, so choosing MiniLM re-embeds none of them. Pure numpy.
"""

from __future__ import annotations

import hashlib
import warnings
from dataclasses import asdict, dataclass

import numpy as np

FEW_QUESTIONS = 2000
SAMPLE = 500
K = 20
Z = 2.0
STATIC, DENSE = "static", "minilm"


@dataclass(frozen=True)
class EncoderCheck:
    """The sample check's figures: mean Brier score per encoder, the paired difference (static minus MiniLM), its
    standard error and z, and the verdict."""

    n: int
    brier_static: float
    brier_minilm: float
    diff: float
    se: float
    z: float
    minilm_pays: bool

    def to_dict(self) -> dict:
        return {k: (round(v, 5) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def training_sample(items, n: int = SAMPLE) -> np.ndarray:
    """Positions of up to ``n`` of ``items`` (training questions' ids): those with the smallest sha256 of the id, so
    the sample depends on nothing but the training ids."""
    keys = np.array([hashlib.sha256(str(i).encode()).hexdigest() for i in items])
    return np.sort(np.argsort(keys, kind="stable")[:n])


def knn_brier(E: np.ndarray, Y: np.ndarray, k: int = K) -> np.ndarray:
    """Per question, the Brier score (mean over the models it has answers of) of the leave-one-out kNN prediction:
    the mean correctness of its ``k`` most cosine-similar other questions (rows of ``E`` are unit vectors)."""
    E = np.asarray(E, dtype=np.float32)
    Y = np.asarray(Y, dtype=float)
    n = len(E)
    k = max(1, min(k, n - 1))
    S = E @ E.T
    np.fill_diagonal(S, -np.inf)
    idx = np.argpartition(-S, k - 1, axis=1)[:, :k]
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a model with no answer among the neighbours: NaN
        pred = np.nanmean(Y[idx], axis=1)
        pred = np.where(np.isnan(pred), np.nanmean(Y, axis=0), pred)
        loss = np.nanmean((pred - Y) ** 2, axis=1)
    return np.nan_to_num(loss, nan=0.0)


def compare(E_static: np.ndarray, E_minilm: np.ndarray, Y: np.ndarray, k: int = K, z: float = Z) -> EncoderCheck:
    """The sample check: kNN Brier scores of the two embeddings of the same questions (rows of ``Y``: questions x
    models, 0/1 with NaN where a model has no answer)."""
    bs, bm = knn_brier(E_static, Y, k), knn_brier(E_minilm, Y, k)
    d = bs - bm
    se = float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else float("inf")
    zz = float(d.mean() / se) if se > 0 else 0.0
    return EncoderCheck(len(d), float(bs.mean()), float(bm.mean()), float(d.mean()), se, zz, bool(zz > z))


def few(n_questions: int) -> bool:
    """Whether a scenario is small enough for MiniLM without the check."""
    return n_questions <= FEW_QUESTIONS
