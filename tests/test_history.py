"""The release history: make release records each new stamp, and the grader names the release a
stale submission was made from and what changed since (no kernel needed)."""

import dataclasses
import json

from autograder import nb
from autograder.course import source_notebook
from autograder.grade import worker
from autograder.grade.assignment import assignment_info
from autograder.grade.results import Job, SubmissionResult
from autograder.release import history

A = "03_fancy_indexing_trap"


def test_record_adds_a_new_stamp_once_and_summarises_the_test_cells(tmp_path):
    path = tmp_path / "history.json"
    old = {"stamp": "2026.11+000000000000", "date": "2026-11-01", "tests": ["test_gone"]}
    path.write_text(json.dumps({A: [{**old, "summary": "first recorded release"}]}))
    assert history.record([A], path, date="2026-12-01") == [
        f"{A}: {nb.stamp_label(nb.release_stamp(A))}"
    ]
    entries = history.load(path)[A]
    assert entries[-1]["date"] == "2026-12-01" and "test_gone" in entries[-1]["summary"]
    assert "test cells removed: test_gone" in entries[-1]["summary"]
    before = path.read_bytes()
    assert history.record([A], path) == [] and path.read_bytes() == before


def test_the_committed_history_knows_every_current_release():
    recorded = history.load()
    for a in recorded:
        assert nb.stamp_label(nb.release_stamp(a)) in [e["stamp"] for e in recorded[a]], a


def _stale_result(stamp):
    info = assignment_info(A)
    result = SubmissionResult.start(Job(0, "s", A, None, None), False)
    worker._stamp(result, {"metadata": {"course": stamp}}, info)
    return result


def test_a_submission_from_a_recorded_older_release_is_named(tmp_path, monkeypatch):
    path = tmp_path / "history.json"
    old = {
        "stamp": "2026.11+9a51e742b725",
        "date": "2026-11-20",
        "functions": ["sparse_sgd_update_"],
        "tests": ["test_update_repeated"],
    }
    path.write_text(json.dumps({A: [{**old, "summary": "first recorded release"}]}))
    monkeypatch.setattr(history, "HISTORY", path)
    result = _stale_result({"release": "2026.11", "source_sha256": "9a51e742b725"})
    assert result.stale
    (note,) = result.notes
    assert "made from release 2026.11+9a51e742b725" in note and "2026-11-20" in note
    assert "functions added: sparse_adam_step_; functions removed: sparse_sgd_update_" in note
    assert "test cells added: test_adam_in_place" in note
    assert "test cells removed: test_update_repeated" in note


def test_an_unrecorded_release_is_said_to_be_unknown_and_a_current_one_gets_no_note():
    result = _stale_result({"release": "1999.01", "source_sha256": "ffffffffffff"})
    assert result.stale and "never recorded (1999.01+ffffffffffff)" in result.notes[0]
    current = _stale_result(nb.release_stamp(A))
    assert not current.stale and current.notes == []


def test_the_committed_history_records_what_every_release_gave():
    """Every recorded release (the stamps students already hold included) has its given parts,
    and the current one's are those of the current source."""
    for a, entries in history.load().items():
        assert all(isinstance(e.get("given"), dict) and e["given"] for e in entries), a
        current = history.find(a, nb.stamp_label(nb.release_stamp(a)))
        assert current["given"] == nb.given_parts(nb.read(source_notebook(a))), a


def _cell(notebook, gid):
    return next(c for c in notebook["cells"] if nb.grade_id(c) == gid)


def _edit(notebook, gid, old, new):
    cell = _cell(notebook, gid)
    text = nb.source(cell)
    assert old in text, (gid, old)
    cell["source"] = text.replace(old, new, 1)


def _cosmetic(notebook):
    """A test's docstring and label, a comment, a hidden test and the prose: nothing given."""
    _edit(notebook, "test_adam_first_step", '"""', '"""Reworded: ')
    _edit(notebook, "test_adam_first_step", 'label="', 'label="renamed ')
    _edit(notebook, "test_adam_repeated", "### BEGIN HIDDEN TESTS", "### BEGIN HIDDEN TESTS\nx = 1")
    _edit(notebook, "sparse_adam_step_", "def ", "# a new comment\ndef ")
    md = next(c for c in notebook["cells"] if c["cell_type"] == "markdown")
    md["source"] = nb.source(md) + "\n\nOne more sentence."


def _resubmitted_under(edited: dict, tmp_path, monkeypatch):
    """Grade a notebook carrying today's stamp as if the source had been edited into ``edited``
    and released (`make release` recorded it after today's release)."""
    path = tmp_path / "history.json"
    path.write_text(json.dumps({A: [history.find(A, nb.stamp_label(nb.release_stamp(A)))]}))
    monkeypatch.setattr(history, "HISTORY", path)
    info = dataclasses.replace(
        assignment_info(A),
        stamp={"release": "2026.11", "source_sha256": "0123456789ab"},
        given=nb.given_parts(edited),
    )
    result = SubmissionResult.start(Job(0, "s", A, None, None), False)
    worker._stamp(result, {"metadata": {"course": nb.release_stamp(A)}}, info)
    return result


def test_a_cosmetic_edit_leaves_submissions_current(tmp_path, monkeypatch):
    edited = nb.read(source_notebook(A))
    _cosmetic(edited)
    result = _resubmitted_under(edited, tmp_path, monkeypatch)
    assert not result.stale and result.notes == []
    assert result.release == nb.stamp_label(nb.release_stamp(A))


def test_an_edit_of_what_students_were_given_is_named(tmp_path, monkeypatch):
    edited = nb.read(source_notebook(A))
    _cosmetic(edited)
    _edit(edited, "sparse_adam_step_", '"""', '"""Now returns nothing. ')  # the contract
    _edit(edited, "test_adam_lazy", "expect(", "ids = ids\nexpect(")  # the visible tests
    given = next(c for c in edited["cells"] if c["cell_type"] == "code" and not nb.meta(c)
                 and not nb.is_inline(c))  # fmt: skip
    given["source"] = nb.source(given) + "\nprint('more')"
    result = _resubmitted_under(edited, tmp_path, monkeypatch)
    assert result.stale
    (note,) = result.notes
    assert "the signature or docstring of sparse_adam_step_" in note
    assert "the visible tests of test_adam_lazy" in note and "test_adam_first_step" not in note
    assert f"the given cells {given['id']}" in note
    assert "download the current notebook" in note
