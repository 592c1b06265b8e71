"""The release history: make release records each new stamp, and the grader names the release a
stale submission was made from and what changed since (no kernel needed)."""

import json

from autograder import nb
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
