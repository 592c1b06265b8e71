"""The tree shows the architecture: a one-way import graph, short functions, packages not prefixes.

* No import cycle among the modules of autograder/ and coursekit/, counting imports inside
  functions too.
* The layers import downwards only: course <- nb <- checks <- release <- grade <- report (samples,
  collect and export sit beside grade and may not be imported by the stages).
* Every function is under 60 lines, except the one shipped into the kernel.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("autograder", "coursekit")
LAYERS = [
    "autograder.course",
    "autograder.nb",
    "autograder.checks",
    "autograder.release",
    "autograder.grade",
    "autograder.report",
]
EXEMPT_LONG = {("autograder/checks/harness.py", "call")}  # shipped into the kernel as one piece
MAX_LINES = 60


def _modules() -> dict[str, Path]:
    mods = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = path
    return mods


def _resolve(module: str, node: ast.ImportFrom | ast.Import, is_pkg: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = module.split(".") if is_pkg else module.split(".")[:-1]
    if node.level:
        base = base[: len(base) - node.level + 1]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    return [target] + [f"{target}.{a.name}" for a in node.names]


def import_graph() -> dict[str, set[str]]:
    mods = _modules()
    graph = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        deps = set()
        for node in ast.walk(tree):  # imports inside functions count too
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _resolve(name, node, path.name == "__init__.py"):
                    if target in mods and target != name:
                        deps.add(target)
        graph[name] = deps
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph[n]):
            if state.get(m) == 1:
                return stack[stack.index(m) :] + [m]
            if m not in state and (found := visit(m)):
                return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (found := visit(n)):
            return found
    return None


def _is_package_init_edge(a: str, b: str) -> bool:
    """A package's __init__ re-exporting its own modules is not a cycle of the architecture."""
    return b.startswith(a + ".")


def test_no_import_cycle_among_autograder_and_coursekit_modules():
    graph = {
        a: {b for b in deps if not _is_package_init_edge(a, b)}
        for a, deps in import_graph().items()
    }
    assert _cycle(graph) is None, f"import cycle: {' -> '.join(_cycle(graph))}"


def _layer(module: str) -> int | None:
    hits = [
        i for i, prefix in enumerate(LAYERS) if module == prefix or module.startswith(prefix + ".")
    ]
    return hits[-1] if hits else None


def test_layers_import_downwards_only():
    wrong = []
    for a, deps in import_graph().items():
        la = _layer(a)
        for b in deps:
            lb = _layer(b)
            if la is not None and lb is not None and lb > la:
                wrong.append(f"{a} imports {b}")
            # The grading benchmark builds its submissions from the samples: a tool on top.
            tool = a == "autograder.grade.bench"
            if (
                b.startswith(("autograder.samples", "autograder.export", "autograder.collect"))
                and la is not None
                and not tool
            ):
                wrong.append(f"{a} imports {b}")
    assert not wrong, wrong


def _long_functions():
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = str(path.relative_to(ROOT))
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    n = node.end_lineno - node.lineno + 1
                    if n >= MAX_LINES and (rel, node.name) not in EXEMPT_LONG:
                        yield f"{rel}:{node.lineno} {node.name} ({n} lines)"


def test_every_function_is_under_sixty_lines():
    long = list(_long_functions())
    assert not long, long


def test_no_flat_grading_prefix_modules():
    flat = [p.name for p in (ROOT / "autograder").glob("grading_*.py")]
    assert not flat, f"modules that should live in a package: {flat}"


@pytest.mark.parametrize("layer", LAYERS)
def test_each_layer_exists(layer):
    assert layer in _modules(), layer
