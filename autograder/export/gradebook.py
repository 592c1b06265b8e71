"""What the export needs from nbgrader's gradebook: each submission's total score, each maximum.

A submission's points are the ``score`` column of ``nbgrader export``: nbgrader's own
``SubmittedAssignment.score`` (the sum over its graded cells of the manual score where a grader
gave one, else the automatic score) less its late-submission penalty, if a late-submission plugin
gave one, and never below 0. A student with no submission has no entry (never a zero: nbgrader's
own CSV export writes 0 there).
"""

from dataclasses import dataclass, field
from pathlib import Path

from autograder.course import COURSE_ID
from autograder.export.csvio import ExportError


@dataclass
class Grades:
    """Scores per assignment and student, maxima per assignment, a display name per student."""

    max_score: dict[str, float] = field(default_factory=dict)
    scores: dict[str, dict[str, float]] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)

    def graded_students(self) -> list[str]:
        """Every student with at least one submission in the exported assignments, sorted."""
        return sorted({s for per_student in self.scores.values() for s in per_student})


def display_name(student) -> str:
    """'First Last (id)', or just the id when the gradebook has no name."""
    name = " ".join(p for p in (student.first_name, student.last_name) if p)
    return f"{name} ({student.id})" if name else student.id


def points(submission) -> float:
    """What ``nbgrader export`` writes as the score: total less late penalty, at least 0."""
    penalty = submission.late_submission_penalty or 0.0
    return max(0.0, float(submission.score) - float(penalty))


def read_grades(db: Path, wanted: list[str] | None = None) -> tuple[Grades, list[str]]:
    """Read ``db``; returns the grades of the ``wanted`` assignments (default: every assignment
    with a submission) and the names of the assignments skipped for having none."""
    if not Path(db).is_file():
        raise ExportError(f"no gradebook at {db}: run `make grade` first (or pass --grading-dir)")
    from nbgrader.api import Gradebook  # slow import: only once there is a gradebook to read

    grades, skipped = Grades(), []
    with Gradebook(f"sqlite:///{db}", course_id=COURSE_ID) as gb:
        known = {a.name: a for a in gb.assignments}
        missing = [a for a in wanted or [] if a not in known]
        if missing:
            raise ExportError(
                f"not in the gradebook: {', '.join(missing)} (it has: {', '.join(sorted(known))})"
            )
        for name in wanted or sorted(known):
            assignment = known[name]
            scores = {sub.student.id: points(sub) for sub in assignment.submissions}
            if not scores and not wanted:
                skipped.append(name)
                continue
            grades.max_score[name] = float(assignment.max_score)
            grades.scores[name] = scores
            for sub in assignment.submissions:
                grades.names[sub.student.id] = display_name(sub.student)
    return grades, skipped
