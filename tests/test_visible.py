"""The visible tests judge like the hidden ones, and nothing secret comes with them.

A released notebook's test cells call ``expect(...)`` from its test-helper cell, which
``make release`` pastes from autograder/checks/ (the harness, the comparisons, the judges, and the
chapter's public mistake models). Here, for every chapter:

* the pasted helpers run on their own (no import of the course) and hand the notebook only
  ``expect`` and ``Raises``; their modules import nothing that could carry the reference or the
  hidden cases;
* the reference and every correct alternative pass every visible test;
* each classic mistake fails, as nbgrader grades it (the visible part first, then the hidden
  part), exactly the cells ``make grade`` fails (hidden part only), and the failing cells' messages
  name it; as a student sees it (released notebook, visible part only), every message it gets
  from a failing cell names it too;
* no test cell ends in a value (nbgrader would read it as partial credit), and a cell's
  ``with expect.all():`` block reports every failing expectation, once, at its end.

The cells run in this process (our own sample answers), so the whole file takes seconds.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re

import numpy as np
import pytest

from autograder import nb, samples
from autograder.course import assignments, release_notebook, source_notebook
from autograder.release.inline import INLINE, inline_cell_source
from tests.test_fairness import alternative_params, mistake_params

PUBLIC = [m.format(chapter="") for m in INLINE["tests"][0][:-1]]
ALLOWED_IMPORTS = {
    "__future__",
    "copy",
    "inspect",
    "math",
    "numpy",
    "collections.abc",
    "dataclasses",
    "typing",
    "warnings",  # harness.call records the RuntimeWarnings of a student's call
    # harness.block_frameworks / frameworks_used, and visible.framework_problem: the grading
    # kernel's refusal of torch, and the look at a function's code that tells the student first
    "os",
    "re",
    "sys",
    "types",
}


def _chapter(a):
    return a[:2]


def _public_module(a):
    return f"autograder.checks.public.ch{_chapter(a)}"


@pytest.mark.parametrize("assignment", assignments())
def test_every_chapter_has_public_judges_and_a_test_helper_cell(assignment):
    importlib.import_module(_public_module(assignment))
    cells = nb.read(release_notebook(assignment))["cells"]
    helper = [c for c in cells if nb.is_inline(c) and c["metadata"]["course"]["inline"] == "tests"]
    assert len(helper) == 1, "the released notebook needs exactly one test-helper cell"
    first_test = next(i for i, c in enumerate(cells) if nb.is_test(c))
    assert cells.index(helper[0]) < first_test, "the test helpers must come before the tests"


@pytest.mark.parametrize(
    "module", PUBLIC + [f"autograder.checks.public.ch{a[:2]}" for a in assignments()]
)
def test_public_modules_import_nothing_secret(module):
    """Only numpy, a few standard modules and the other public modules: never the reference, the
    hidden cases (checks/chNN.py, data.py) or the course paths."""
    mod = importlib.import_module(module)
    allowed = set(PUBLIC) | ALLOWED_IMPORTS
    for node in ast.walk(ast.parse(inspect.getsource(mod))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            rel = "." * node.level + (node.module or "")
            names = [
                importlib.util.resolve_name(rel, mod.__package__) if node.level else node.module
            ]
        else:
            continue
        for name in names:
            assert name in allowed, f"{module} imports {name}"


@pytest.mark.parametrize("assignment", assignments())
def test_the_pasted_helpers_run_alone_and_export_two_names(assignment):
    src = inline_cell_source({"inline": "tests", "chapter": _chapter(assignment)})
    assert not re.search(r"^\s*(import|from) (autograder|coursekit)", src, re.M)
    ns: dict = {"expected": "a student's variable", "close": None}
    # dont_inherit: run it as a kernel does, without this file's `from __future__` imports
    exec(compile(src, "<test helpers>", "exec", dont_inherit=True), ns)  # noqa: S102
    names = {k for k in ns if not k.startswith("__")}
    assert names == {"expected", "close", "expect", "Raises"}, names
    assert ns["expected"] == "a student's variable"


# ----------------------------------------------------------------------------------------------
# Running test cells in this process
# ----------------------------------------------------------------------------------------------
def _executable(cell) -> bool:
    """The cells a test run needs: answers, tests, given code (nbgrader-locked) and the helpers."""
    if cell["cell_type"] != "code":
        return False
    if nb.is_inline(cell):
        return cell["metadata"]["course"]["inline"] == "tests"
    return bool(nb.meta(cell))


def _exec_cell(src: str, name: str, ns: dict):
    """Run a cell as IPython does and return its value: that of a last expression statement
    (what Out[] shows, and what nbgrader reads as partial credit), else None."""
    tree = ast.parse(src)
    last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    if last is not None:
        tree.body.pop()
    # dont_inherit: as a kernel runs it, without this file's `from __future__` imports
    exec(compile(tree, name, "exec", dont_inherit=True), ns)  # noqa: S102 - our own fixtures
    if last is None:
        return None
    return eval(compile(ast.Expression(last.value), name, "eval", dont_inherit=True), ns)  # noqa: S307


def _run(notebook: dict, hidden_sources: dict | None) -> dict:
    """grade_id -> the message a failing test cell shows (None when it passes). With
    ``hidden_sources`` (grade_id -> the source cell), each test cell runs as nbgrader grades it:
    the visible part, then the hidden part. A test cell that ends in a value fails: nbgrader
    would read the value as partial credit."""
    ns: dict = {"__name__": "__main__"}
    results = {}
    for cell in notebook["cells"]:
        if not _executable(cell):
            continue
        src = nb.source(cell)
        gid = nb.grade_id(cell)
        if nb.is_test(cell) and hidden_sources is not None:
            src = hidden_sources[gid]
        try:
            value = _exec_cell(src, f"<{gid or 'cell'}>", ns)
        except Exception as exc:  # noqa: BLE001 - a failing cell is the result
            if not nb.is_test(cell):
                raise
            results[gid] = f"{type(exc).__name__}: {exc}"
        else:
            if nb.is_test(cell):
                results[gid] = None if value is None else f"the cell ends in a value: {value!r}"
    return results


def _hidden_sources(assignment):
    return {
        nb.grade_id(c): nb.source(c)
        for c in nb.read(source_notebook(assignment))["cells"]
        if nb.is_test(c)
    }


def _released_with(assignment, sources):
    """The released notebook with these answers; the helper cell pasted from today's source."""
    notebook = samples.build(assignment, sources)
    for cell in notebook["cells"]:
        if nb.is_inline(cell) and cell["metadata"]["course"]["inline"] == "tests":
            cell["source"] = nb.split_lines(inline_cell_source(cell["metadata"]["course"]))
    return notebook


