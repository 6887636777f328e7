"""The landing folder: ingest new or changed drops into the store, quarantine bad ones, and write the rows a reader
rejected from a file that landed to ``<quarantine>/<leaderboard>/<file name>.rejected.csv``."""

from __future__ import annotations

import logging
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from tinybench_assets.io.drops import sidecar_path

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
    #: per ingested file that lost rows: (how many rows were rejected, the ``.rejected.csv`` that holds them)
    rejected: dict[str, tuple[int, str]] = field(default_factory=dict)

    def summary(self) -> str:
        text = (
            f"{len(self.ingested)} drop(s) ingested, {len(self.skipped)} unchanged, "
            f"{len(self.quarantined)} quarantined; partitions touched: {sorted(self.partitions)}"
        )
        if self.rejected:
            text += f"; {sum(n for n, _ in self.rejected.values())} row(s) rejected from {len(self.rejected)} file(s)"
        return text + "".join(f"\n  {rel}: {note}" for rel, notes in self.notes.items() for note in notes)


def quarantine_file(path: Path, incoming: Path, quarantine_dir: Path, error: str) -> Path:
    """Move a bad drop to ``<quarantine>/<leaderboard>/`` with ``<name>.error.txt`` beside it (a symbolic link is moved
    as the link; the file it points to stays where it is)."""
    rel = path.relative_to(incoming)  # as listed under the landing folder: the target stays under the quarantine folder
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


def write_rejected(rejected: pd.DataFrame, path: Path, incoming: Path, quarantine_dir: Path) -> Path:
    """Write a landed drop's rejected rows (``row``, ``reason``, then the row's cells) to
    ``<quarantine>/<leaderboard>/<file name>.rejected.csv`` (timestamped when an earlier version's file is there)."""
    rel = path.relative_to(incoming)
    target_dir = quarantine_dir / rel.parent
    target_dir.mkdir(parents=True, exist_ok=True)
    target = target_dir / f"{rel.name}.rejected.csv"
    if target.exists():
        target = target_dir / f"{rel.name}.{time.strftime('%Y%m%dT%H%M%S')}.rejected.csv"
    rejected.to_csv(target, index=False)
    return target


def check_inside(path: Path, incoming: Path) -> None:
    """Raise DropError for a symbolic link that leads out of the landing folder: such a file is never read (it could
    make an ingest report quote a file the uploader may not read), only quarantined (the link itself)."""
    if path.is_symlink() and not path.resolve().is_relative_to(Path(incoming).resolve()):
        raise DropError(
            path,
            f"symbolic link to {path.resolve()}, outside the landing folder: not read "
            "(copy the file into the landing folder instead)",
        )


_SHA_CACHE: dict[tuple, str] = {}


def _cached_sha(path: Path) -> str:
    """drop_sha256, remembered per (path, size, mtime) of the file and its sidecar: the daemon's sensor asks every
    tick, and a file that has not changed is not read again."""
    side = sidecar_path(path)
    marks = tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in (path, side) if p is not None)
    if marks not in _SHA_CACHE:
        if len(_SHA_CACHE) > 100_000:
            _SHA_CACHE.clear()
        _SHA_CACHE[marks] = drop_sha256(path)
    return _SHA_CACHE[marks]


#: what a landing file is to its leaderboard's store (:func:`landing_action`)
LAND, HELD, RENAMED = "land", "held", "renamed"


def landing_action(stored: tuple[str, str, str] | None, relpath: str, incoming: Path) -> str:
    """What the file at ``relpath`` is, given the ``(drop_id, status, path)`` its leaderboard stored for its bytes
    (``Store.stored_drop``):

    - ``land``: bytes new to the leaderboard, or a version it has superseded since (the file reverted, an older version
      put back under any name): its rows went when it was superseded, so it lands again;
    - ``renamed``: the bytes active under another name whose file is gone from the landing folder: the stored version
      takes this name (its rows stay), so that a later change of this file supersedes it;
    - ``held``: the bytes active under this name, or beside another file with the same bytes (a copy).
    """
    if stored is None or stored[1] == "superseded":
        return LAND
    if stored[2] != relpath and not (incoming / stored[2]).exists():
        return RENAMED
    return HELD


