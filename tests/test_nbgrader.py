"""Plain nbgrader keeps working, and `make grade` agrees with it on honest submissions.

Everything runs in a temporary course: its nbgrader_config.py loads the real one and points the
course root and the gradebook at a temp folder, so the real grading/ and exercises/ are never
touched. Plain ``nbgrader generate_assignment`` + ``nbgrader autograde`` give chapter 1's demo
correct submission full marks and its stub zero, and every chapter's demo mistake less, failing
exactly the cells it should, each with a message; ``make grade``'s command gives the same score
for every test cell (and names the mistake in its feedback), on all three demo students of every
chapter. Then ``nbgrader generate_feedback`` (leak-free with the course's config) and
``nbgrader generate_solution`` (what ``make solutions`` runs) are exercised on chapter 1.
"""

from __future__ import annotations

import csv
import hashlib
import html
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import nb as notebooks
from autograder import samples
from autograder.course import ROOT, SOLUTIONS, assignments, source_notebook

pytestmark = pytest.mark.slow
A1 = "01_one_hot_lookup"
STAMPED = "2026-12-01 10:00:00.000000 UTC"  # demo_correct's timestamp.txt in chapter 1
# Chapter 1's answers that use torch (tests/test_grade.py: torch_answers), graded by plain
# nbgrader only: make grade's and Gradescope's scores for them are checked in their own files.
TORCH = ("torch_at_top", "torch_inside")