REFERENCES = [pytest.param(a, None, id=f"{a}:reference") for a in assignments()]


@pytest.mark.parametrize("assignment,name", REFERENCES + alternative_params())
def test_correct_answers_pass_every_visible_test(assignment, name):
    sources = {} if name is None else samples.module(assignment).ALTERNATIVES[name]
    results = _run(_released_with(assignment, sources), None)
    failing = {g: m for g, m in results.items() if m}
    assert results and not failing, f"a correct answer failed visible tests: {failing}"


@pytest.mark.parametrize("assignment,name", mistake_params())
def test_each_classic_mistake_is_named_by_the_cell_that_catches_it(assignment, name):
    mistake = samples.module(assignment).MISTAKES[name]
    notebook = _released_with(assignment, mistake.sources)
    graded = _run(notebook, _hidden_sources(assignment))
    failing = {g for g, m in graded.items() if m}
    assert failing == mistake.fails, (
        f"{name}: nbgrader (visible, then hidden) fails {sorted(failing)}; make grade fails "
        f"{sorted(mistake.fails)}: {graded}"
    )
    messages = " ".join(graded[g] for g in failing)
    assert mistake.says in messages, f"{name}: no {mistake.says!r} in: {messages}"
    student = {g: m for g, m in _run(notebook, None).items() if m}
    for gid, message in student.items():
        assert gid in mistake.fails, f"{name}: the visible test {gid} fails a cell grading passes"
        assert mistake.says in message, f"{name}: {gid} shows the student {message!r}"


