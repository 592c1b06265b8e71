"""The gradebook; only the main process of ``make grade`` calls this module.

* :func:`prepare` puts each assignment's structure (notebooks, test cells, points) into the
  gradebook with nbgrader's own ``generate_assignment``, released into a throwaway folder so the
  tracked ``exercises/`` is never rewritten. It is skipped when the gradebook already holds the
  structure of the current source notebook.
* :func:`record` writes every score with nbgrader's Gradebook API from this one process, so SQLite
  never sees two writers; a failing test's message goes into the comment of the answer cell it
  grades.
  Then the late penalty, as nbgrader's ``AssignLatePenalties`` sets it (:mod:`.late`).
* :func:`export_grades` writes ``grades.csv`` (nbgrader's own CSV exporter) and
  ``submissions.csv`` beside it, which tells "no submission" from a score of 0 (nbgrader's CSV
  writes 0.0 for both).
"""

from __future__ import annotations

import csv
import json
import tempfile
import warnings
from collections import defaultdict
from pathlib import Path

from .. import nb
from ..course import COURSE_ID
from .late import assign_penalty
from .results import BAD, ERROR, SubmissionResult


def db_url(grading_dir: Path) -> str:
    return "sqlite:///" + str(grading_dir / "gradebook.db")


def _needed(grading_dir: Path, assignments: list[str], known: dict) -> list[str]:
    url, have_db = db_url(grading_dir), (grading_dir / "gradebook.db").exists()
    return [
        a
        for a in assignments
        if not (have_db and known.get(a) == nb.source_sha256(a) and _has_assignment(url, a))
    ]


def prepare(grading_dir: Path, assignments: list[str]) -> list[str]:
    """Make sure the gradebook knows each assignment; returns what it had to (re)generate."""
    grading_dir.mkdir(parents=True, exist_ok=True)
    marker = grading_dir / ".gradebook_sources.json"
    try:
        known = json.loads(marker.read_text()) if marker.exists() else {}
    except ValueError:
        known = {}
    needed = _needed(grading_dir, assignments, known)
    if not needed:
        return []
    url = db_url(grading_dir)
    # One nbgrader start for all of them when it can (each start costs seconds); else one by one.
    if len(needed) == 1 or _generate("*", url).returncode != 0:
        for a in needed:
            _generate_one(a, url)
    for a in needed:
        known[a] = nb.source_sha256(a)
    marker.write_text(json.dumps(known, indent=1, sort_keys=True) + "\n")
    return needed


def _generate_one(assignment: str, url: str) -> None:
    proc = _generate(assignment, url)
    if proc.returncode != 0 and "because there are submissions" in proc.stdout + proc.stderr:
        # The test cells changed since the last grading: everyone is regraded anyway.
        _drop_submissions(url, assignment)
        proc = _generate(assignment, url)
    if proc.returncode != 0:
        raise nb.NbgraderError(
            f"nbgrader generate_assignment {assignment} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
        )


def _generate(assignment: str, url: str):
    """nbgrader generate_assignment into the gradebook, released into a throwaway folder."""
    with tempfile.TemporaryDirectory(prefix="course-gradebook-") as tmp:
        args = ["generate_assignment", assignment, "--force", "--log-level=WARN", f"--db={url}"]
        return nb.run_nbgrader([*args, f"--CourseDirectory.release_directory={tmp}"], check=False)


def _has_assignment(url: str, assignment: str) -> bool:
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(url, course_id=COURSE_ID) as gb:
        try:
            gb.find_notebook(assignment, assignment)
            return True
        except MissingEntry:
            return False


def _drop_submissions(url: str, assignment: str) -> None:
    from nbgrader.api import Gradebook

    with Gradebook(url, course_id=COURSE_ID) as gb:
        for sub in list(gb.assignment_submissions(assignment)):
            gb.remove_submission(assignment, sub.student.id)


def _timestamp(r: SubmissionResult) -> dict:
    from nbgrader.utils import parse_utc

    if not r.timestamp:
        return {}
    try:
        parse_utc(r.timestamp)
        return {"timestamp": r.timestamp}
    except Exception:  # noqa: BLE001 - an odd timestamp.txt is not worth failing over
        return {}


def _record_one(gb, r: SubmissionResult) -> None:
    a, student = r.assignment, r.student
    gb.update_or_create_student(student)
    gb.update_or_create_submission(a, student, **_timestamp(r))
    comments = defaultdict(list)
    for t in r.tests:
        grade = gb.find_grade(t.grade_id, a, a, student)
        grade.auto_score = max(0.0, min(float(t.score), float(grade.max_score)))
        grade.needs_manual_grade = grade.manual_score is not None
        if not t.passed:
            comments[t.function].append(f"{t.grade_id}: {t.message}")
    for cell in gb.find_notebook(a, a).solution_cells:
        comment = gb.find_comment(cell.name, a, a, student)
        lines = comments.get(cell.name, [])
        if r.status == BAD and r.reason:
            lines = [f"not graded: {r.reason}"]
        comment.auto_comment = "\n".join(lines) if lines else None
    gb.db.commit()
    # The gradebook's penalty (on its score, manual grades included) is the one that counts.
    r.late_penalty = assign_penalty(gb, a, student)


def record(grading_dir: Path, results: list[SubmissionResult]) -> int:
    """Write the scores of graded (and bad: zeros) submissions; returns how many were written."""
    from nbgrader.api import Gradebook

    written = 0
    # nbgrader's add_submission makes SQLAlchemy warn about its own autoflush; harmless.
    warnings.filterwarnings("ignore", message=".*not in session.*")
    with Gradebook(db_url(grading_dir), course_id=COURSE_ID) as gb:
        for r in sorted(results, key=lambda r: (r.assignment, r.student)):
            if r.status != ERROR:  # grading itself failed: keep whatever the gradebook held
                _record_one(gb, r)
                written += 1
    return written


SUBMISSIONS_HEADER = [
    "assignment", "student", "submitted", "timestamp", "duedate", "seconds_late", "raw_score",
    "late_penalty", "score", "max_score",
]  # fmt: skip


def _points(value) -> str:
    return f"{float(value):g}" if value is not None else ""


def _submission_rows(gb) -> list[list[str]]:
    """One row per student and assignment of the gradebook: its points, or no submission."""
    rows, students = [], sorted(s.id for s in gb.students)
    for a in sorted(gb.assignments, key=lambda a: a.name):
        subs = {s.student.id: s for s in a.submissions}
        for sid in students:
            sub = subs.get(sid)
            if sub is None:
                rows.append([a.name, sid, "no", "", "", "", "", "", "", _points(a.max_score)])
                continue
            penalty = float(sub.late_submission_penalty or 0.0)
            rows.append([
                a.name, sid, "yes", str(sub.timestamp or ""), str(sub.duedate or ""),
                f"{sub.total_seconds_late:g}", _points(sub.score), _points(penalty),
                _points(max(0.0, float(sub.score) - penalty)), _points(a.max_score),
            ])  # fmt: skip
    return rows


def export_grades(grading_dir: Path) -> Path:
    """grades.csv: nbgrader's own CSV export of the whole gradebook; submissions.csv beside it."""
    from nbgrader.api import Gradebook
    from nbgrader.plugins.export import CsvExportPlugin

    grades = grading_dir / "grades.csv"
    with Gradebook(db_url(grading_dir), course_id=COURSE_ID) as gb:
        CsvExportPlugin(to=str(grades)).export(gb)
        rows = _submission_rows(gb)
    with (grading_dir / "submissions.csv").open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([SUBMISSIONS_HEADER, *rows])
    return grades
