"""The gradebook cannot be changed by a submission, even unsandboxed.

Scores are written only by the trusted process. Before a batch, :func:`snapshot` records every
column a submission could use to raise a grade: nbgrader's manual scores, extra credit, manual
comments, extensions and late penalties, and the automatic scores of submissions this batch does
not grade. After the batch is recorded, :func:`verify` checks that each automatic score and late
penalty of the batch equals what the grader decided, that no score exceeds its maximum, and that
nothing else changed (what an instructor entered in formgrader before the batch is kept as it was). Anything
else is restored from the snapshot and reported by name: ``make grade`` then exits non-zero.
"""

from __future__ import annotations

from .results import ERROR

GRADE_COLS = ("manual_score", "extra_credit")


class Tampered(RuntimeError):
    """The gradebook held changes the grader did not make; they were undone."""

    def __init__(self, problems: list[str]):
        shown = "\n  ".join(problems[:20])
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        super().__init__(
            f"the gradebook was changed during grading by something other than the grader "
            f"(undone; check the machine and grade again):\n  {shown}{more}"
        )


OTHER = {
    "comment": ("manual_comment",),
    "submission": ("extension",),
    "notebook": ("late_submission_penalty",),
}


def _rows(gb):
    """(key, orm object, guarded columns) for every row a submission could use."""
    from nbgrader import api

    for g in gb.db.query(api.Grade):
        nb = g.notebook
        yield (
            ("grade", nb.assignment.student.id, nb.assignment.name, nb.name, g.name),
            g,
            GRADE_COLS,
        )
    for c in gb.db.query(api.Comment):
        nb = c.notebook
        yield (
            ("comment", nb.assignment.student.id, nb.assignment.name, nb.name, c.name),
            c,
            OTHER["comment"],
        )
    for s in gb.db.query(api.SubmittedAssignment):
        yield ("submission", s.student.id, s.name, "", ""), s, OTHER["submission"]
    for n in gb.db.query(api.SubmittedNotebook):
        key = ("notebook", n.assignment.student.id, n.assignment.name, n.name, "")
        yield key, n, OTHER["notebook"]


def _values(obj, cols) -> tuple:
    return tuple(getattr(obj, c) for c in cols)


def snapshot(url: str, course_id: str) -> dict:
    """key -> guarded values (grade rows also keep their automatic score)."""
    from nbgrader.api import Gradebook

    with Gradebook(url, course_id=course_id) as gb:
        snap = {key: _values(obj, cols) for key, obj, cols in _rows(gb)}
        for key, obj, _ in _rows(gb):
            if key[0] == "grade":
                snap[("auto",) + key[1:]] = obj.auto_score
    return snap


def _decided(results) -> dict:
    """(student, assignment, notebook, cell) -> the automatic score the grader decided."""
    return {
        (r.student, r.assignment, r.assignment, t.grade_id): float(t.score)
        for r in results
        if r.status != ERROR
        for t in r.tests
    }


def _penalties(results) -> dict:
    """(student, assignment, notebook) -> the late penalty the grader recorded (None: none)."""
    return {
        (r.student, r.assignment, r.assignment): r.late_penalty
        for r in results
        if r.status != ERROR
    }


def _check_penalty(key, n, penalties, problems) -> None:
    want, now = penalties[key[1:4]], n.late_submission_penalty
    if (want is None) != (now is None) or (want is not None and abs(float(now) - want) > 1e-9):
        problems.append(f"{'/'.join(key[1:4])}: late penalty {now}, the grader decided {want}")
        n.late_submission_penalty = want


def _check_grade(key, g, snap, decided, problems) -> None:
    rest = key[1:]
    if rest in decided:
        want = max(0.0, min(decided[rest], float(g.max_score)))
        if g.auto_score is None or abs(float(g.auto_score) - want) > 1e-9:
            problems.append(
                f"{'/'.join(rest)}: automatic score {g.auto_score}, the grader decided {want:g}"
            )
            g.auto_score = want
    elif ("auto",) + rest in snap and g.auto_score != snap[("auto",) + rest]:
        problems.append(
            f"{'/'.join(rest)}: automatic score of a submission not in this batch changed"
        )
        g.auto_score = snap[("auto",) + rest]
    if g.auto_score is not None and g.max_score is not None and g.auto_score > g.max_score:
        problems.append(
            f"{'/'.join(rest)}: automatic score {g.auto_score} above its maximum {g.max_score}"
        )
        g.auto_score = g.max_score


def verify(url: str, course_id: str, snap: dict, results) -> list[str]:
    """What changed that the grader did not write (restored); [] when the gradebook is as it must be."""
    from nbgrader.api import Gradebook

    problems: list[str] = []
    decided, penalties = _decided(results), _penalties(results)
    with Gradebook(url, course_id=course_id) as gb:
        for key, obj, cols in list(_rows(gb)):
            if key[0] == "notebook" and key[1:4] in penalties:
                _check_penalty(key, obj, penalties, problems)
                continue
            before = snap.get(key, (None,) * len(cols))
            now = _values(obj, cols)
            if now != before and not (key not in snap and all(v in (None, 0, 0.0) for v in now)):
                changed = [c for c, a, b in zip(cols, before, now, strict=True) if a != b]
                problems.append(
                    f"{'/'.join(str(k) for k in key[1:] if k)}: {', '.join(changed)} changed"
                )
                for c, v in zip(cols, before, strict=True):
                    setattr(obj, c, v)
            if key[0] == "grade":
                _check_grade(key, obj, snap, decided, problems)
        gb.db.commit()
    return problems