def pending_drops(store: Store, incoming: Path | str) -> list[str]:
    """Landing files (relative paths) an ingest would act on (:func:`landing_action`: to land, or a renamed file)."""
    incoming = Path(incoming)
    out = []
    for path in landing_files(incoming):
        try:
            sha, board = _cached_sha(path), leaderboard_of(path, incoming)
        except FileNotFoundError:
            continue
        except DropError:  # a folder name without usable characters: the ingest quarantines it
            board = None
        rel = str(path.relative_to(incoming))
        if board is None or landing_action(store.stored_drop(sha, board), rel, incoming) != HELD:
            out.append(rel)
    return out


def ingest_landing(
    store: Store,
    incoming: Path | str,
    quarantine_dir: Path | str,
    leaderboard: str | None = None,
    trust_pickles: bool | str | None = None,
) -> IngestReport:
    """Ingest every new or changed drop under ``incoming`` (one transaction per drop).

    Idempotent: a file whose bytes its leaderboard holds active is skipped (:func:`landing_action`: the same bytes in
    another leaderboard's folder land there too; a version superseded since lands again; a renamed file's stored
    version takes its new name). A bad file is moved to
    ``quarantine_dir`` with an error report, and the other files still ingest. The rows a reader rejected from a file
    that lands (``Drop.rejected``) are written beside the quarantined files (:func:`write_rejected`), counted in
    ``report.rejected`` and noted. ``trust_pickles``: see
    :func:`tinybench_assets.io.pickle_drops.pickles_trusted` (None: the environment's setting, default off).
    """
    incoming, quarantine_dir = Path(incoming), Path(quarantine_dir)
    report = IngestReport()
    for path in landing_files(incoming):
        try:
            board, bad = leaderboard_of(path, incoming), None
            check_inside(path, incoming)
        except DropError as err:  # a folder name without usable characters, a link out of the landing folder
            board, bad = None, err
        if leaderboard is not None and board != leaderboard:
            continue
        rel = str(path.relative_to(incoming))
        try:
            sha = drop_sha256(path) if bad is None else None  # with a matrix's sidecar, the bytes of both
        except FileNotFoundError:  # moved away by a concurrent run
            continue
        stored = store.stored_drop(sha, board) if sha is not None else None
        action = landing_action(stored, rel, incoming)  # LAND where nothing is stored (a bad file: quarantined below)
        if action == RENAMED:
            store.rename_drop(stored[0], rel)
            log.info("%s: the version landed as %s, whose file is gone, now goes by this name", rel, stored[2])
        if action != LAND:
            report.skipped.append(rel)
            continue
        try:
            if bad is not None:
                raise bad
            drop = read_drop(path, board, trust_pickles=trust_pickles)
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
            if len(drop.rejected):
                saved = write_rejected(drop.rejected, path, incoming, quarantine_dir)
                report.rejected[rel] = (len(drop.rejected), str(saved))
                drop.notes.append(f"{len(drop.rejected)} rejected row(s) written to {saved}")
                log.warning("%s: %d row(s) rejected, written to %s", rel, len(drop.rejected), saved)
            if drop.notes:
                report.notes[rel] = list(drop.notes)
                for note in drop.notes:
                    log.info("%s: %s", rel, note)
        else:
            report.skipped.append(rel)
        del drop  # a million-row drop is not kept while the next file is read
    return report


def seed_default_data(shared_data: Path | str, incoming: Path | str) -> list[Path]:
    """Copy the real default data sets (openllm long tables, the Open LLM Leaderboard v2's long table: a small board of
    19 models, RouterDC JSON, RouterBench wide tables with costs, RouteLLM's two-model wide tables) into the landing
    folder.

    Files already there with the same bytes are left alone. Returns the files copied.
    """
    shared_data, incoming = Path(shared_data), Path(incoming)
    copied = []
    for board, pattern in (
        ("openllm", "*.parquet"),
        ("openllm_v2", "*.parquet"),
        ("routerdc", "*.json"),
        ("routerbench", "*.csv"),
        ("routellm", "*.csv"),
    ):
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
