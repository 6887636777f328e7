"""Named thresholds: ``tinybench calibrate`` saves one next to its router; ``tinybench route --threshold NAME`` and
the server's ``router:...?threshold=NAME`` read it back.

The file is ``<router file's stem>.threshold.<name>.json`` beside the router file (under the artifacts folder, never
in git): the threshold (core/routing/threshold.py), what was asked (a strong share or a maximum cost), what it gave
on the calibration questions, and the sha256 of the router file it was calibrated on. A threshold is a quantile of
one router's scores, so a file calibrated on another version of the router (the router asset ran again) is refused
with the command that calibrates it again. Names: a letter, then letters, digits, ``_``, ``-`` or ``.`` (64 at most),
so that a number is never read as a name.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path

from tinybench_assets.atomic import atomic_write

FORMAT = "tinybench-threshold"
VERSION = 1
NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")


class ThresholdError(ValueError):
    """A threshold that cannot be used: a bad name, a missing or unreadable file, another router's."""


def parse_threshold(value: str) -> float | str:
    """A threshold as given: a finite number, else a saved threshold's name (ThresholdError if it is neither)."""
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        if not NAME.match(text) or ".." in text:
            raise ThresholdError(
                f"threshold {value!r} is neither a number nor a name (a letter, then letters, digits, _ - .)"
            ) from None
        return text
    if number != number or number in (float("inf"), float("-inf")):
        raise ThresholdError(f"threshold {value!r} is not a finite number")
    return number


def threshold_path(router_path: Path | str, name: str) -> Path:
    router_path = Path(router_path)
    if not NAME.match(name) or ".." in name:
        raise ThresholdError(f"threshold name {name!r}: a letter, then letters, digits, _ - . (64 at most)")
    return router_path.with_name(f"{router_path.stem}.threshold.{name}.json")


def saved_names(router_path: Path | str) -> list[str]:
    """The names of the thresholds saved for this router file."""
    router_path = Path(router_path)
    prefix, suffix = f"{router_path.stem}.threshold.", ".json"
    if not router_path.parent.is_dir():
        return []
    return sorted(
        p.name[len(prefix) : -len(suffix)]
        for p in router_path.parent.iterdir()
        if p.name.startswith(prefix) and p.name.endswith(suffix)
    )


def save_threshold(router_path: Path | str, name: str, router_sha256: str, calibration: dict, source: dict) -> Path:
    """Write the named threshold file (whole or not at all); ``calibration``: ``Calibration.as_dict()``."""
    path = threshold_path(router_path, name)
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "name": name,
        "router_file": Path(router_path).name,
        "router_sha256": router_sha256,
        **calibration,
        "questions": source,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    return atomic_write(path, lambda tmp: tmp.write_text(json.dumps(doc, indent=1) + "\n"))


def load_threshold(router_path: Path | str, name: str, router_sha256: str) -> dict:
    """The saved threshold ``name`` of this router file (its JSON); ThresholdError naming the file when it is missing,
    unreadable, or calibrated on another version of the router."""
    path = threshold_path(router_path, name)
    if not path.is_file():
        have = saved_names(router_path)
        raise ThresholdError(
            f"no threshold named {name!r} for router {Path(router_path).name} (no {path.name}; saved: "
            f"{', '.join(have) or 'none'}; tinybench calibrate --name {name} saves one)"
        )
    try:
        doc = json.loads(path.read_text())
        ok = doc.get("format") == FORMAT and isinstance(doc.get("threshold"), (int, float))
    except (OSError, ValueError, AttributeError) as e:
        raise ThresholdError(f"cannot read threshold file {path}: {type(e).__name__}") from None
    if not ok:
        raise ThresholdError(f"{path}: not a tinybench threshold file (format {FORMAT} with a numeric threshold)")
    if doc.get("router_sha256") != router_sha256:
        raise ThresholdError(
            f"{path} was calibrated on another version of {Path(router_path).name} (the router was trained again): "
            f"run tinybench calibrate --name {name} again"
        )
    return doc
