"""The release pipeline: solutions/ -> exercises/, byte-stable, nothing secret, validated."""

import ast
import json
import re
import shutil
import subprocess
import sys

import pytest

from autograder import nb as notebooks
from autograder import release, samples
from autograder.course import EXERCISES, SOLUTIONS, assignments, release_notebook, source_notebook

from .leaks import HELPER_FORBIDDEN_CALLS, find_leaks, forbidden_helper_calls


def test_there_are_assignments():
    assert "01_one_hot_lookup" in assignments()


@pytest.mark.parametrize("assignment", assignments())
def test_source_notebook_is_nbformat_45_with_fixed_ids_and_no_outputs(assignment):
    nb = notebooks.read(source_notebook(assignment))
    assert (nb["nbformat"], nb["nbformat_minor"]) == (4, 5)
    ids = [c.get("id") for c in nb["cells"]]
    assert all(ids) and len(set(ids)) == len(ids), "every cell needs a unique, fixed id"
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None, cell["id"]
    # the file is in the canonical form notebooks.write produces (normalize before committing)
    assert source_notebook(assignment).read_text(encoding="utf-8") == notebooks.dumps(nb)


@pytest.mark.parametrize("assignment", assignments())
def test_answer_cells_are_named_after_their_function(assignment):
    nb = notebooks.read(source_notebook(assignment))
    from autograder.nb import solution_cells

    for cell in solution_cells(nb):
        gid = cell["metadata"]["nbgrader"]["grade_id"]
        assert re.search(rf"^def {re.escape(gid)}\(", notebooks.source(cell), re.M), (
            f"answer cell {gid!r} must define a function of the same name"
        )


@pytest.mark.parametrize("assignment", assignments())
def test_every_test_cell_has_a_docstring_visible_asserts_and_a_hidden_check(assignment):
    nb = notebooks.read(source_notebook(assignment))
    for gid, cell in notebooks.test_cells(nb).items():
        src = notebooks.source(cell)
        assert src.startswith('"""'), f"{gid}: open with a one-line docstring of what it checks"
        visible, _, hidden = src.partition("### BEGIN HIDDEN TESTS")
        assert "assert" in visible or "expect(" in visible, (
            f"{gid}: students need a visible signal before submitting"
        )
        assert "from autograder.checks import" in hidden, f"{gid}: hidden tests call autograder"
        assert notebooks.points(nb)[gid] > 0


def _expect_calls(node) -> int:
    return sum(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "expect"
        for n in ast.walk(node)
    )


@pytest.mark.parametrize("assignment", assignments())
def test_a_test_cell_with_several_expectations_collects_them_in_one_block(assignment):
    """Several expect calls (or one in a loop) at the top level would stop at the first failure:
    they go in `with expect.all():`, which reports every failing one (CONTRIBUTING)."""
    nb = notebooks.read(source_notebook(assignment))
    for gid, cell in notebooks.test_cells(nb).items():
        visible = notebooks.source(cell).partition("### BEGIN HIDDEN TESTS")[0]
        body = ast.parse(visible).body
        loose = [s for s in body if not isinstance(s, ast.With) and _expect_calls(s)]
        looped = any(isinstance(s, (ast.For, ast.While)) for s in loose)
        assert len(loose) <= 1 and not looped, (
            f"{gid}: put its expect calls in `with expect.all():`"
        )


@pytest.mark.parametrize("assignment", assignments())
def test_every_test_cell_has_a_registered_check(assignment):
    from autograder import checks

    nb = notebooks.read(source_notebook(assignment))
    registered = checks.for_assignment(assignment)
    assert set(notebooks.test_cells(nb)) == set(registered)
    for gid, cell in notebooks.test_cells(nb).items():
        check = registered[gid]
        hidden = notebooks.source(cell).partition("### BEGIN HIDDEN TESTS")[2]
        assert f"({check.function})" in hidden, f"{gid} must call its check on {check.function}"


