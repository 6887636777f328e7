"""The fenced code blocks of README.md and docs/*.md, and the markers that govern them.

A ``bash`` or ``python`` block runs in the docs tests unless the line just before its fence (blank lines between are
allowed) is a skip marker with a reason::

    <!-- example: skip (starts a web server until stopped) -->

A block of any language whose marker names a file is written to that path of the test's project home before the
document's blocks run, so a guide's minimal example files are the ones its commands read::

    <!-- example: file data/incoming/myboard/scores.csv -->
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNNABLE = ("bash", "python")
MARKER = re.compile(r"^<!--\s*example:\s*(?P<body>.*?)\s*-->\s*$")
SKIP = re.compile(r"^skip\s*\((?P<reason>.+)\)$")
FILE = re.compile(r"^file\s+(?P<path>[\w./-]+)$")
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w+-]*)\s*$")


@dataclass(frozen=True)
class Block:
    doc: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    skip: str | None = None
    file: str | None = None

    @property
    def where(self) -> str:
        return f"{rel(self.doc)}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.lang in RUNNABLE and self.skip is None and self.file is None


def rel(doc: Path) -> str:
    """The doc's path relative to the repository (its absolute path when it lies elsewhere)."""
    return str(doc.relative_to(ROOT)) if doc.is_relative_to(ROOT) else str(doc)


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def parse(doc: Path) -> list[Block]:
    """Every fenced block of ``doc`` with its marker. A marker that is neither a skip with a reason nor a file path,
    or one not followed by a fence, is an error naming the line."""
    lines = doc.read_text().splitlines()
    blocks, marker, marker_line, i = [], None, 0, 0
    while i < len(lines):
        text = lines[i]
        m = MARKER.match(text.strip())
        if m:
            if marker is not None:
                raise ValueError(f"{rel(doc)}:{marker_line}: example marker not followed by a fenced block")
            marker, marker_line = m.group("body"), i + 1
            i += 1
            continue
        f = FENCE.match(text)
        if f:
            end = i + 1
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            if end == len(lines):
                raise ValueError(f"{rel(doc)}:{i + 1}: fence never closed")
            indent = len(f.group("indent"))
            code = "\n".join(ln[indent:] for ln in lines[i + 1 : end]) + "\n"
            skip = path = None
            if marker is not None:
                s, p = SKIP.match(marker), FILE.match(marker)
                if s and s.group("reason").strip():
                    skip = s.group("reason").strip()
                elif p:
                    path = p.group("path")
                else:
                    raise ValueError(
                        f"{rel(doc)}:{marker_line}: example marker {marker!r} is neither "
                        "'skip (reason)' nor 'file PATH'"
                    )
            blocks.append(Block(doc, i + 1, f.group("lang"), code, skip, path))
            marker, i = None, end + 1
            continue
        if text.strip() and marker is not None:
            raise ValueError(f"{rel(doc)}:{marker_line}: example marker not followed by a fenced block")
        i += 1
    if marker is not None:
        raise ValueError(f"{rel(doc)}:{marker_line}: example marker not followed by a fenced block")
    return blocks
