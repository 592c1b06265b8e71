"""The release pipeline: solutions/ -> exercises/, byte-stable, nothing secret, validated."""

import json
import re
import subprocess
import sys

import pytest

from autograder import notebooks, release
from autograder.paths import EXERCISES, SOLUTIONS, assignments, release_notebook, source_notebook

SECRET_MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")


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
    from autograder.reference import solution_cells

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
        assert "assert" in visible, f"{gid}: students need a visible signal before submitting"
        assert "from autograder.checks import" in hidden, f"{gid}: hidden tests call autograder"
        assert notebooks.points(nb)[gid] > 0


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


def test_release_is_exactly_what_generation_makes(tmp_path):
    """exercises/ must be regenerated with `make release` whenever solutions/ change."""
    release.generate(tmp_path)
    made = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*.ipynb"))
    have = sorted(p.relative_to(EXERCISES) for p in EXERCISES.rglob("*.ipynb"))
    assert made == have, "exercises/ has other notebooks than generation makes: run `make release`"
    for rel in made:
        assert (tmp_path / rel).read_bytes() == (EXERCISES / rel).read_bytes(), (
            f"exercises/{rel} drifted from solutions/: run `make release`"
        )


def test_generation_is_byte_stable(tmp_path):
    a = assignments()[0]
    release.generate(tmp_path / "one", [a])
    release.generate(tmp_path / "two", [a])
    assert (tmp_path / "one" / a / f"{a}.ipynb").read_bytes() == (
        tmp_path / "two" / a / f"{a}.ipynb"
    ).read_bytes()


def _solution_lines(assignment):
    """Every substantive line inside a solution or hidden-test region of the source notebook."""
    nb = notebooks.read(source_notebook(assignment))
    lines = set()
    for cell in nb["cells"]:
        inside = False
        for line in notebooks.source(cell).splitlines():
            s = line.strip()
            if s.startswith("### BEGIN"):
                inside = True
                continue
            if s.startswith("### END"):
                inside = False
                continue
            if inside and len(s) >= 12 and not s.startswith("#") and not s.startswith('"""'):
                lines.add(s)
    return lines


def secret_lines():
    out = {}
    for a in assignments():
        for line in _solution_lines(a):
            out[line] = a
    return out


# Lines that are also legitimately public (visible tests, docstrings, chapter prose).
PUBLIC_TOO = {"import numpy as np"}


@pytest.mark.parametrize("assignment", assignments())
def test_released_notebook_holds_no_solution_or_hidden_test(assignment):
    text = release_notebook(assignment).read_text(encoding="utf-8")
    for marker in SECRET_MARKERS:
        assert marker not in text
    for line in _solution_lines(assignment) - PUBLIC_TOO:
        assert line not in text, f"a line of the solution leaked into exercises/: {line!r}"
    nb = json.loads(text)
    assert nb["metadata"]["course"] == release.release_stamp(assignment)


@pytest.mark.parametrize("assignment", assignments())
def test_nbgrader_validate_passes_on_source_and_fails_on_released_stub(assignment):
    def validate(path, *extra):
        return subprocess.run(
            [sys.executable, "-m", "nbgrader", "validate", str(path), *extra],
            cwd=SOLUTIONS.parent,
            capture_output=True,
            text=True,
            timeout=300,
        )

    ok = validate(source_notebook(assignment))
    assert ok.returncode == 0 and "Success!" in ok.stdout, ok.stdout + ok.stderr
    stub = validate(release_notebook(assignment), "--invert")
    assert stub.returncode == 0 and "Success!" in stub.stdout, stub.stdout + stub.stderr
