"""The package root shows the architecture: `normalization_core/` holds its public face (`api.py`), the
vocabulary every layer shares (`columns.py`: system columns, `errors.py`: exceptions) and one sub-package per layer.
A layer imports only the layers below it, and no module imports itself back through others: both rules count the
imports made for type hints alone (`if TYPE_CHECKING:`), since such a circle ties the layers as any other. The
application (`lakenorm_app`) uses the library through `api` only, and nothing in the library or the Dagster code
imports the application."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "normalization_core"
ROOT_MODULES = {"__init__.py", "api.py", "columns.py", "errors.py"}
LAYERS = ("naming", "schema", "transform", "runtime", "io", "configuration", "inputs", "checks", "dispositions", "plans",
          "passes")
"""Bottom up: each imports only those before it (and the root's `columns` and `errors`); `api` imports any."""
PACKAGES = ("normalization_core", "pipeline_assets", "lakenorm_app")


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports (`from pkg import name` counts as `pkg.name` too), at any depth: also under
    `if TYPE_CHECKING:` and inside functions."""
    return imported_modules_of_text(path.read_text(encoding="utf-8"))


def imported_modules_of_text(text: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found


def test_the_package_root_holds_the_api_the_shared_vocabulary_and_one_package_per_layer():
    modules = {p.name for p in LIBRARY.glob("*.py")}
    packages = {p.name for p in LIBRARY.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert modules == ROOT_MODULES
    assert packages == set(LAYERS)
    assert not [p for p in LIBRARY.iterdir() if p.is_dir() and p.name != "__pycache__" and p.name not in LAYERS]


def layer_of(module: str) -> str | None:
    """`normalization_core.<layer>...` -> the layer; None for the root's modules and anything else."""
    parts = module.split(".")
    return parts[1] if parts[0] == "normalization_core" and len(parts) > 1 and parts[1] in LAYERS else None


def test_each_layer_imports_only_the_layers_below_it_also_for_type_hints():
    upward = {}
    for layer in LAYERS:
        above = set(LAYERS[LAYERS.index(layer) + 1:])
        for path in sorted((LIBRARY / layer).rglob("*.py")):
            found = sorted(m for m in imported_modules(path) if layer_of(m) in above)
            if found:
                upward[path.relative_to(ROOT).as_posix()] = found
    assert upward == {}


def module_imports() -> dict[str, set[str]]:
    """Each module of the project's packages (a package as its `__init__`) and the project modules it imports."""
    paths = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            paths[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return {module: {m for m in imported_modules(path) if m in paths and m != module} for module, path in paths.items()}


def import_circles(imports: dict[str, set[str]]) -> list[list[str]]:
    """The modules that import themselves back through others, one sorted list per circle (Tarjan's strongly
    connected components of more than one module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in sorted(imports[module]):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            members = stack[stack.index(module):]
            del stack[stack.index(module):]
            if len(members) > 1:
                circles.append(sorted(members))

    for module in sorted(imports):
        if module not in index:
            visit(module)
    return circles


def test_no_module_imports_itself_back_through_others_also_for_type_hints():
    assert import_circles(module_imports()) == []


def test_an_import_for_type_hints_alone_closes_a_circle_as_any_other():
    plan, disposition = "normalization_core.plans.stream_plans", "normalization_core.dispositions.base"
    hinted = imported_modules_of_text(
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from normalization_core.plans.stream_plans import StreamPlan\n")
    assert plan in hinted
    imports = {disposition: hinted & {plan}, plan: {disposition}}
    assert import_circles(imports) == [[disposition, plan]]
    assert layer_of(plan) in LAYERS[LAYERS.index(layer_of(disposition)) + 1:]  # and it points upward


def test_the_application_uses_the_library_through_its_api_and_nothing_imports_the_application():
    app = {path.relative_to(ROOT).as_posix(): sorted(m for m in imported_modules(path) if m.startswith("normalization_core")
                                                     and not m.startswith("normalization_core.api"))
           for path in sorted((ROOT / "lakenorm_app").glob("*.py"))}
    assert {path: used for path, used in app.items() if used} == {}
    users = [path.relative_to(ROOT).as_posix() for package in ("normalization_core", "pipeline_assets")
             for path in sorted((ROOT / package).rglob("*.py"))
             if any(m.startswith("lakenorm_app") for m in imported_modules(path))]
    assert users == []
