"""The landing folder: ingest new or changed drops into the store, quarantine bad ones."""
from __future__ import annotations

import logging
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from .drops import DropError, drop_sha256, file_sha256, landing_files, leaderboard_of, partition_key, read_drop, routerdc_scenario
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


def check_inside(path: Path, incoming: Path) -> None:
    """Raise DropError for a symbolic link that leads out of the landing folder: such a file is never read (it could
    make an ingest report quote a file the uploader may not read), only quarantined (the link itself)."""
    if path.is_symlink() and not path.resolve().is_relative_to(Path(incoming).resolve()):
        raise DropError(path, f"symbolic link to {path.resolve()}, outside the landing folder: not read "
                        "(copy the file into the landing folder instead)")


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
            out.append(str(path.relative_to(incoming)))
    return out


def ingest_landing(store: Store, incoming: Path | str, quarantine_dir: Path | str, leaderboard: str | None = None,
                   trust_pickles: bool | str | None = None) -> IngestReport:
    """Ingest every new or changed drop under ``incoming`` (one transaction per drop).

    Idempotent: a file whose bytes were ingested before is skipped. A bad file is moved to
    ``quarantine_dir`` with an error report, and the other files still ingest. ``trust_pickles``: see
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
        if sha is not None and store.drop_status(sha) is not None:
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
            if drop.notes:
                report.notes[rel] = list(drop.notes)
                for note in drop.notes:
                    log.info("%s: %s", rel, note)
        else:
            report.skipped.append(rel)
        del drop  # a million-row drop is not kept while the next file is read
    return report


#: the landing sensor reads a file whole (exact partitions, full validation) only up to this size ...
FULL_READ_MAX_BYTES = 4 << 20
#: ... and up to this many bytes in one tick, all files together; beyond, it reads a sample (SAMPLE_ROWS rows)
TICK_FULL_READ_BYTES = 32 << 20
SAMPLE_ROWS = 1000


@dataclass
class DropPeek:
    """What a quick look at a landing file found (:func:`peek_drop`)."""

    keys: list[str]  # scenario partition keys seen
    complete: bool  # True: ``keys`` are all the file's partitions (read whole, or its name decides); False: a sample's
    error: str | None = None  # the DropError the file (or its sample) raised: an ingest run will quarantine it


def peek_drop(path: Path | str, incoming: Path | str, *, whole: bool = True, trust_pickles: bool | str | None = None) -> DropPeek:
    """A quick look at a landing file for the landing sensor, which must stay well inside its tick time.

    ``whole``: read and validate the whole file (small files). Otherwise only what is cheap: a ``.csv``/``.parquet``
    table's header and first SAMPLE_ROWS rows (the partitions of the sample: incomplete), a RouterDC ``.json``'s
    file name (its scenario, complete), a pickle nothing (never unpickled here unless trusted and small). A bad file or
    sample gives ``error``; nothing is moved (the ingest run quarantines)."""
    path, incoming = Path(path), Path(incoming)
    suffix = path.suffix.lower()
    try:
        board = leaderboard_of(path, incoming)
        check_inside(path, incoming)
        if whole or suffix not in (".csv", ".parquet", ".json", ".pkl", ".pickle"):
            return DropPeek(read_drop(path, board, trust_pickles=trust_pickles).partition_keys(), True)
        if suffix == ".json":
            try:
                return DropPeek([partition_key(board, routerdc_scenario(path)[0])], True)
            except ValueError as exc:
                raise DropError(path, f"no scenario name in the file name ({exc})") from None
        if suffix in (".pkl", ".pickle"):
            from .pickle_drops import pickles_trusted, untrusted_message

            if not pickles_trusted(board, trust_pickles):
                raise DropError(path, untrusted_message(board))
            return DropPeek([], False)
        return DropPeek(read_drop(path, board, sample_rows=SAMPLE_ROWS).partition_keys(), False)
    except DropError as err:
        return DropPeek([], whole, str(err))


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
