"""The test-helper paste is tree-shaken: a released notebook gets only the shared definitions its
chapter uses (autograder/release/inline.py, :func:`shake`).

* on a small example, the shaker keeps what the last module uses, transitively and in either
  direction, with the imports and constants that needs, in source order, and drops the rest;
* in every chapter's pasted helpers, each definition from judges.py (and harness, compare,
  visible) is used by another pasted statement, and none of the pasted code refers to a name that
  was left out (so the cell cannot raise NameError later, whichever judge runs);
* a mistake two chapters share, defined once in judges.py, reaches only those two notebooks.

That every pasted cell runs on its own is tests/test_visible.py's
test_the_pasted_helpers_run_alone_and_export_two_names; that its test cells judge as the hidden
ones do is the rest of that file.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import symtable

import pytest

from autograder.course import assignments
from autograder.release.inline import INLINE, inline_cell_source, shake, split_statements

SHARED = [m for m in INLINE["tests"][0] if "{chapter}" not in m]
CHAPTERS = [a[:2] for a in assignments()]

FIRST = '''"""A shared module."""
import math
from collections import Counter, OrderedDict

LIMIT = 3  # used by helper, defined below it
UNUSED = 5


def helper(x):
    return math.floor(x) + LIMIT + later()


def later():
    return 1


def dead():
    return Counter()
'''
LAST = """def public(x):
    return helper(x)


EXPORTED = OrderedDict
"""


def test_the_shaker_keeps_what_the_last_module_uses_transitively_in_source_order():
    first, last = shake([split_statements(FIRST), split_statements(LAST)])
    text = "\n".join(first)
    assert text.startswith('"""A shared module."""')  # a docstring is kept
    assert "import math" in text and "LIMIT = 3" in text
    assert "from collections import OrderedDict" in text and "Counter" not in text
    assert "def helper" in text and "def later" in text  # later: used from inside helper
    assert "UNUSED" not in text and "def dead" not in text
    order = [text.index(s) for s in ("import math", "LIMIT", "def helper", "def later")]
    assert order == sorted(order)
    assert "\n".join(last) == LAST.strip("\n")  # the last module is kept whole
    ns: dict = {}
    exec("\n".join(first + last), ns)  # noqa: S102 - our own example
    assert ns["public"](2.5) == 6


def test_roots_keep_a_definition_the_last_module_does_not_use():
    (first, _) = shake([split_statements(FIRST), split_statements(LAST)], roots=("dead",))
    assert any("def dead" in t for t in first)
    assert any("from collections import Counter, OrderedDict" in t for t in first)


def _helper_body(chapter: str) -> list[ast.stmt]:
    tree = ast.parse(inline_cell_source({"inline": "tests", "chapter": chapter}))
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    return fn.body


def _bound(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def _loaded(node: ast.stmt) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _shared_names() -> set[str]:
    names = set()
    for module in SHARED:
        for node in ast.parse(inspect.getsource(importlib.import_module(module))).body:
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                names |= _bound(node)
    return names


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_pasted_shared_definition_is_used_by_another_pasted_statement(chapter):
    """No dead definition from judges.py (or harness, compare, visible): each one the cell defines
    is referred to by some other statement of the cell (or handed back: expect, Raises)."""
    body = _helper_body(chapter)
    shared = _shared_names()
    unused = []
    for i, node in enumerate(body):
        others = set().union(*(_loaded(n) for j, n in enumerate(body) if j != i))
        unused += sorted((_bound(node) & shared) - others)
    assert not unused, f"chapter {chapter}'s helpers define names nothing uses: {unused}"


def _free_globals(table) -> set[str]:
    names = {s.get_name() for s in table.get_symbols() if s.is_referenced() and s.is_global()}
    return names.union(*(_free_globals(c) for c in table.get_children()))


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_pasted_helpers_refer_to_no_name_they_left_out(chapter):
    """Inside the helper function every name is one of its own or a builtin: a definition the
    shaker dropped but some judge still calls would show here as a global name."""
    src = inline_cell_source({"inline": "tests", "chapter": chapter})
    top = symtable.symtable(src, "<helpers>", "exec")
    helpers = next(c for c in top.get_children() if c.get_name() == "_tests_helpers")
    missing = sorted(n for n in _free_globals(helpers) if not hasattr(builtins, n))
    assert not missing, f"chapter {chapter}'s helpers use names they do not define: {missing}"


def _defines(chapter: str) -> set[str]:
    return set().union(*(_bound(n) for n in _helper_body(chapter)))


SHARED_BY_TWO = {
    "GLOBAL_MAX": {"05", "06"},
    "UNSTABLE_SOFTMAX": {"05", "06"},
    "EPS_INSIDE_SQRT": {"03", "08"},
    "EPS_CORRECTED": {"03", "08"},
    "eps_moved_factor": {"03", "08"},
    "row_ids_problem": {"02", "08"},
}


@pytest.mark.parametrize("name", sorted(SHARED_BY_TWO))
def test_a_shared_mistake_reaches_only_the_notebooks_that_use_it(name):
    having = {ch for ch in CHAPTERS if name in _defines(ch)}
    assert having == SHARED_BY_TWO[name]
    assert name in _shared_names()


def test_the_softmax_and_eps_mistakes_are_defined_once():
    """Each is defined in judges.py and only imported by the chapters' public modules."""
    for ch in CHAPTERS:
        module = importlib.import_module(f"autograder.checks.public.ch{ch}")
        defined = set().union(*(_bound(n) for n in ast.parse(inspect.getsource(module)).body))
        imported = {
            a.asname or a.name
            for n in ast.parse(inspect.getsource(module)).body
            if isinstance(n, ast.ImportFrom)
            for a in n.names
        }
        assert not (defined - imported) & set(SHARED_BY_TWO), ch