def _tree(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """`make release`'s command (python -m autograder.release --out DIR): exercises/ into DIR."""
    out = tmp_path_factory.mktemp("release")
    proc = subprocess.run(
        [sys.executable, "-m", "autograder.release", "--out", str(out)],
        cwd=SOLUTIONS.parent,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return out


def test_release_is_exactly_what_generation_makes(generated):
    """exercises/ must be regenerated with `make release` whenever solutions/ change."""
    made, have = _tree(generated), _tree(EXERCISES)
    assert sorted(made) == sorted(have), (
        "exercises/ has other files than generation makes: run `make release`"
    )
    for rel, data in made.items():
        assert data == have[rel], f"exercises/{rel} drifted from solutions/: run `make release`"
        # the canonical form of autograder.nb.io, whoever wrote it
        assert data.decode("utf-8") == notebooks.dumps(json.loads(data)), rel


def test_plain_nbgrader_generate_assignment_writes_make_releases_exercises(generated, tmp_path):
    """nbgrader's own release step, with this course's nbgrader_config.py and a scratch gradebook,
    writes exercises/ byte-identical to `make release`'s output (one code path: the course's
    preprocessor and exporter are in nbgrader_config.py). Two fresh generations agreeing byte
    for byte with the committed exercises/ also show that generation is byte-stable."""
    # In a temporary course (the house's temporary_course_config), so that the tracked
    # exercises/ never changes under the tests that read it (make test runs files in parallel);
    # it starts with no exercises/, so nbgrader writes every file itself.
    course = tmp_path / "course"
    shutil.copytree(SOLUTIONS, course / "solutions")
    (course / "nbgrader_config.py").write_text(
        notebooks.temporary_course_config(course), encoding="utf-8"
    )
    before = _tree(EXERCISES)
    db = f"--db=sqlite:///{tmp_path / 'gradebook.db'}"
    proc = subprocess.run(
        [sys.executable, "-m", "nbgrader", "generate_assignment", "*", "--force", db],
        cwd=course,
        capture_output=True,
        text=True,
        timeout=600,
    )
    after = _tree(course / "exercises")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert sorted(after) == sorted(_tree(generated)) == sorted(before)
    made = _tree(generated)
    changed = [str(rel) for rel, data in after.items() if data != made[rel]]
    assert not changed, f"plain nbgrader wrote other bytes than make release: {changed}"
    rewritten = [str(rel) for rel, data in after.items() if data != before[rel]]
    assert not rewritten, f"plain nbgrader rewrote the committed exercises/: {rewritten}"
    for rel, data in after.items():  # what release_assignment ships runs without the course
        text = data.decode("utf-8")
        assert not re.search(r"^\s*(from|import) (autograder|coursekit)\b", _code(text), re.M), rel


def _code(text: str) -> str:
    """The code cells of a notebook's JSON text, joined."""
    cells = json.loads(text)["cells"]
    return "\n".join(notebooks.source(c) for c in cells if c["cell_type"] == "code")


@pytest.mark.parametrize("assignment", assignments())
def test_released_notebook_holds_no_solution_or_hidden_test(assignment):
    path = release_notebook(assignment)
    assert not find_leaks([path])
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert nb["metadata"]["course"] == notebooks.release_stamp(assignment)


@pytest.mark.parametrize("assignment", sorted(HELPER_FORBIDDEN_CALLS))
def test_released_test_helpers_make_no_call_that_computes_a_part_of_the_solution(assignment):
    """Exercise 7's helpers fit no SVD of M_train (Part C's heldout_error is one): the curves of
    the mistakes that need one come as numbers (meta["wrong_curves"]). The scan finds one."""
    cells = json.loads(release_notebook(assignment).read_text(encoding="utf-8"))["cells"]
    helper = [
        notebooks.source(c)
        for c in cells
        if notebooks.is_inline(c) and c["metadata"]["course"]["inline"] == "tests"
    ]
    assert len(helper) == 1
    names = HELPER_FORBIDDEN_CALLS[assignment]
    assert not forbidden_helper_calls(helper[0], names)
    planted = "import numpy as np\nfrom numpy.linalg import svd as f\nnp.linalg.svd(M)\nf(M)\n"
    assert len(forbidden_helper_calls(planted, names)) == 2


@pytest.mark.parametrize("assignment", assignments())
def test_nbgrader_validate_passes_quietly_on_source_and_answers_and_fails_on_released_stub(
    assignment, tmp_path
):
    """The source notebook and the released one with the reference answers pass, with no
    warning from nbgrader (a test cell that ends in a value, e.g. an array, is read as partial
    credit and warned about); the untouched release fails every test (--invert)."""

    def validate(*args):
        return subprocess.run(
            [sys.executable, "-m", "nbgrader", "validate", *map(str, args)],
            cwd=SOLUTIONS.parent,
            capture_output=True,
            text=True,
            timeout=300,
        )

    answered = tmp_path / f"{assignment}.ipynb"
    notebooks.write(samples.build(assignment, {}), answered)
    ok = validate(source_notebook(assignment), answered)
    log = ok.stdout + ok.stderr
    assert ok.returncode == 0 and ok.stdout.count("Success!") == 2, log
    assert "WARNING" not in log and "Cell output is" not in log, log  # nbgrader's and the kernel's
    stub = validate(release_notebook(assignment), "--invert")
    assert stub.returncode == 0 and "Success!" in stub.stdout, stub.stdout + stub.stderr


def test_student_repo_holds_the_book_and_exercises_and_nothing_secret(tmp_path):
    dest = release.student_repo(tmp_path / "student")
    assert (dest / "exercises").is_dir() and (dest / "book" / "intro.md").exists()
    assert (dest / "Makefile").exists() and (dest / ".github" / "workflows" / "pages.yml").exists()
    for forbidden in ("solutions", "autograder", "tests", "nbgrader_config.py", "grading"):
        assert not (dest / forbidden).exists(), forbidden
    assert not find_leaks(dest.rglob("*"))


def test_teaching_points_table_is_what_the_released_notebooks_give():
    """TEACHING.md's points table (what an instructor enters in Gradescope and the LMS) is the sum
    of each released notebook's test-cell points; `make release` rewrites it."""
    from autograder.release import points

    page = points.PAGE.read_text(encoding="utf-8")
    assert points.rewrite(page, points.table()) == page, "TEACHING.md's table drifted: make release"
    for a in assignments():
        total = sum(notebooks.points(notebooks.read(release_notebook(a))).values())
        assert total > 0
        assert re.search(rf"^\| `{a}` \| [^|]+ \| {total:g} \| \d+ \|$", page, re.M), a
    with pytest.raises(ValueError, match="marker"):
        points.rewrite("no markers here", points.table())


PART = re.compile(r"^## Part ([A-Z])\b.*\((\d+(?:\.\d+)?) points?\)", re.M)


@pytest.mark.parametrize("assignment", assignments())
def test_each_part_heading_states_the_points_of_its_test_cells(assignment):
    """A student reads a part's points in its heading (`## Part C: ... (7 points)`): it is the sum
    of the points of the test cells between it and the next level-2 heading, and every test
    cell sits under a part's heading."""
    nb = notebooks.read(release_notebook(assignment))
    stated: dict[str, float] = {}
    given: dict[str, float] = {}
    part = None
    for cell in nb["cells"]:
        text = notebooks.source(cell)
        if cell["cell_type"] == "markdown" and re.search(r"^## ", text, re.M):
            m = PART.search(text)
            part = m.group(1) if m else None
            if m:
                stated[part] = float(m.group(2))
                given.setdefault(part, 0.0)
        if notebooks.is_test(cell):
            assert part is not None, f"{notebooks.grade_id(cell)} is under no part's heading"
            given[part] += notebooks.points({"cells": [cell]})[notebooks.grade_id(cell)]
    assert stated, "no '## Part X: ... (N points)' heading"
    assert given == stated, f"points by part, from the cells {given} and the headings {stated}"


@pytest.mark.parametrize("assignment", assignments())
def test_the_points_table_states_the_points_of_each_function(assignment):
    """The notebook's first cell tells a student each graded function's points (`| A | `route` |
    3 |`, or one row for several functions): for each row, the sum of the points of the test
    cells that grade its functions (a test cell grades the function its hidden checks call)."""
    from autograder.checks import module_for
    from autograder.checks.framework import registry

    nb = notebooks.read(release_notebook(assignment))
    rows = re.findall(
        r"^\| *[A-Z] *\| *(`.+?) *\| *([\d.]+) *\|$", notebooks.source(nb["cells"][0]), re.M
    )
    assert rows, "no '| Part | Function | Points |' table in the first cell"
    checks = registry(module_for(assignment))
    given: dict[str, float] = {}
    for grade_id, points in notebooks.points(nb).items():
        function = checks[grade_id].function
        given[function] = given.get(function, 0.0) + points
    stated = {}
    for names, points in rows:
        functions = tuple(re.findall(r"`(\w+)`", names))
        stated[functions] = float(points)
    from_cells = {fs: sum(given.get(f, 0.0) for f in fs) for fs in stated}
    assert from_cells == stated, (
        f"points by table row, from the cells {from_cells}; the table {stated}"
    )
    listed = {f for fs in stated for f in fs}
    assert listed == set(given), (
        f"graded functions {sorted(given)}; the table lists {sorted(listed)}"
    )


@pytest.mark.parametrize("assignment", assignments())
def test_no_released_helper_answers_a_graded_function(assignment):
    """The test-helper cell (the judges and the chapter's mistake models, pasted into the released
    notebook) holds no working answer: no function of the chapter's public module, called on a
    graded function's arguments (or on a Case of them) with its defaults, passes every visible
    case of that function."""
    from .leaks import helpers_that_answer

    assert not helpers_that_answer(assignment)


# A pasted module whose helpers answer embedding_backward only when called with a keyword
# argument or through an alias: the default-argument calls of the old scan pass none of them.
_PLANTED_HELPERS = '''
import functools

import numpy as np


def _backward_as(ids, g, V, kind="last", accumulate=False):
    """dE for ids and grads: overwritten (the last or the first write of a repeated id survives),
    or summed with accumulate=True or kind="add"."""
    ids = np.asarray(ids).reshape(-1)
    g = np.asarray(g, np.float64).reshape(ids.size, -1)
    out = np.zeros((V, g.shape[1]))
    if accumulate or kind == "add":
        np.add.at(out, ids, g)
    elif kind == "last":
        out[ids] = g
    else:
        out[ids[::-1]] = g[::-1]
    return out


def _doubled(case, want):
    """A model that is no answer itself but shows the keyword kind="add"."""
    return 2 * _backward_as(*case.args, kind="add")


_summed = functools.partial(_backward_as, accumulate=True)
_alias = _backward_as
'''


def test_helper_scan_tries_keyword_arguments_and_aliases(monkeypatch):
    """The scan of released helpers calls each with a keyword value the module shows (or the
    other bool) and tries functools.partial aliases: a planted module whose _backward_as answers
    embedding_backward only so is reported, its wrong model _doubled is not."""
    import importlib
    import types

    from .leaks import _shown_cases, helpers_that_answer

    name = "autograder.checks.public.ch02"
    importlib.import_module(name)  # the real one and the checks first: their judges come from it
    assert _shown_cases("02_sparse_backward")["embedding_backward"]
    planted = types.ModuleType(name)
    planted.__source__ = _PLANTED_HELPERS
    exec(compile(_PLANTED_HELPERS, "<planted>", "exec"), planted.__dict__)
    monkeypatch.setitem(sys.modules, name, planted)
    found = helpers_that_answer("02_sparse_backward")
    assert "_backward_as as embedding_backward, called f(*args, kind='add')" in found, found
    assert "_backward_as as embedding_backward, called f(*args, accumulate=True)" in found, found
    assert "_summed as embedding_backward, called f(*args)" in found, found
    assert not [f for f in found if f.startswith(("_doubled", "_alias"))], found


def test_forbidden_call_scan_follows_aliases_and_keyword_calls():
    """Calls of svd through an assigned alias (and an alias of it), a partial, getattr, a module
    imported under another name, with keyword arguments: each is found, and no other call."""
    planted = (
        "import functools\n"
        "import numpy.linalg as la\n"
        "g = la.svd\n"
        "h = g\n"
        "h(M, full_matrices=False)\n"
        "la.svd(a=M)\n"
        "p = functools.partial(la.svd, full_matrices=False)\n"
        "p(M)\n"
        'getattr(la, "svd")(M)\n'
        "la.qr(M)\n"
    )
    found = forbidden_helper_calls(planted, {"svd"})
    assert [f.split(":")[0] for f in found] == ["line 5", "line 6", "line 8", "line 9"], found
