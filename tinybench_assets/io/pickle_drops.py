"""tinyBenchmarks pickle drops (``.pkl``, ``.pickle``): ``{"models": [...], "data": {subscenario:
{"correctness": items x models}}}``, optional ``"scenarios": {scenario: [subscenarios]}``.

Read into :class:`~tinybench_assets.io.drop_types.Drop`; errors are :class:`~tinybench_assets.io.drop_types.DropError`
naming the file, the subscenario and the row. ``read_drop`` in :mod:`tinybench_assets.io.drops` sends
pickles here.

**Trust.** Unpickling a file can run any code the file holds, so pickle drops are *not* read by default: a pickle in
the landing folder is quarantined with a message saying how to opt in. The operator opts in with the environment
variable ``TINYBENCH_TRUST_PICKLE_DROPS`` (seen by ``tinybench run-all``, the Dagster daemon and the UI's runs):
``1`` (or ``true``/``yes``/``on``/``all``) trusts pickles in every leaderboard folder, a comma-separated list of
leaderboard folder names (``openllm,tiny``) trusts those folders only. Even then the file is read with
:class:`DropUnpickler`, which builds plain containers and numpy arrays only and refuses any other class or function
(the layout needs nothing else), so a trusted folder that receives a hostile file still runs none of its code.
"""

from __future__ import annotations

import _compat_pickle
import io
import os
import pickle
import re
from pathlib import Path

import numpy as np
import pandas as pd

from .drop_types import Drop, DropError, clean_name, dedupe_responses


def tinybenchmarks_scenario(subscenario: str) -> str:
    """Map a tinyBenchmarks subscenario name to its scenario (``harness_hendrycksTest_x_5`` -> ``mmlu``)."""
    s = subscenario.lower()
    if "hendryckstest" in s or "mmlu" in s:
        return "mmlu"
    s = re.sub(r"^harness_", "", s)
    s = re.sub(r"_\d+$", "", s)
    if s.startswith("arc"):
        return "arc"
    if s.startswith("truthfulqa"):
        return "truthfulqa"
    return clean_name(s)


TRUST_ENV = "TINYBENCH_TRUST_PICKLE_DROPS"
_YES = {"1", "true", "yes", "on", "all", "*"}
_NO = {"", "0", "false", "no", "off", "none"}


def pickles_trusted(leaderboard: str, setting: bool | str | None = None) -> bool:
    """Whether pickle drops of ``leaderboard`` may be unpickled: ``setting`` (True/False, or the text form of
    ``TINYBENCH_TRUST_PICKLE_DROPS``), else the environment variable; off when unset."""
    if isinstance(setting, bool):
        return setting
    value = (os.environ.get(TRUST_ENV, "") if setting is None else setting).strip().lower()
    if value in _NO:
        return False
    if value in _YES:
        return True
    return leaderboard in {v.strip() for v in value.split(",")}


def untrusted_message(leaderboard: str) -> str:
    return (
        f"tinyBenchmarks pickle not read: unpickling a file can run code it contains, so pickle drops are off by "
        f"default. If this file comes from a source you trust, set {TRUST_ENV}=1 (every leaderboard folder) or "
        f"{TRUST_ENV}={leaderboard} (this folder only) where the ingest runs (tinybench run-all, the Dagster "
        f"daemon/UI) and drop the file into the landing folder again; or convert it to a long table "
        f"(.parquet/.csv with model, scenario, subscenario, item, score)"
    )


class DropUnpickler(pickle.Unpickler):
    """Unpickles plain containers, numbers, strings and numpy arrays/scalars/dtypes; any other global is refused
    (a pickle's ``__reduce__`` can name any callable; here only these array constructors resolve)."""

    ALLOWED = {
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("_codecs", "encode"),
        ("codecs", "encode"),
        ("collections", "OrderedDict"),
        ("builtins", "set"),
        ("builtins", "frozenset"),
        ("builtins", "bytearray"),
        ("builtins", "complex"),
        ("builtins", "slice"),
        ("builtins", "range"),
    } | {
        (f"numpy.{core}.{mod}", name)
        for core in ("core", "_core")
        for mod, name in (("multiarray", "_reconstruct"), ("multiarray", "scalar"), ("numeric", "_frombuffer"))
    }

    def find_class(self, module: str, name: str):
        if module in _compat_pickle.IMPORT_MAPPING:  # Python 2 era names (__builtin__.set), as pickle maps them
            module, name = _compat_pickle.NAME_MAPPING.get(
                (module, name), (_compat_pickle.IMPORT_MAPPING.get(module, module), name)
            )
        if (module, name) in self.ALLOWED or (module == "numpy.dtypes" and name.endswith("DType")):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(
            f"refers to {module}.{name}, which a tinyBenchmarks drop does not need; "
            "not loaded (the file may be hostile; convert it to a long table)"
        )