def nbgrader(course: Path, *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=course,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, (
        f"nbgrader {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    )
    return proc


def hidden_lines() -> set[str]:
    from tests.test_grade import hidden_test_lines

    return hidden_test_lines()


def _plain_students(assignment: str) -> list[str]:
    """Plain nbgrader is slow (that is the point of `make grade`): it grades chapter 1's three demo
    students and every other chapter's demo mistake, the case where the scores can differ."""
    return ["demo_correct", "demo_mistake", "demo_stub"] if assignment == A1 else ["demo_mistake"]


def _wanted(request) -> list[str]:
    """The assignments this module's selected tests grade: every one in a full run, only chapter
    9's under `pytest -m ch09` (the tests without an assignment parameter use A1)."""
    wanted = set()
    for item in request.session.items:
        if item.module is request.module:
            params = getattr(getattr(item, "callspec", None), "params", {})
            wanted.add(params.get("assignment", A1))
    return [a for a in assignments() if a in wanted] or assignments()


@pytest.fixture(scope="module")
def course(tmp_path_factory, request):
    """A temp course with the selected tests' assignments (all of them in a full run): their
    sources and demo students, graded both ways."""
    course = tmp_path_factory.mktemp("course")
    config = notebooks.temporary_course_config(course)
    (course / "nbgrader_config.py").write_text(config, encoding="utf-8")
    names = _wanted(request)
    everyone = course / "all_submitted"
    for a in names:
        shutil.copytree(SOLUTIONS / a, course / "solutions" / a)
        for student, nb in samples.demo_students(a).items():
            notebooks.write(nb, everyone / student / a / f"{a}.ipynb")
            if student in _plain_students(a):
                notebooks.write(nb, course / "grading" / "submitted" / student / a / f"{a}.ipynb")
    if A1 in names:
        (everyone / "demo_correct" / A1 / "timestamp.txt").write_text(STAMPED)
        from tests.test_grade import torch_answers

        for student, nb in torch_answers(A1)[1].items():
            if student in TORCH:
                notebooks.write(nb, course / "grading" / "submitted" / student / A1 / f"{A1}.ipynb")
    ours = course / "ours"
    # make grade's command runs while plain nbgrader works (both use the 2 cores)
    grade = subprocess.Popen(
        [sys.executable, "-m", "autograder.grade", "--jobs", "2", "--grading-dir", str(ours), "--submitted", str(everyone)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    nbgrader(course, "generate_assignment", "*", "--force", "--log-level=WARN")
    plain = nbgrader(course, "autograde", "*", "--force", "--log-level=WARN")
    out, err = grade.communicate(timeout=900)
    assert grade.returncode == 0, out[-3000:] + err[-3000:]
    return {
        "dir": course,
        "ours": ours,
        "names": names,
        "autograde_log": plain.stdout + plain.stderr,
    }


def plain_scores(course: Path, assignment: str) -> dict[str, dict[str, float]]:
    """student -> test cell -> score, from the temp course's gradebook (plain nbgrader)."""
    from nbgrader.api import Gradebook

    out = {}
    with Gradebook(
        "sqlite:///" + str(course / "grading" / "gradebook.db"), course_id="embedding-tables"
    ) as gb:
        for sub in gb.assignment_submissions(assignment):
            out[sub.student.id] = {g.name: g.score for nb in sub.notebooks for g in nb.grades}
    return out


def our_rows(ours: Path, assignment: str) -> dict[str, dict[str, dict]]:
    """student -> test cell -> its row of make grade's test_report.csv."""
    out: dict = {}
    with (ours / "test_report.csv").open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row["assignment"] == assignment:
                out.setdefault(row["student"], {})[row["test"]] = row
    return out


def our_scores(ours: Path, assignment: str) -> dict[str, dict[str, float]]:
    rows = our_rows(ours, assignment)
    return {s: {g: float(r["score"]) for g, r in tests.items()} for s, tests in rows.items()}


def _full(assignment: str) -> float:
    return sum(notebooks.points(notebooks.read(source_notebook(assignment))).values())


def _mistake(assignment: str):
    mod = samples.module(assignment)
    return mod.MISTAKES[mod.DEMO_MISTAKE]


@pytest.mark.parametrize("assignment", assignments())
def test_plain_nbgrader_grades_the_demo_students(course, assignment):
    if assignment not in course["names"]:
        pytest.skip(f"{assignment} appeared after the course fixture was built")
    scores = plain_scores(course["dir"], assignment)
    assert set(scores) == set(_plain_students(assignment)) | set(TORCH if assignment == A1 else ())
    total = {s: sum(v.values()) for s, v in scores.items()}
    if assignment == A1:
        assert total["demo_correct"] == _full(assignment), scores["demo_correct"]
        assert total["demo_stub"] == 0, scores["demo_stub"]
    assert 0 < total["demo_mistake"] < _full(assignment), scores["demo_mistake"]
    failing = {g for g, v in scores["demo_mistake"].items() if v == 0}
    assert failing == _mistake(assignment).fails
    # Each failing cell says why (the visible assert's message, or the hidden check's).
    graded = notebooks.read(
        course["dir"]
        / "grading"
        / "autograded"
        / "demo_mistake"
        / assignment
        / f"{assignment}.ipynb"
    )
    for gid in failing:
        errors = [
            o for o in notebooks.test_cells(graded)[gid]["outputs"] if o["output_type"] == "error"
        ]
        assert errors and errors[0]["evalue"].strip(), f"{gid}: no message"


@pytest.mark.parametrize("assignment", assignments())
def test_make_grade_gives_the_same_scores_as_plain_nbgrader(course, assignment):
    if assignment not in course["names"]:
        pytest.skip(f"{assignment} appeared after the course fixture was built")
    plain = plain_scores(course["dir"], assignment)
    ours = our_scores(course["ours"], assignment)
    # the torch answers are graded by plain nbgrader only here (make grade grades them in
    # tests/test_grade.py; both are held to the same torch_scores)
    for student in set(plain) - set(TORCH):
        assert ours[student] == plain[student], student
    full = _full(assignment)
    assert sum(ours["demo_correct"].values()) == full
    assert sum(ours["demo_stub"].values()) == 0
    assert {g for g, v in ours["demo_mistake"].items() if v == 0} == _mistake(assignment).fails
    secret = hidden_lines()
    for page in (course["ours"] / "feedback").glob(f"*/{assignment}/*.html"):
        text = page.read_text(encoding="utf-8")
        assert not any(line in text for line in secret), f"{page} shows hidden-test source"
    # the mistake column: the demo mistake's id on a cell it fails (through the sandboxed
    # kernel's exchange and the trusted judge), nothing for the correct answer
    rows = our_rows(course["ours"], assignment)
    ids = {
        i for g in _mistake(assignment).fails for i in rows["demo_mistake"][g]["mistake"].split(";")
    }
    assert _mistake(assignment).id in ids, ids
    assert {r["mistake"] for r in rows["demo_correct"].values()} == {""}
    assert {r["mistake"] for r in rows["demo_stub"].values()} == {"not-implemented"}
    says = _mistake(assignment).says
    page = course["ours"] / "feedback" / "demo_mistake" / assignment / f"{assignment}.html"
    assert html.escape(says, quote=True) in page.read_text(encoding="utf-8"), (
        f"the message should name the mistake ({says!r})"
    )


def test_plain_generate_feedback_hides_the_hidden_tests(course):
    nbgrader(course["dir"], "generate_feedback", A1, "--force", "--log-level=WARN")
    pages = list((course["dir"] / "grading" / "feedback" / "demo_mistake").rglob("*.html"))
    assert pages
    secret = hidden_lines()
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert "HIDDEN TESTS" not in text
        for line in secret:
            assert line not in text, f"{page}: hidden-test line {line!r}"
    mistake_page = course["dir"] / "grading" / "feedback" / "demo_mistake" / A1 / f"{A1}.html"
    says = html.escape(_mistake(A1).says, quote=True)  # the failing visible test names the mistake
    text = mistake_page.read_text(encoding="utf-8")
    assert says in text and "plain nbgrader autograde has none" in text  # the course's page


def test_plain_nbgrader_refuses_torch_scores_it_as_make_grade_does_and_says_the_rule(course):
    """nbgrader_config.py gives nbgrader's kernels the blocker make grade's have: an answer that
    imports torch (at the top of its cell, inside the function) loses what make grade and
    Gradescope take (tests/test_grade.py: torch_scores), and nbgrader's feedback names the rule
    (the cell that imported it, and under the NameError it caused)."""
    from tests.test_grade import TORCH_RULE, torch_answers, torch_scores

    fn = torch_answers(A1)[0]
    scores = plain_scores(course["dir"], A1)
    for student in TORCH:
        assert scores[student] == torch_scores(A1, fn), student
    nbgrader(
        course["dir"], "generate_feedback", A1, "--student=torch_*", "--force", "--log-level=WARN"
    )
    feedback = course["dir"] / "grading" / "feedback"
    top = html.unescape((feedback / "torch_at_top" / A1 / f"{A1}.html").read_text("utf-8"))
    note = f"your cell 5 ({fn}) imports torch: {TORCH_RULE}"
    assert note in top  # at the top, and after the NameError of each of fn's tests
    assert f"name '{fn}' is not defined\n({note}. That cell stopped at the import" in top
    inside = html.unescape((feedback / "torch_inside" / A1 / f"{A1}.html").read_text("utf-8"))
    assert f"{fn} raised ModuleNotFoundError for " in inside and TORCH_RULE in inside


def _digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_generate_solution_writes_only_to_released_solutions(course):
    """`make solutions` runs nbgrader generate_solution with the course's config."""
    d = course["dir"]
    before = {k: v for k, v in _digest(d).items() if not k.startswith("grading/gradebook.db")}
    nbgrader(d, "generate_solution", A1, "--force", "--log-level=WARN")
    after = {k: v for k, v in _digest(d).items() if not k.startswith("grading/gradebook.db")}
    new = {k for k in after if k not in before}
    changed = {k for k in before if after.get(k) != before[k]}
    assert not changed, f"generate_solution changed {sorted(changed)}"
    assert new and all(k.startswith("grading/released_solutions/") for k in new), sorted(new)
    released = d / "grading" / "released_solutions" / A1 / f"{A1}.ipynb"
    assert "E[ids]" in released.read_text(encoding="utf-8")


def test_plain_autograde_is_quiet_for_honest_notebooks(course):
    """nbgrader records a test cell's checksum before removing its hidden tests (nbgrader issue
    #1961): without the course's OverwriteReleasedCells every test cell of every honest
    submission warned that it had changed."""
    warnings = [
        line
        for line in course["autograde_log"].splitlines()
        if "[AutogradeApp | WARNING]" in line and "Removing existing assignment" not in line
    ]
    assert not warnings, "\n".join(warnings[:10])


def _ours_args(ours: Path, everyone: Path) -> list[str]:
    """Plain nbgrader pointed at `make grade`'s output."""
    return [
        f"--CourseDirectory.submitted_directory={everyone}",
        f"--CourseDirectory.autograded_directory={ours / 'autograded'}",
        f"--db=sqlite:///{ours / 'gradebook.db'}",
    ]


def test_plain_autograde_after_make_grade_says_why_it_skips(course):
    ours, everyone = course["ours"], course["dir"] / "all_submitted"
    graded = ours / "autograded" / "demo_correct" / A1
    assert (graded / "timestamp.txt").read_text() == STAMPED  # as nbgrader's autograde copies it
    before = _digest(ours / "autograded")
    proc = nbgrader(course["dir"], "autograde", A1, *_ours_args(ours, everyone))
    log = proc.stdout + proc.stderr
    for student in ("demo_correct", "demo_mistake", "demo_stub"):
        assert f"Skipping existing assignment: {ours / 'autograded' / student / A1}" in log
    assert log.count("already autograded (by `make grade`") == 3 and "`--force` regrades" in log
    assert _digest(ours / "autograded") == before


def test_plain_generate_feedback_keeps_make_grades_pages(course):
    """nbgrader's own feedback command, on make grade's graded copies and gradebook, writes the
    very pages make grade wrote (the course's exporter), and nothing secret."""
    ours = course["ours"]
    nbgrader(
        course["dir"], "generate_feedback", A1, "--force", "--log-level=WARN",
        *_ours_args(ours, course["dir"] / "all_submitted"),
        f"--CourseDirectory.feedback_directory={ours / 'nbfeedback'}",
    )  # fmt: skip
    theirs, mine = _digest(ours / "nbfeedback"), _digest(ours / "feedback")
    assert theirs == {k: v for k, v in mine.items() if f"/{A1}/" in k}, sorted(theirs)
    assert sorted(theirs) == sorted(  # the pages, and the submission's timestamp (no sidecar)
        [f"{s}/{A1}/{A1}.html" for s in ("demo_correct", "demo_mistake", "demo_stub")]
        + [f"demo_correct/{A1}/timestamp.txt"]
    )
    mistake = (ours / "nbfeedback" / "demo_mistake" / A1 / f"{A1}.html").read_text("utf-8")
    full = _full(A1)
    got = full - sum(
        notebooks.points(notebooks.read(source_notebook(A1)))[g] for g in _mistake(A1).fails
    )
    assert f"Score: <b>{got:g} / {full:g}</b>" in mistake
