"""What the UI shows about an asset before it is opened: a title, a description, owners and kinds.

``@dg.asset(**card("Title", "What it is and what it answers", kinds=...))``: the title leads the description (bold)
and is kept as definition metadata (``title``), so the asset page and the catalog both read it.
Owners default to ``team:evaluation``; a deployment names its own with ``TINYBENCH_OWNERS`` (comma-separated
e-mail addresses or ``team:<name>`` entries, as Dagster requires).
"""

from __future__ import annotations

import os

DEFAULT_OWNERS = ("team:evaluation",)


def owners() -> list[str]:
    raw = os.environ.get("TINYBENCH_OWNERS", "")
    found = [o.strip() for o in raw.split(",") if o.strip()]
    return found or list(DEFAULT_OWNERS)


def card(title: str, text: str, kinds: tuple[str, ...] = ("python", "duckdb")) -> dict:
    """Keyword arguments for ``@dg.asset`` / ``dg.AssetSpec``: description, metadata.title, owners, kinds."""
    if not title or not text:
        raise ValueError("an asset card needs a title and a description")
    return {
        "description": f"**{title}.** {text}",
        "metadata": {"title": title},
        "owners": owners(),
        "kinds": set(kinds),
    }
