"""Whole-or-nothing file writes, shared by the saved models (io/model_files.py) and the tiny-benchmark artifact."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

__all__ = ["atomic_write"]


def atomic_write(path: str | Path, write: Callable[[Path], None]) -> Path:
    """Write a file whole or not at all: ``write(tmp)`` fills a temporary file beside ``path``, which then replaces
    ``path`` in one step (a reader never sees half a model; a failed write leaves the old one). Returns ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path
