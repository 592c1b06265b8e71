"""Due dates and late penalties: nbgrader's own settings, applied as ``nbgrader autograde`` does.

* **Due date**: the assignment's ``duedate`` in the gradebook (``nbgrader db assignment add A
  --duedate="2026-03-02 17:00:00 Europe/Paris"``, or formgrader), plus the student's extension if
  one was given there. Stored in UTC.
* **Submission time**: ``timestamp.txt`` beside the notebook (nbgrader's exchange writes it;
  ``make collect`` writes one second after the due date for a submission the LMS marked late, the
  LMS giving no time), else the time the gradebook already holds for that submission.
* **Penalty**: the late-submission plugin nbgrader's configuration names
  (``c.AssignLatePenalties.plugin_class``, by default ``LateSubmissionPlugin`` with
  ``c.LateSubmissionPlugin.penalty_method`` = ``none`` or ``zero``), called with the submission's
  score and seconds late and kept within [0, score] by nbgrader's ``AssignLatePenalties`` itself.
  It is stored in ``late_submission_penalty``, which ``nbgrader export``, ``grades.csv`` and
  ``make export`` subtract.

The main process reads the gradebook before grading (:func:`annotate`) and asks the plugin, for
each late submission, the penalty at every score the assignment's test cells can add up to, so
the workers (which never import nbgrader) can put the penalty on the feedback page. After grading
:func:`assign_penalty` sets the gradebook's penalty from the recorded score, as nbgrader does.
"""

from __future__ import annotations

import json
import sqlite3
from functools import cache
from pathlib import Path

from .. import nb
from ..course import COURSE_ID, ROOT, source_notebook

MAX_SCORES = 4096  # distinct achievable totals asked of the plugin per late submission


def lms_late(folder: Path) -> bool:
    """Whether ``make collect`` recorded an LMS's late flag for this submission (lms.json)."""
    path = folder / "lms.json"
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > 65536:
            return False
        return json.loads(path.read_text(encoding="utf-8")).get("late") is True
    except (OSError, ValueError, AttributeError):
        return False


def late_text(seconds: float) -> str:
    """A lateness in words: 1 s, 5 min, 3.5 h, 2.1 days."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h" if seconds < 86400 else f"{seconds / 86400:.1f} days"


def nbgrader_config():
    """nbgrader's configuration as its commands load it: the Jupyter config folders (lowest
    priority first), then the course's own nbgrader_config.py."""
    from jupyter_core.paths import jupyter_config_path
    from traitlets.config.loader import Config, PyFileConfigLoader

    cfg = Config()
    for folder in [*reversed(jupyter_config_path()), str(ROOT)]:
        if (Path(folder) / "nbgrader_config.py").is_file():
            cfg.merge(PyFileConfigLoader("nbgrader_config.py", path=folder).load_config())
    return cfg


@cache
def assigner():
    """nbgrader's AssignLatePenalties preprocessor, configured, with its plugin started."""
    from nbgrader.preprocessors import AssignLatePenalties

    pp = AssignLatePenalties(config=nbgrader_config())
    pp.init_plugin()
    return pp


def describe() -> str:
    """The late policy in words, for the reports."""
    plugin = assigner().plugin_inst
    method = getattr(plugin, "penalty_method", None)
    return type(plugin).__name__ + (f" (penalty_method = {method})" if method else "")


def achievable(points: list[float]) -> list[float] | None:
    """Every total the test cells can add up to (None when there are too many to ask)."""
    totals = {0.0}
    for p in points:
        totals |= {round(t + p, 6) for t in totals}
        if len(totals) > MAX_SCORES:
            return None
    return sorted(totals)


def penalty(student: str, score: float, seconds_late: float) -> float | None:
    """The plugin's penalty, kept within [0, score] as AssignLatePenalties keeps it (without its
    warning: this is asked for every achievable score); None: no penalty."""
    if seconds_late <= 0:
        return None
    value = assigner().plugin_inst.late_submission_penalty(student, score, seconds_late)
    return None if value is None else min(max(float(value), 0.0), float(score))


def _has_due_dates(db: Path) -> bool:
    """A cheap look before importing nbgrader: does any assignment have a due date at all?"""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            row = con.execute("SELECT 1 FROM assignment WHERE duedate IS NOT NULL").fetchone()
        finally:
            con.close()
    except sqlite3.Error:
        return False  # an unreadable gradebook is reported (and left unwritten) by make grade
    return row is not None


def _submission_time(gb, job):
    """(the submission time nbgrader will record, the student's extension), naive UTC."""
    from nbgrader.api import MissingEntry
    from nbgrader.utils import parse_utc

    try:
        stamp = parse_utc(job.timestamp) if job.timestamp else None
    except (ValueError, OverflowError):
        stamp = None  # the gradebook keeps what it had (autograder/grade/gradebook.py)
    try:
        sub = gb.find_submission(job.assignment, job.student)
        return stamp or sub.timestamp, sub.extension
    except MissingEntry:
        return stamp, None


def annotate(jobs: list, grading_dir: Path) -> None:
    """Set each job's LMS flag, due date, seconds late and penalty table (late jobs only)."""
    for job in jobs:
        job.lms_late = job.path is not None and lms_late(job.path.parent)
    db = grading_dir / "gradebook.db"
    if not db.is_file() or not _has_due_dates(db):
        return
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{db}", course_id=COURSE_ID) as gb:
        dues = {a.name: a.duedate for a in gb.assignments if a.duedate is not None}
        for job in (j for j in jobs if j.assignment in dues):
            stamp, extension = _submission_time(gb, job)
            due = dues[job.assignment] + extension if extension else dues[job.assignment]
            job.due = f"{due:%Y-%m-%d %H:%M:%S} UTC"
            job.seconds_late = max(0.0, (stamp - due).total_seconds()) if stamp else 0.0
    totals = {}
    for job in (j for j in jobs if j.seconds_late > 0):
        if job.assignment not in totals:
            points = nb.points(nb.read(source_notebook(job.assignment))).values()
            totals[job.assignment] = achievable(list(points)) or []
        job.penalties = {
            s: penalty(job.student, s, job.seconds_late) for s in totals[job.assignment]
        }


def assign_penalty(gb, assignment: str, student: str) -> float | None:
    """What nbgrader's AssignLatePenalties does after autograding, on the recorded scores;
    returns the penalty (None: not late, or the plugin gave none)."""
    sub = gb.find_submission(assignment, student)
    notebook = gb.find_submission_notebook(assignment, assignment, student)
    notebook.late_submission_penalty = None
    if sub.total_seconds_late > 0:
        value = assigner().plugin_inst.late_submission_penalty(
            student, notebook.score, sub.total_seconds_late
        )
        if value is not None:
            notebook.late_submission_penalty = assigner()._check_late_penalty(notebook, value)
    gb.db.commit()
    return notebook.late_submission_penalty