# ----------------------------------------------------------------------------------------------
# A cell with several expectations: `with expect.all():` reports every failing one
# ----------------------------------------------------------------------------------------------
def _helpers(chapter: str) -> dict:
    ns: dict = {}
    src = inline_cell_source({"inline": "tests", "chapter": chapter})
    exec(compile(src, "<h>", "exec", dont_inherit=True), ns)  # noqa: S102
    return ns


ONE_HOT_TWO_BUGS = """
import numpy as np

def one_hot(ids, V):  # two bugs: integers, and the shape of ids lost
    flat = np.ravel(ids)
    return (flat[:, None] == np.arange(V)).astype(np.int64)
"""


def test_a_block_reports_every_failing_expectation_once_at_its_end():
    """The released test_one_hot cell (four expectations in one block) on an answer with two
    bugs: one error, with one line per failing expectation, each naming its mistake, then the
    first in full; and the stub stops the block at once with NotImplementedError."""
    a = "01_one_hot_lookup"
    cell = nb.source(nb.test_cells(_released_with(a, {}))["test_one_hot"])
    assert "with expect.all():" in cell
    ns = _helpers("01")
    exec(compile(ONE_HOT_TWO_BUGS, "<answer>", "exec"), ns)  # noqa: S102
    with pytest.raises(AssertionError) as err:
        exec(compile(cell, "<test_one_hot>", "exec"), ns)  # noqa: S102
    text = str(err.value)
    head, lines, full = text.split("\n")[0], text.split("\n")[1:5], text.split("\n", 6)[-1]
    assert head == "4 of the 4 expectations in this cell failed:", text
    # int64 everywhere; the shape lost wherever ids are not 1-D (the empty ids are)
    assert all("returns float64" in lines[i] for i in (0, 3)), lines
    assert all("lost the shape of ids" in ln for ln in lines[1:3]), lines
    assert text.split("\n")[5] == "The first in full:" and "returns float64" in full
    labels = [
        "ids [2, 0, 2] with V = 4",
        "ids of shape (2, 2) with V = 3",
        "a 0-d id, np.array(1)",
        "an empty ids array of shape (0,)",
    ]
    assert all(f"- {label}" in line for label, line in zip(labels, lines, strict=True)), lines
    exec("def one_hot(ids, V):\n    raise NotImplementedError()\n", ns)  # noqa: S102 - the stub
    with pytest.raises(NotImplementedError):
        exec(compile(cell, "<test_one_hot>", "exec"), ns)  # noqa: S102


def test_expect_returns_nothing_and_keeps_what_the_call_produced():
    ns = _helpers("01")
    E = np.arange(6.0).reshape(3, 2)
    exec("def embedding_forward(E, ids):\n    return E[ids]\n", ns)  # noqa: S102 - an answer
    fn = ns["embedding_forward"]
    assert ns["expect"](fn, (E, np.array([2, 0])), E[[2, 0]]) is None
    np.testing.assert_array_equal(ns["expect"].last, E[[2, 0]])
    with pytest.raises(AssertionError, match="row before the right one"):
        ns["expect"](fn, (E, np.array([1, 0])), E[[2, 1]])  # outside a block: raises at once


ALIASED = {
    "an alias of another function": "import numpy as np\n\n\ndef my_forward(E, ids):\n    return E[ids]\n\n"
    "embedding_forward = my_forward\n",
    "a lambda": "import numpy as np\n\nembedding_forward = lambda E, ids: E[ids]\n",
    "a decorator without functools.wraps": "import numpy as np\n\n\ndef logged(f):\n    def wrapper(*args):\n"
    "        return f(*args)\n    return wrapper\n\n\n@logged\ndef embedding_forward(E, ids):\n"
    "    return E[ids]\n",
}


