"""What grading produces, typed: a test cell's result and a submission's result, with totals.

Built in one place (:meth:`SubmissionResult.start`, :meth:`SubmissionResult.not_graded`) and read
by attribute everywhere (gradebook, reports, feedback). Both are plain dataclasses of plain data,
so they cross process boundaries (the worker pool) unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

GRADED, BAD, ERROR = "graded", "bad", "error"


@dataclass
class Job:
    """One (student, assignment) submission to grade."""

    index: int
    student: str
    assignment: str
    path: Path | None  # where the notebook should be (it may be missing)
    timestamp: str | None = None


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

    @classmethod
    def start(cls, job: Job, sandboxed: bool = True) -> SubmissionResult:
        return cls(job.index, job.student, job.assignment, job.timestamp, sandboxed=sandboxed)

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
