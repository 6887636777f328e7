"""Shape of the package's classes, read from the source with ``ast``: no class with more than ``MAX_BASES`` base
classes of the project's own (bases from the standard library, numpy, scikit-learn, pydantic or Dagster are not
counted), and none with more than ``MAX_FITTED`` fitted attributes (distinct ``self.<name>_`` assignments outside
``__init__``, private names included): state belongs to small objects with one job each."""

from __future__ import annotations

import ast

from tinybench_assets_tests.test_core.test_import_graph import module_files

MAX_BASES = 3
MAX_FITTED = 12
EXTERNAL_BASES = {
    "object",
    "Exception",
    "ValueError",
    "RuntimeError",
    "KeyError",
    "TypeError",
    "SystemExit",
    "NamedTuple",
    "TypedDict",
    "Protocol",
    "Enum",
    "str",
    "dict",
    "list",
    "tuple",
    "BaseEstimator",
    "TransformerMixin",
    "RegressorMixin",
    "ClassifierMixin",
    "BaseModel",
    "Generic",
}


def _base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):  # dg.ConfigurableResource, np.ndarray: a library's class
        return "external"
    if isinstance(node, ast.Subscript):
        return _base_name(node.value)
    return node.id if isinstance(node, ast.Name) else "external"


def _fitted(cls: ast.ClassDef) -> set[str]:
    names = set()
    for fn in cls.body:
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn.name == "__init__":
            continue
        for node in ast.walk(fn):
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else ([node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
            )
            for t in targets:
                for el in t.elts if isinstance(t, ast.Tuple) else [t]:
                    if (
                        isinstance(el, ast.Attribute)
                        and isinstance(el.value, ast.Name)
                        and el.value.id == "self"
                        and el.attr.endswith("_")
                        and not el.attr.endswith("__")
                    ):
                        names.add(el.attr)
    return names


def class_shapes() -> dict[str, tuple[int, set[str]]]:
    """{"module.Class": (own bases, fitted attribute names)} for every class of the package."""
    out = {}
    for mod, path in module_files().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                own = [b for b in node.bases if _base_name(b) not in EXTERNAL_BASES | {"external"}]
                out[f"{mod}.{node.name}"] = (len(own), _fitted(node))
    return out


def test_the_shape_reader_counts_bases_and_fitted_attributes():
    src = (
        "class A(B, C, D, E, dg.Config):\n    def __init__(self):\n        self.p_ = 1\n"
        "    def fit(self):\n        self.a_, self.b_ = 1, 2\n        self.c_ += 1\n        self.d = 3\n"
    )
    cls = ast.parse(src).body[0]
    assert len([b for b in cls.bases if _base_name(b) not in EXTERNAL_BASES | {"external"}]) == 4
    assert _fitted(cls) == {"a_", "b_", "c_"}


def test_no_class_with_many_bases_or_much_fitted_state():
    shapes = class_shapes()
    assert len(shapes) > 100
    many_bases = {k: b for k, (b, _) in shapes.items() if b > MAX_BASES}
    assert not many_bases, f"classes with more than {MAX_BASES} project bases: {many_bases}"
    fat = {k: sorted(f) for k, (_, f) in shapes.items() if len(f) > MAX_FITTED}
    assert not fat, f"classes with more than {MAX_FITTED} fitted attributes: {fat}"