def load_drop_pickle(data: bytes):
    """The object in a pickle's bytes, through :class:`DropUnpickler`."""
    return DropUnpickler(io.BytesIO(data)).load()


def read_tinybenchmarks(path: Path, leaderboard: str, sha: str, trusted: bool | str | None = None) -> Drop:
    """Read a tinyBenchmarks pickle when pickles of ``leaderboard`` are trusted (:func:`pickles_trusted`); otherwise
    raise DropError without opening the file."""
    if not pickles_trusted(leaderboard, trusted):
        raise DropError(path, untrusted_message(leaderboard))
    try:
        obj = load_drop_pickle(Path(path).read_bytes())
    except Exception as exc:  # noqa: BLE001 - any unpickling failure is an unreadable file
        raise DropError(path, f"unreadable pickle ({type(exc).__name__}: {str(exc)[:300]})") from exc
    if not isinstance(obj, dict) or "models" not in obj or "data" not in obj:
        raise DropError(path, "unknown format: expected a dict with 'models' and 'data' (tinyBenchmarks layout)")
    try:
        return _from_layout(obj, path, leaderboard, sha)
    except (TypeError, AttributeError, KeyError) as exc:  # a 'models' that is no list, a 'data' that is no dict, ...
        raise DropError(path, f"not the tinyBenchmarks layout ({type(exc).__name__}: {str(exc)[:200]})") from exc


def _from_layout(obj: dict, path: Path, leaderboard: str, sha: str) -> Drop:
    models = [str(m) for m in obj["models"]]
    mapping = {}
    for scen, subs in (obj.get("scenarios") or {}).items():
        for sub in subs:
            mapping[sub] = clean_name(scen)
    frames, rules = [], {}
    for sub, block in obj["data"].items():
        if not isinstance(block, dict) or "correctness" not in block:
            raise DropError(path, f"subscenario {sub!r} lacks 'correctness'", column=str(sub))
        corr = np.asarray(block["correctness"], dtype=float)
        if corr.ndim != 2 or corr.shape[1] != len(models):
            raise DropError(
                path,
                f"subscenario {sub!r}: correctness has shape {corr.shape}, expected items x {len(models)} models",
                column=str(sub),
            )
        if np.isnan(corr).any():
            r, _ = np.argwhere(np.isnan(corr))[0]
            raise DropError(path, f"subscenario {sub!r}: NaN correctness", row=int(r) + 1, column=str(sub))
        bad = (corr < 0) | (corr > 1)
        if bad.any():
            r, c = np.argwhere(bad)[0]
            raise DropError(
                path,
                f"subscenario {sub!r}: score {float(corr[r, c])!r} for model {models[c]!r} outside [0, 1]",
                row=int(r) + 1,
                column=str(sub),
            )
        scen = mapping.get(sub) or tinybenchmarks_scenario(sub)
        n_items = corr.shape[0]
        item_ids = np.array([f"{sub}.{j}" for j in range(n_items)], dtype=object)
        frames.append(
            pd.DataFrame(
                {
                    "leaderboard": leaderboard,
                    "scenario": scen,
                    "subscenario": str(sub),
                    "item": np.repeat(item_ids, len(models)),
                    "model": np.tile(np.asarray(models, dtype=object), n_items),
                    "score": corr.reshape(-1),
                }
            )
        )
        rules[scen] = "auto"
    drop = Drop(path=path, leaderboard=leaderboard, format="tinybenchmarks_pickle", sha256=sha, binarize_rules=rules)
    if frames:
        drop.responses = dedupe_responses(pd.concat(frames, ignore_index=True), path)
    return drop
