"""The docs' examples run: every ``bash`` / ``python`` block of README.md and docs/*.md, in a small project home that
``home.py`` builds with the README's own main job, or a skip marker with its reason. Also: the generated figures
match benchmarks/results/*.json, the README stays short, and no doc narrates its own history."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from tinybench_assets_tests.test_docs import home as docs_home
from tinybench_assets_tests.test_docs.examples import ROOT, Block, documents, parse

pytestmark = pytest.mark.xdist_group("docs_home")
DOCS = documents()


@pytest.fixture(scope="session")
def built_home(tmp_path_factory):
    return docs_home.build(tmp_path_factory.mktemp("docs") / "home")


def run_block(block: Block, home, timeout: int = 300) -> subprocess.CompletedProcess:
    env = docs_home.env(home)
    if block.lang == "bash":
        cmd = ["bash", "-euo", "pipefail", "-c", block.code]
    else:
        cmd = [str(ROOT / ".venv" / "bin" / "python"), "-c", block.code]
    return subprocess.run(cmd, cwd=home, env=env, capture_output=True, text=True, timeout=timeout)


def test_every_block_runs_or_says_why():
    """Each doc parses (a malformed marker is an error naming its line). A bash/python block without a marker is run by
    test_examples_run; a skipped one says why in words, and an example file stays inside the project it is written to."""
    runs = 0
    for doc in DOCS:
        for b in parse(doc):
            if b.skip is not None:
                assert len(b.skip.split()) >= 3, f"{b.where}: skip reason too short to say why: {b.skip!r}"
            if b.file is not None:
                assert not b.file.startswith("/") and ".." not in b.file.split("/"), f"{b.where}: {b.file}"
            runs += b.runs
    assert runs >= 10  # the README's tour and the guides' commands


def test_markers_are_checked(tmp_path):
    bad = tmp_path / "bad.md"
    bad.write_text("text\n<!-- example: skipp (typo) -->\n```bash\necho\n```\n")
    with pytest.raises(ValueError, match=r"bad.md:2: example marker 'skipp \(typo\)'"):
        parse(bad)
    bad.write_text("<!-- example: skip () -->\n```bash\necho\n```\n")
    with pytest.raises(ValueError, match="neither"):
        parse(bad)
    bad.write_text("<!-- example: skip (why) -->\nsome words\n```bash\necho\n```\n")
    with pytest.raises(ValueError, match="not followed by a fenced block"):
        parse(bad)
    ok = tmp_path / "ok.md"
    ok.write_text(
        "<!-- example: skip (needs a cluster) -->\n\n```bash\nkubectl apply\n```\n"
        "<!-- example: file data/x.csv -->\n```csv\na,b\n```\n```python\nprint(1)\n```\n"
    )
    a, b, c = parse(ok)
    assert (a.skip, a.runs) == ("needs a cluster", False) and (b.file, b.runs) == ("data/x.csv", False) and c.runs


@pytest.mark.timeout(900)
@pytest.mark.parametrize("doc", DOCS, ids=[str(d.relative_to(ROOT)) for d in DOCS])
def test_examples_run(doc, built_home, tmp_path):
    """The doc's file blocks are written, then its runnable blocks run in order, in a copy of the built home (each doc
    starts from the same project). A failure names the block's line and shows its output."""
    blocks = parse(doc)
    runnable = [b for b in blocks if b.runs]
    if not runnable and not any(b.file for b in blocks):
        pytest.skip(f"{doc.name}: no runnable block")
    home = tmp_path / "home"
    shutil.copytree(built_home, home, symlinks=True)
    for b in blocks:
        if b.file:
            target = home / b.file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(b.code)
    for b in runnable:
        r = run_block(b, home)
        assert r.returncode == 0, (
            f"{b.where}: exit {r.returncode}\n--- block\n{b.code}--- stdout (end)\n"
            f"{r.stdout[-3000:]}\n--- stderr (end)\n{r.stderr[-3000:]}"
        )


def test_benchmark_figures_match_their_json():
    """docs/benchmarks.md and README's figures table are what benchmarks/report.py renders from the JSON files."""
    r = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), str(ROOT / "benchmarks" / "report.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr


def test_readme_is_short_and_docs_tell_no_history():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 160
    history = re.compile(
        r"\b(sessions?|before this (change|session|commit)|used to|no longer|previously|"
        r"earlier (sessions?|commits?|versions?)|once was)\b",
        re.IGNORECASE,
    )
    hits = [
        f"{d.relative_to(ROOT)}:{i}: {ln.strip()[:100]}"
        for d in DOCS
        for i, ln in enumerate(d.read_text().splitlines(), 1)
        if history.search(ln)
    ]
    assert not hits, "docs narrate history (it belongs in git):\n" + "\n".join(hits)


def test_architecture_names_every_module():
    """docs/architecture.md stays current with the code: every module of the package is named there."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    pkg = ROOT / "tinybench_assets"
    missing = [
        str(f.relative_to(pkg))
        for f in sorted(pkg.rglob("*.py"))
        if str(f.relative_to(pkg)) not in text and f"`{f.name}`" not in text
    ]
    assert not missing, f"docs/architecture.md does not name: {missing}"


def test_links_and_pictures_resolve():
    """Every relative link and picture of README.md and docs/ points at a file of the repository (pictures made by
    scripts/doc_figures.py from the main job's metadata included)."""
    link = re.compile(r"!?\[[^\]]*\]\(([^)#\s]+)(?:#[^)]*)?\)")
    missing = []
    for doc in DOCS:
        for i, ln in enumerate(doc.read_text().splitlines(), 1):
            for target in link.findall(ln):
                if "://" in target or target.startswith("mailto:"):
                    continue
                if not (doc.parent / target).exists():
                    missing.append(f"{doc.relative_to(ROOT)}:{i}: {target}")
    assert not missing, "\n".join(missing)
