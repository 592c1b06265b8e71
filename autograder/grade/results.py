"""What grading produces, typed: a test cell's result and a submission's result, with totals.

Built in one place (:meth:`SubmissionResult.start`, :meth:`SubmissionResult.not_graded`) and read
by attribute everywhere (gradebook, reports, feedback). Both are plain dataclasses of plain data,
so they cross process boundaries (the worker pool) unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

GRADED, BAD, ERROR = "graded", "bad", "error"
# Beside a graded copy (<grading>/autograded/<student>/<a>/): what make grade knew besides the
# scores (notes, sandbox, staleness), for nbgrader's generate_feedback to render the same page.
# nbgrader_config.py ignores the name, so a student's folder can never supply one.
SIDECAR = ".course_grading.json"


@dataclass
class Job:
    """One (student, assignment) submission to grade."""

    index: int
    student: str
    assignment: str
    path: Path | None  # where the notebook should be (it may be missing)
    timestamp: str | None = None
    # Lateness (autograder/grade/late.py), set by the main process from the gradebook:
    due: str | None = None  # the due date, extension included, "YYYY-MM-DD HH:MM:SS UTC"
    seconds_late: float = 0.0
    lms_late: bool = False  # the LMS marked it late (make collect's lms.json)
    penalties: dict | None = None  # achievable score -> nbgrader's late penalty (late jobs only)


@dataclass
class TestResult:
    grade_id: str
    function: str  # the answer cell (= function) the test cell grades
    points: float
    score: float
    passed: bool
    message: str = ""
    # the stable ids of the mistakes the judge recognised (judges.Mistake.name), ";"-separated,
    # "" when it recognised none (a pass, an unrecognised wrong answer, a notebook not graded)
    mistake: str = ""


@dataclass
class SubmissionResult:
    index: int
    student: str
    assignment: str
    timestamp: str | None = None
    status: str = GRADED  # graded | bad (the submission's fault: zeros) | error (grading failed)
    reason: str | None = None
    notes: list = field(default_factory=list)
    release: str = ""  # the stamp the notebook carries, e.g. "2026.11+1a2b3c4d5e6f"
    stale: bool = False  # it came from another release than the current one
    tests: list = field(default_factory=list)  # [TestResult] in notebook order
    seconds: float = 0.0
    trace: str | None = None  # a grader traceback (status error only)
    sandboxed: bool = True
    due: str | None = None
    seconds_late: float = 0.0
    lms_late: bool = False
    late_penalty: float | None = None  # nbgrader's, at this score (None: none, or not late)
    # where the worker's time went, in seconds (kernel, cells, exchange, judge, outputs, ...):
    # for the benchmark's breakdown; summed per run in runs/<a>.json, not kept per submission
    phases: dict = field(default_factory=dict)

    def clock(self, phase: str, seconds: float) -> None:
        self.phases[phase] = self.phases.get(phase, 0.0) + seconds

    @classmethod
    def start(cls, job: Job, sandboxed: bool = True) -> SubmissionResult:
        return cls(
            job.index, job.student, job.assignment, job.timestamp, sandboxed=sandboxed,
            due=job.due, seconds_late=job.seconds_late, lms_late=job.lms_late,
        )  # fmt: skip

    def apply_late(self, penalties: dict | None) -> None:
        """The late penalty at this result's score, from the table the main process made."""
        if penalties and self.seconds_late > 0:
            key = round(self.score, 6)
            self.late_penalty = penalties.get(key)
            if key not in penalties:
                self.notes.append("late: the late penalty is set in the gradebook, not shown here")

    @classmethod
    def not_graded(cls, job: Job, tests: list, status: str, reason: str, message: str):
        """Zeros on every test cell, e.g. for a missing notebook or a crashed grader.

        ``tests``: [(grade_id, function, points)] of the assignment."""
        result = cls.start(job)
        result.fail(tests, status, reason, message)
        return result

    def fail(self, tests: list, status: str, reason: str, message: str) -> None:
        self.status, self.reason = status, reason
        self.tests = [TestResult(g, f, float(p), 0.0, False, message) for g, f, p in tests]

    @property
    def score(self) -> float:
        return sum(t.score for t in self.tests)

    @property
    def max_score(self) -> float:
        return sum(t.points for t in self.tests)
