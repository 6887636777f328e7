"""Shape of the package, read from the source with ``ast`` (nothing is imported).

* No import circle in the project's own import graph: absolute ``tinybench_assets.*`` imports and relative
  imports, at module level or inside functions (a lazy import still ties the two modules together). A circle
  among the modules of one ``KNOWN_CYCLE_GROUPS`` entry would be tolerated; the list is empty (the last one, the
  drop reader and its format readers, was untangled by ``io.drop_types``) and may not grow.
* No module over ``MAX_MODULE_LINES`` lines and no class over ``MAX_CLASS_LINES`` lines. ``KNOWN_LONG`` /
  ``KNOWN_LONG_CLASSES`` held the exceptions (with their line counts) while issue 13 split them; both are empty now,
  and a new one may not join them: split the module or class instead.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tinybench_assets

PACKAGE_DIR = Path(tinybench_assets.__file__).resolve().parent
ROOT = "tinybench_assets"
MAX_MODULE_LINES = 400
MAX_CLASS_LINES = 200

# module -> line count it had when listed (issue 13 split the last ones: keep these empty)
KNOWN_LONG: dict[str, int] = {}
# "module.Class" -> line count it had when listed (the last, io.store.Store, was split by issue 13)
KNOWN_LONG_CLASSES: dict[str, int] = {}


# circles allowed only among the modules of one set (none left: do not add to this list; untangle a circle instead)
KNOWN_CYCLE_GROUPS: list[set[str]] = []


# --------------------------------------------------------------------------- graph
def module_files(package_dir: Path = PACKAGE_DIR, root: str = ROOT) -> dict[str, Path]:
    """Dotted module name -> source file, for every ``.py`` under ``package_dir`` (``pkg/__init__.py`` is ``pkg``)."""
    out = {}
    for f in sorted(package_dir.rglob("*.py")):
        parts = [root, *f.relative_to(package_dir).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = f
    return out


def _resolve(name: str, modules) -> str | None:
    """The longest known module that ``name`` is or lies in (``pkg.mod.attr`` -> ``pkg.mod``)."""
    parts = name.split(".")
    while parts:
        cand = ".".join(parts)
        if cand in modules:
            return cand
        parts.pop()
    return None


def imports_of(module: str, source: str, is_package: bool, modules, root: str = ROOT) -> set[str]:
    """Project modules that ``module`` imports anywhere in ``source`` (module level, functions, branches)."""
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == root or alias.name.startswith(root + "."):
                    out.add(_resolve(alias.name, modules))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                base = ".".join(base + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if not (base == root or base.startswith(root + ".")):
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.add(sub if sub in modules else _resolve(base, modules))
    out.discard(None)
    out.discard(module)
    return out


def import_graph(package_dir: Path = PACKAGE_DIR, root: str = ROOT) -> dict[str, set[str]]:
    files = module_files(package_dir, root)
    return {mod: imports_of(mod, f.read_text(), f.name == "__init__.py", files, root) for mod, f in files.items()}


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per back edge of a depth-first search, each as [m0, m1, ..., m0]; [] when the graph is acyclic."""
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done
    stack: list[str] = []
    cycles = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return cycles


# --------------------------------------------------------------------------- the cycle finder itself
def test_find_cycles_on_synthetic_graphs():
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert find_cycles({"a": {"b", "c"}, "b": {"d"}, "c": {"d"}, "d": set()}) == []  # diamond, no circle
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    cycles = find_cycles({"x": {"y"}, "y": {"z"}, "z": {"y"}, "p": {"q"}, "q": {"p"}})
    assert sorted(map(tuple, cycles)) == [("p", "q", "p"), ("y", "z", "y")]


def test_imports_are_resolved_like_python(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "__init__.py").write_text("from .b import f\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from ..a import g  # lazy import: still an edge\n")
    (pkg / "c.py").write_text("import pkg.sub.b\nfrom pkg import a\nfrom pkg.sub import f\nimport numpy\n")
    graph = import_graph(pkg, "pkg")
    assert graph == {
        "pkg": set(),
        "pkg.a": {"pkg.sub.b"},
        "pkg.sub": {"pkg.sub.b"},
        "pkg.sub.b": {"pkg.a"},
        "pkg.c": {"pkg.sub.b", "pkg.a", "pkg.sub"},
    }
    assert find_cycles(graph) == [["pkg.a", "pkg.sub.b", "pkg.a"]]


# --------------------------------------------------------------------------- the project
def unexcused_cycles(graph: dict[str, set[str]], groups=KNOWN_CYCLE_GROUPS) -> list[list[str]]:
    """The cycles of ``graph`` that do not lie wholly inside one of ``groups``."""
    return [c for c in find_cycles(graph) if not any(set(c) <= group for group in groups)]


