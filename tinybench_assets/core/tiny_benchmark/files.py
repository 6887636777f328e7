"""Saving and loading the artifact folder (:func:`save_artifact`, :func:`load_artifact`, :func:`load_model`).

Loading never unpickles: the JSON is parsed as strict JSON (size-capped, NaN / Infinity constants refused) and
every field the estimators read is checked (:class:`.model.ArtifactModel`); the learned regressors come from
``learned_models.npz``, read by :func:`.trees.read_tree_file` (no ``np.load``, no pickle) after its sha256 is
compared with the JSON's, and checked tree by tree (:func:`.trees.ensembles`). Any other file in the folder,
``predictor.pkl`` included, is ignored.
"""

from __future__ import annotations

import json
from pathlib import Path

from ...atomic import atomic_write
from ...hashing import file_sha256
from .format import JSON_FILE, TREES_FILE, ArtifactError, check_format
from .model import ArtifactModel
from .trees import ARRAYS, BANK_ARRAYS, MAX_FILE_BYTES, ensembles, read_tree_file, write_tree_file

MAX_JSON_BYTES = 256 << 20


def save_artifact(artifact: dict, predictor=None, folder=None) -> Path:
    """Write ``folder/tiny_benchmark.json`` and (when the artifact has learned regressors) ``folder/learned_models.npz``.

    The regressors' arrays travel in the artifact dict from :func:`.export.export_tiny_benchmark` (key
    ``_trees``); ``predictor`` is only needed for a dict that lacks them (e.g. one read back with
    :func:`load_artifact`), and nothing is pickled. The JSON records the tree file's sha256. Both files are
    written to temporary names and renamed, so a reader never sees half a file. Any other file of the folder
    (the pipeline's predictor.pkl) is left alone. Returns the JSON path.
    """
    if folder is None:
        raise TypeError("save_artifact() needs the folder")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    art = {k: v for k, v in artifact.items() if not k.startswith("_")}
    info = dict(art.get("learned") or {})
    models = info.get("models") or []
    has_file = bool(models) or info.get("bank") is not None  # regressors and / or the answer bank
    trees = artifact.get("_trees")
    if has_file and trees is None:
        if predictor is None:
            raise ArtifactError("the artifact lists learned regressors but carries no tree arrays; pass the predictor")
        from .export import learned_models

        trees = learned_models(predictor.named_steps, art["clustering"], int(art["n"]), models)
    stale = folder / TREES_FILE
    if has_file:
        write_tree_file(trees, stale)
        info.update(file=TREES_FILE, sha256=file_sha256(stale))
    else:
        stale.unlink(missing_ok=True)  # an earlier export's trees: not this artifact's
        info.update(file=None, sha256=None)
    art["learned"] = info
    text = json.dumps(art, allow_nan=False, ensure_ascii=False, indent=1)
    return atomic_write(folder / JSON_FILE, lambda tmp: tmp.write_text(text))


def _strict(const):
    raise ArtifactError(f'non-standard JSON constant {const} (the format writes null / "inf" / "-inf")')


def where_of(art: dict) -> str:
    folder = art.get("_folder")
    return str(Path(folder) / JSON_FILE) if folder else "artifact"


def load_artifact(path) -> dict:
    """Read a tiny benchmark from its folder or its JSON file; checks the format tag, the version and every field
    the estimators read (ArtifactError naming the file, the field and the problem).

    The returned dict carries ``_folder`` (where ``learned_models.npz`` is looked for)."""
    path = Path(path)
    file = path / JSON_FILE if path.is_dir() else path
    if not file.is_file():
        why = " (the folder holds no tiny_benchmark.json)" if path.is_dir() else ""
        raise ArtifactError(f"{file}: no tiny benchmark there{why}")
    if file.stat().st_size > MAX_JSON_BYTES:
        raise ArtifactError(
            f"{file}: {file.stat().st_size} bytes, more than the {MAX_JSON_BYTES} a tiny benchmark may have"
        )
    try:
        art = json.loads(file.read_bytes().decode("utf-8"), parse_constant=_strict)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ArtifactError(f"{file}: not valid JSON ({e})") from None
    except RecursionError:
        raise ArtifactError(f"{file}: not valid JSON (nested too deeply)") from None
    except ArtifactError as e:
        raise ArtifactError(f"{file}: {e}") from None
    try:
        check_format(art)
    except ArtifactError as e:
        raise ArtifactError(f"{file}: {e}") from None
    ArtifactModel(art, str(file))  # checks every field
    art["_folder"] = str(file.parent)
    return art


def load_model(art: dict, learned: bool) -> ArtifactModel | None:
    """The artifact's :class:`ArtifactModel` (every JSON field checked); with ``learned``, its regressors attached
    (:func:`attach_trees`), or None when the tree file is absent."""
    check_format(art)
    model = ArtifactModel(art, where_of(art))
    return attach_trees(art, model) if learned else model


def attach_trees(art: dict, model: ArtifactModel) -> ArtifactModel | None:
    """``model`` with its learned regressors, from the dict's tree arrays (a fresh export) or the folder's
    ``learned_models.npz``. Returns None when that file is absent (or the artifact was never saved); raises
    ArtifactError when it is there but does not match the JSON's sha256 or is malformed."""
    if not model.model_keys and model.bank_info is None:
        return model.with_trees([])
    if art.get("_trees") is not None:
        arrays, source = art["_trees"], "the artifact's tree arrays"
        if not isinstance(arrays, dict) or set(arrays) - set(BANK_ARRAYS) != set(ARRAYS):
            raise ArtifactError(f"{source}: expected the arrays {sorted(ARRAYS)} (and the answer bank's)")
    else:
        if not art.get("_folder"):
            return None
        source = Path(art["_folder"]) / TREES_FILE  # the only name $.learned.file may hold
        if not source.is_file():
            return None
        if source.stat().st_size > MAX_FILE_BYTES:
            raise ArtifactError(
                f"{source}: {source.stat().st_size} bytes, more than the {MAX_FILE_BYTES} a tree file may have"
            )
        got, want = file_sha256(source), art["learned"]["sha256"]
        if want is None:
            raise ArtifactError(
                f"{where_of(art)}: $.learned.sha256 is null: the tree file beside it is not vouched for"
            )
        if got != want:
            raise ArtifactError(
                f"{source}: sha256 {got[:12]}... differs from the {str(want)[:12]}... recorded in "
                f"{JSON_FILE}; re-export the artifact (or use only the JSON estimators: "
                "use_learned=False / --no-learned)"
            )
        arrays = read_tree_file(source)
    return model.with_trees(ensembles(arrays, model.n_features, source), arrays, source)
