"""The feedback page is rendered from an autoescaped template: a student's text never becomes
markup, and the page says when grading ran without the sandbox. No kernel needed."""

from __future__ import annotations

from autograder.grade.assignment import assignment_info
from autograder.grade.feedback import feedback_html
from autograder.grade.results import Job, SubmissionResult

A = "01_one_hot_lookup"
EVIL = "<script>alert('x')</script>"


def _page(notebook, sandboxed=True, message=EVIL):
    info = assignment_info(A)
    job = Job(0, f"student{EVIL}", A, None)
    result = SubmissionResult.not_graded(job, info.test_rows(), "bad", EVIL, message)
    result.sandboxed = sandboxed
    return feedback_html(job, info, notebook, {}, result)


def _notebook():
    from autograder import samples

    nb = samples.build(
        A, {"embedding_forward": f"# {EVIL}\ndef embedding_forward(E, ids):\n    return E[ids]\n"}
    )
    return nb


def test_student_text_is_escaped_everywhere():
    page = _page(_notebook())
    assert "<script>" not in page
    assert page.count("&lt;script&gt;") >= 3  # the name, the reason, the answer's source


def test_an_unsandboxed_run_says_so_on_the_page():
    assert "WITHOUT the grading sandbox" in _page(None, sandboxed=False)
    assert "WITHOUT the grading sandbox" not in _page(None, sandboxed=True)


def test_every_test_cell_has_a_row_with_its_score():
    page = _page(None)
    for gid, pts in assignment_info(A).tests:
        assert f"<td>{gid}</td>" in page
        assert f"0 / {pts:g}" in page