def test_a_new_circle_fails():
    graph = {"a": {"b"}, "b": {"a"}, "c": set()}
    assert unexcused_cycles(graph) == [["a", "b", "a"]]  # nothing excuses it
    assert unexcused_cycles(graph, [{"a", "b"}]) == []
    assert unexcused_cycles(graph, [{"a", "c"}]) == [["a", "b", "a"]]


def test_no_import_circle():
    graph = import_graph()
    assert "tinybench_assets.core.irt.model" in graph  # the walk sees subpackages
    cycles = unexcused_cycles(graph)
    assert not cycles, "import circles:\n" + "\n".join(" -> ".join(c) for c in cycles)
    assert not KNOWN_CYCLE_GROUPS, "KNOWN_CYCLE_GROUPS is empty since issue 13: untangle a new circle instead"


def _line_counts():
    return {mod: len(f.read_text().splitlines()) for mod, f in module_files().items()}


def test_no_new_long_module():
    counts = _line_counts()
    bad = {m: n for m, n in counts.items() if n > MAX_MODULE_LINES and n > KNOWN_LONG.get(m, MAX_MODULE_LINES)}
    assert not bad, (
        f"modules over {MAX_MODULE_LINES} lines (new, or grown past their KNOWN_LONG figure): {bad}; "
        "split them instead of raising the figure"
    )
    assert not KNOWN_LONG, "KNOWN_LONG is empty since issue 13: split a long module instead"


def test_no_new_long_class():
    bad = {}
    for mod, f in module_files().items():
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ClassDef):
                name, n = f"{mod}.{node.name}", node.end_lineno - node.lineno + 1
                if n > MAX_CLASS_LINES and n > KNOWN_LONG_CLASSES.get(name, MAX_CLASS_LINES):
                    bad[name] = n
    assert not bad, f"classes over {MAX_CLASS_LINES} lines (new, or grown past their KNOWN_LONG_CLASSES figure): {bad}"
    assert not KNOWN_LONG_CLASSES, "KNOWN_LONG_CLASSES is empty since issue 13: split a long class instead"


def test_orchestration_sits_below_defs_and_owns_dagsters_private_api():
    """The orchestration package imports nothing of ``defs``, and only its ``dagster_private`` module imports
    Dagster's private modules (``dagster._*``)."""
    graph = import_graph()
    upward = {
        m: sorted(d for d in deps if d.startswith(f"{ROOT}.defs"))
        for m, deps in graph.items()
        if m.startswith(f"{ROOT}.orchestration")
    }
    assert f"{ROOT}.orchestration.refresh_plan" in upward
    assert not any(upward.values()), f"orchestration modules importing defs: {upward}"
    private = []
    for mod, f in module_files().items():
        for node in ast.walk(ast.parse(f.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            private += [f"{mod}: {n}" for n in names if n.startswith("dagster._")]
    assert private and all(p.startswith(f"{ROOT}.orchestration.dagster_private:") for p in private), private


def test_no_asset_module_imports_another():
    """An asset module names the assets it depends on by key and takes shared names from ``defs`` (settings,
    partitions, resources) or io / core, never from another asset module (nor from its package's ``__init__``)."""
    graph = import_graph()
    pkg = f"{ROOT}.defs.assets"
    assets = {m for m in graph if m.startswith(pkg + ".")}
    assert f"{pkg}.router_eval" in assets and f"{pkg}.estimation" in assets
    crossed = {m: sorted(d for d in graph[m] if d == pkg or d in assets) for m in assets}
    assert not any(crossed.values()), f"asset modules importing asset modules: {crossed}"


def test_benchmarks_import_the_package_not_the_tests_and_only_tests_use_testing():
    """benchmarks/ imports the package (its ``testing`` harnesses included), never ``tinybench_assets_tests``; no
    product module imports ``tinybench_assets.testing``."""
    bench = Path(__file__).resolve().parents[2] / "benchmarks"
    bad = []
    for f in sorted(bench.glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            bad += [f"{f.name}: {n}" for n in names if n.split(".")[0] == "tinybench_assets_tests"]
    assert not bad, bad
    graph = import_graph()
    product = {
        m: sorted(d for d in deps if d.startswith(f"{ROOT}.testing"))
        for m, deps in graph.items()
        if not m.startswith(f"{ROOT}.testing")
    }
    assert not any(product.values()), product


MAX_FUNCTION_LINES = 80


def test_no_long_function():
    """No function or method of the package over MAX_FUNCTION_LINES lines (docstring included): a longer one is split
    into named steps."""
    long = {}
    for mod, f in module_files().items():
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long[f"{mod}.{node.name}"] = n
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"
