"""Where the pipeline's saved models live, and how they are written: ``<root>/<leaderboard>/<file>``.

``root`` is the artifacts folder (``TINYBENCH_ARTIFACTS``, default data/artifacts). The files: ``predictor.pkl`` (the
fitted ``AnchorPredictor``, written by ``anchor_sets``) and ``router_<scenario>.npz`` (the served router of a scenario
partition, written by ``router_accuracy``); the tiny benchmark (``tiny_benchmark.json`` + ``learned_models.npz``) is
exported into the same folder. The Dagster resource ``defs.resources.ModelStore`` uses these functions; the console
script uses them too, so both agree on the paths without the CLI importing Dagster.

Names come from partition keys, and a key can be typed by hand in the UI: a leaderboard, scenario or file name with
a path separator, ``..``, a NUL byte or nothing in it is refused (``UnsafeNameError``) before any path is built, so a
model is never read or written outside ``<root>/<leaderboard>/``.
"""

from __future__ import annotations

import pickle
from pathlib import Path

from ..atomic import atomic_write  # noqa: F401 - ModelStore saves through it

PREDICTOR_FILE = "predictor.pkl"


class UnsafeNameError(ValueError):
    """A leaderboard, scenario or file name that cannot be part of a saved model's path."""


class MissingModelError(FileNotFoundError):
    """A saved model that is not there (yet): its message names the file and the asset that writes it."""


class OutdatedModelError(ValueError):
    """A saved model pickled by an older tinybench: it names a module or class of the package that is no longer
    there (a module moved, a class renamed). Its message names the file and the asset that rebuilds it."""


def safe_name(value: str, what: str = "name") -> str:
    """``value`` when it can stand as one path component; UnsafeNameError naming ``what`` and the problem otherwise."""
    if not isinstance(value, str) or not value:
        raise UnsafeNameError(f"{what} {value!r} is empty or not text: it cannot name a saved model's folder or file")
    problem = (
        "a NUL byte"
        if "\0" in value
        else "a path separator"
        if ("/" in value or "\\" in value)
        else "'..'"
        if ".." in value
        else "only dots"
        if set(value) == {"."}
        else None
    )
    if problem:
        raise UnsafeNameError(
            f"{what} {value!r} contains {problem}: a saved model's path takes a plain name "
            "(a partition key added by hand must be a plain leaderboard[.scenario] name)"
        )
    return value


def router_file(scenario: str) -> str:
    """The file name of a scenario's served router: ``router_<scenario>.npz``."""
    return f"router_{safe_name(scenario, 'scenario')}.npz"


#: the file name of a leaderboard's mixed-traffic router (``router_<scenario>.npz`` never spells it)
BOARD_ROUTER_FILE = "router.npz"


def model_folder(root: str | Path, board: str) -> Path:
    """``<root>/<board>``, the leaderboard's folder of saved models (board checked by ``safe_name``)."""
    return Path(root) / safe_name(board, "leaderboard")


def model_path(root: str | Path, board: str, name: str) -> Path:
    """``<root>/<board>/<name>`` (both checked by ``safe_name``)."""
    return model_folder(root, board) / safe_name(name, "file name")


class _ModelUnpickler(pickle.Unpickler):
    """``pickle.Unpickler`` that turns a missing ``tinybench_assets`` module or class into OutdatedModelError."""

    def __init__(self, fh, path: Path, board: str, made_by: str):
        super().__init__(fh)
        self.path, self.board, self.made_by = path, board, made_by

    def find_class(self, module: str, name: str):
        try:
            return super().find_class(module, name)
        except (ImportError, AttributeError) as exc:
            if module.split(".")[0] != "tinybench_assets":
                raise
            raise OutdatedModelError(
                f"saved model {self.path} for leaderboard {self.board!r} was written by an older tinybench: it names "
                f"{module}.{name}, which this version does not have; rebuild it by materializing {self.made_by} "
                "(or `tinybench run-all`)"
            ) from exc


def read_pickle(path: Path, board: str, made_by: str):
    """The object pickled in ``path`` (one of the pipeline's own, trusted files); OutdatedModelError naming the file
    and ``made_by`` (the asset that rebuilds it) when it names a module or class of the package that is gone."""
    with open(path, "rb") as fh:
        return _ModelUnpickler(fh, Path(path), board, made_by).load()