@pytest.mark.parametrize("how", list(ALIASED))
def test_expect_finds_an_answer_defined_under_another_name(how):
    """expect looks a judge up by the function's __name__; an answer whose __name__ is not the
    exercise's (an alias, a lambda, a wrapper) is found by the name the calling cell binds to
    it, and judged as usual: as a test cell of the released notebook calls it, and in a run of
    the whole released notebook."""
    ns = _helpers("01")
    exec(ALIASED[how], ns)  # noqa: S102 - the answer cell
    E = np.arange(6.0).reshape(3, 2)
    ns["E"], ns["want"], ns["wrong"] = E, E[[2, 0]], E[[0, 2]]
    exec("expect(embedding_forward, (E, np.array([2, 0])), want)", {**ns, "np": np})  # noqa: S102
    with pytest.raises(AssertionError, match="row"):  # a wrong value is still judged
        exec("expect(embedding_forward, (E, np.array([2, 0])), wrong)", {**ns, "np": np})  # noqa: S102
    results = _run(_released_with("01_one_hot_lookup", {"embedding_forward": ALIASED[how]}), None)
    assert results["test_forward_values"] is None, results


def test_expect_says_what_to_do_when_no_name_refers_to_the_function():
    ns = _helpers("01")
    exec("def my_forward(E, ids):\n    return E[ids]\n", ns)  # noqa: S102 - never bound to the name
    with pytest.raises(AssertionError) as err:
        exec("expect(my_forward, (np.eye(2), np.array([0])), np.eye(2)[[0]])", {**ns, "np": np})  # noqa: S102
    text = str(err.value)
    assert "named 'my_forward'" in text and "embedding_forward = your_function" in text, text
    assert "KeyError" not in text and "judge" not in text, text


# ----------------------------------------------------------------------------------------------
# A graded function that uses torch: it runs here (torch imports), but no grading kernel has it
# ----------------------------------------------------------------------------------------------
A1 = "01_one_hot_lookup"
TORCH_FORWARD = {
    "a global": "import numpy as np\nimport torch\n\n"
    "def embedding_forward(E, ids):\n    return torch.as_tensor(E).numpy()[np.asarray(ids)]\n",
    "an import inside": "import numpy as np\n\n"
    "def embedding_forward(E, ids):\n    import torch\n\n    torch.manual_seed(0)\n"
    "    return np.asarray(E)[np.asarray(ids)]\n",
    "a helper of the notebook's": "import numpy as np\nimport torch\n"
    "import torch.nn.functional as F\n\n"
    "def _rows(E, ids):\n"
    "    ids = torch.as_tensor(np.asarray(ids, dtype=np.int64))\n"
    "    return F.embedding(ids, torch.as_tensor(E)).numpy()\n\n"
    "def embedding_forward(E, ids):\n    return _rows(E, ids)\n",
}


@pytest.mark.parametrize("how", list(TORCH_FORWARD))
def test_a_function_that_uses_torch_fails_its_visible_test_at_once_naming_the_rule(how):
    """Each answer computes the right rows where torch imports, as in JupyterLab; its visible
    test fails at once (one message, not one per expectation) with the rule the graders apply;
    the other functions' tests still pass."""
    from tests.test_grade import TORCH_RULE

    results = _run(_released_with(A1, {"embedding_forward": TORCH_FORWARD[how]}), None)
    failing = {g: m for g, m in results.items() if m}
    assert set(failing) == {"test_forward_values"}, failing
    message = failing["test_forward_values"]
    assert message.startswith("AssertionError: embedding_forward uses torch. It may run here")
    assert TORCH_RULE in message and message.count(TORCH_RULE) == 1, message


def test_under_nbgrader_the_visible_tests_leave_torch_to_the_kernel(monkeypatch):
    """Under nbgrader the kernel refuses the import itself (harness.block_frameworks): the
    static look is off, so a graded run judges only what the call does, as make grade does."""
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    results = _run(_released_with(A1, {"embedding_forward": TORCH_FORWARD["a global"]}), None)
    assert not any(results.values()), results


def test_a_numpy_answer_that_mentions_torch_in_words_is_not_flagged():
    """Only code counts: a docstring, a comment, a string or a local variable named like it."""
    numpy_only = (
        "import numpy as np\n\n"
        "def embedding_forward(E, ids):\n"
        '    """As torch.nn.functional.embedding(ids, E) computes it."""\n'
        "    torch = 'torch'  # not the module\n"
        "    return np.asarray(E)[np.asarray(ids)]\n"
    )
    results = _run(_released_with(A1, {"embedding_forward": numpy_only}), None)
    assert not any(results.values()), results
