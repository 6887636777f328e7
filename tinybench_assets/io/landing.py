"""The landing folder: ingest new or changed drops into the store, quarantine bad ones."""
from __future__ import annotations

import logging
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from .drops import DropError, drop_sha256, file_sha256, landing_files, leaderboard_of, read_drop
from .store import Store

log = logging.getLogger(__name__)


@dataclass
class IngestReport:
    ingested: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    quarantined: dict[str, str] = field(default_factory=dict)
    partitions: set[str] = field(default_factory=set)
    #: what a reader decided on its own per ingested file (detected matrix orientation, ignored columns)
    notes: dict[str, list[str]] = field(default_factory=dict)

    def summary(self) -> str:
        text = (
            f"{len(self.ingested)} drop(s) ingested, {len(self.skipped)} unchanged, "
            f"{len(self.quarantined)} quarantined; partitions touched: {sorted(self.partitions)}"
        )
        return text + "".join(f"\n  {rel}: {note}" for rel, notes in self.notes.items() for note in notes)


def quarantine_file(path: Path, incoming: Path, quarantine_dir: Path, error: str) -> Path:
    """Move a bad drop to ``<quarantine>/<leaderboard>/`` with ``<name>.error.txt`` beside it."""
    rel = path.resolve().relative_to(incoming.resolve())
    target_dir = quarantine_dir / rel.parent
    target_dir.mkdir(parents=True, exist_ok=True)
    target = target_dir / rel.name
    if target.exists():
        target = target_dir / f"{path.stem}.{time.strftime('%Y%m%dT%H%M%S')}{path.suffix}"
    shutil.move(str(path), target)
    target.with_name(target.name + ".error.txt").write_text(
        f"{error}\n\noriginal path: {path}\nquarantined at: {time.strftime('%Y-%m-%d %H:%M:%S')}\n"
        "Fix the file and drop it into the landing folder again.\n",
        encoding="utf-8",
    )
    return target


def pending_drops(store: Store, incoming: Path | str) -> list[str]:
    """Landing files (relative paths) whose bytes the store has not ingested yet: what an ingest would read."""
    incoming = Path(incoming)
    out = []
    for path in landing_files(incoming):
        try:
            sha = drop_sha256(path)
        except FileNotFoundError:
            continue
        if store.drop_status(sha) is None:
            out.append(str(path.resolve().relative_to(incoming.resolve())))
    return out


def ingest_landing(store: Store, incoming: Path | str, quarantine_dir: Path | str, leaderboard: str | None = None) -> IngestReport:
    """Ingest every new or changed drop under ``incoming`` (one transaction per drop).

    Idempotent: a file whose bytes were ingested before is skipped. A bad file is moved to
    ``quarantine_dir`` with an error report, and the other files still ingest.
    """
    incoming, quarantine_dir = Path(incoming), Path(quarantine_dir)
    report = IngestReport()
    for path in landing_files(incoming):
        board = leaderboard_of(path, incoming)
        if leaderboard is not None and board != leaderboard:
            continue
        rel = str(path.resolve().relative_to(incoming.resolve()))
        try:
            sha = drop_sha256(path)  # with a matrix's sidecar, the bytes of both
        except FileNotFoundError:  # moved away by a concurrent run
            continue
        if store.drop_status(sha) is not None:
            report.skipped.append(rel)
            continue
        try:
            drop = read_drop(path, board)
        except DropError as err:
            try:
                moved = quarantine_file(path, incoming, quarantine_dir, str(err))
            except FileNotFoundError:
                continue
            store.record_quarantine(rel, sha, str(err), str(moved))
            report.quarantined[rel] = str(err)
            continue
        if store.ingest_drop(drop, rel):
            report.ingested.append(rel)
            report.partitions.update(drop.partition_keys())
            if drop.notes:
                report.notes[rel] = list(drop.notes)
                for note in drop.notes:
                    log.info("%s: %s", rel, note)
        else:
            report.skipped.append(rel)
    return report


def seed_default_data(shared_data: Path | str, incoming: Path | str) -> list[Path]:
    """Copy the real default data sets (openllm long tables, RouterDC JSON) into the landing folder.

    Files already there with the same bytes are left alone. Returns the files copied.
    """
    shared_data, incoming = Path(shared_data), Path(incoming)
    copied = []
    for board, pattern in (("openllm", "*.parquet"), ("routerdc", "*.json")):
        src_dir = shared_data / board
        if not src_dir.is_dir():
            continue
        dst_dir = incoming / board
        dst_dir.mkdir(parents=True, exist_ok=True)
        for src in sorted(src_dir.glob(pattern)):
            dst = dst_dir / src.name
            if dst.exists() and file_sha256(dst) == file_sha256(src):
                continue
            shutil.copyfile(src, dst)
            copied.append(dst)
    return copied
