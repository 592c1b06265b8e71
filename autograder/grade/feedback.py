"""What a student gets back: the graded copy (:mod:`.graded`) and a feedback page, both leak-free.

``<grading>/feedback/<student>/<a>/<a>.html``: the score, the release the student worked from,
the student's answer cells, and for each test cell its visible part, score/max and the message.
It is rendered from ``templates/feedback.html`` with autoescaping, so a student's text can never
become markup; an instructor restyles the page by editing that one file. No hidden-test source and
no traceback appears in it: the hidden checks never ran in the kernel, and messages are written by
the judges.

The page is rendered from the *graded copy* (:func:`render`), so that plain ``nbgrader
generate_feedback`` makes the same page (nbgrader_config.py sets its exporter to
:class:`~.nbgrader_plugins.CourseFeedbackExporter`, which calls :func:`autograded_page`): on
``make grade``'s output byte for byte (the scores come from the gradebook, the rest from the
graded copy and the ``.course_grading.json`` beside it), and on nbgrader's own autograded
notebooks with the scores and messages nbgrader recorded.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from .. import nb
from ..release import history
from .assignment import assignment_info, test_of
from .graded import graded_notebook, trim
from .late import late_text
from .refused import notebook_refusals, with_hint
from .results import SIDECAR

PLAIN = "plain nbgrader autograde has none"


@cache
def _template():
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("autograder.grade", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    return env.get_template("feedback.html")


def _docline(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return (
        first.strip().strip('"').strip("'").strip()
        if first.lstrip().startswith(('"""', "'''"))
        else ""
    )


def _text_outputs(outputs: list) -> str:
    parts = []
    for out in outputs:
        t = out.get("output_type")
        if t == "stream":
            parts.append(out.get("text", ""))
        elif t in ("execute_result", "display_data"):
            parts.append(out.get("data", {}).get("text/plain", ""))
        elif t == "error":
            parts.append(f"{out.get('ename')}: {out.get('evalue')}")
    return trim("".join(str(p) for p in parts), 5_000)


def _sections(info, graded: dict | None, by_gid: dict) -> list[dict]:
    """Answer cells and test cells in the graded copy's order; tests not found there at the end."""
    sections, shown = [], set()

    def test(gid):
        shown.add(gid)
        return {"kind": "test", "test": by_gid[gid], "visible": info.visible.get(gid, "")}

    for cell in graded["cells"] if graded is not None else []:
        gid = test_of(cell, info)
        if gid is not None:
            if gid not in shown and gid in by_gid:
                sections.append(test(gid))
        elif cell.get("cell_type") == "code" and nb.grade_id(cell) in info.answer_ids:
            out = _text_outputs(cell.get("outputs") or [])
            src = trim(nb.source(cell), 20_000)
            sections.append(
                {"kind": "answer", "name": nb.grade_id(cell), "source": src, "output": out.strip() and out}
            )  # fmt: skip
    sections += [test(gid) for gid, _ in info.tests if gid not in shown and gid in by_gid]
    return sections


def late_note(result) -> str:
    """What the student is told about lateness: when, who said so, the penalty and the grade."""
    if result.seconds_late > 0 and result.lms_late:
        text = (
            "Your LMS marked this submission late. It gives no time, so it counts as submitted "
            f"just after the due date ({result.due})."
        )
    elif result.seconds_late > 0:
        text = f"Submitted {late_text(result.seconds_late)} after the due date ({result.due})."
    elif result.lms_late:
        return (
            "Your LMS marked this submission late. No due date is set in this course's "
            "gradebook, so this grader deducts nothing for it."
        )
    else:
        return ""
    if result.late_penalty:
        grade = max(0.0, result.score - result.late_penalty)
        return (
            f"{text} Late penalty: {result.late_penalty:g} points, so your grade is "
            f"{grade:g} / {result.max_score:g}."
        )
    unknown = any(n.startswith("late:") for n in result.notes)  # not in the worker's table
    return text if unknown else f"{text} No late penalty applies."


def render(info, student: str, graded, tests: list[dict], header: dict, score=None, total=None):
    """The page. ``tests``: per test cell, in notebook order, grade_id, points, score, passed and
    message; ``header``: sandboxed, unsandboxed (why not), release, stale and notes; ``score``
    and ``total`` default to the tests' sums."""
    tests = [
        {**t, "message": t["message"] or ("" if t["passed"] else "failed"),
         "what": _docline(info.visible.get(t["grade_id"], ""))}
        for t in tests
    ]  # fmt: skip
    by_gid = {t["grade_id"]: t for t in tests}
    return _template().render(
        assignment=info.name,
        student=student,
        score=sum(t["score"] for t in tests) if score is None else score,
        total=sum(t["points"] for t in tests) if total is None else total,
        current=f"{info.stamp['release']}+{info.stamp['source_sha256']}",
        tests=tests,
        sections=_sections(info, graded, by_gid),
        **header,
    )


def _header(result) -> dict:
    notes = [result.reason] if result.reason else []
    notes += [n for n in result.notes if n != result.reason]
    return {
        "sandboxed": result.sandboxed,
        "unsandboxed": "the instructor chose to",
        "release": result.release,
        "stale": result.stale,
        "late": late_note(result),
        "notes": notes,
    }


def feedback_html(job, info, notebook: dict | None, cell_results: dict, result, graded=None):
    """``make grade``'s page for one result (from its graded copy, made here unless given)."""
    if graded is None and notebook is not None:
        graded = graded_notebook(notebook, info, cell_results, result.tests)
    tests = [vars(t) for t in result.tests]
    return render(info, job.student, graded, tests, _header(result), result.score, result.max_score)


def _readable_timestamp(text: str | None) -> bool:
    """Whether nbgrader can read this timestamp.txt (it fails the whole command otherwise)."""
    if not text:
        return False
    import dateutil.parser  # as nbgrader's parse_utc; a dependency of jupyter_client

    parts = text.split(" ")
    try:
        dateutil.parser.parse(" ".join(parts[:2]) if len(parts) == 3 else text)
        return True
    except (ValueError, OverflowError):
        return False


# nbgrader's files beside a submission that its later steps read again: autograde compares
# timestamp.txt with the graded copy's, release_feedback reads both beside the feedback page.
EXCHANGE_FILES = ("timestamp.txt", "submission_secret.txt")


def _exchange_files(job) -> dict[str, str]:
    """The submission's nbgrader files, to copy as nbgrader's autograde and generate_feedback
    copy them (a timestamp nbgrader could not read is left out: it would fail the command)."""
    files = {"timestamp.txt": job.timestamp} if _readable_timestamp(job.timestamp) else {}
    secret = job.path.parent / "submission_secret.txt" if job.path is not None else None
    if secret and secret.is_file() and not secret.is_symlink() and secret.stat().st_size < 4096:
        files["submission_secret.txt"] = secret.read_text(encoding="utf-8", errors="replace")
    return files


def write_outputs(
    grading_dir: Path, job, info, notebook: dict | None, cell_results: dict, result
) -> None:
    """Write (or replace) the graded copy and the feedback page of one submission. Beside the
    graded copy: what nbgrader's exporter needs to render the same page; beside both, the
    submission's nbgrader files (a later resubmission is then regraded by plain ``nbgrader
    autograde`` too, an unchanged one skipped, and ``nbgrader release_feedback`` finds them)."""
    name = info.name
    folder = grading_dir / "autograded" / job.student / name
    fb = grading_dir / "feedback" / job.student / name / f"{name}.html"
    for old in (f"{name}.ipynb", SIDECAR, *EXCHANGE_FILES):
        (folder / old).unlink(missing_ok=True)
        (fb.parent / old).unlink(missing_ok=True)
    graded, beside = None, [fb.parent]
    if notebook is not None:
        graded = graded_notebook(notebook, info, cell_results, result.tests)
        nb.write(graded, folder / f"{name}.ipynb")
        (folder / SIDECAR).write_text(json.dumps(_header(result), sort_keys=True), encoding="utf-8")
        beside.append(folder)
    fb.parent.mkdir(parents=True, exist_ok=True)
    fb.write_text(feedback_html(job, info, notebook, cell_results, result, graded), "utf-8")
    for where in beside:
        for fname, text in _exchange_files(job).items():
            (where / fname).write_text(text, encoding="utf-8")


def _plain_header(notebook: dict, info, penalty: float, grade: float, total: float) -> dict:
    """The header for a notebook nbgrader autograded itself: no sandbox, staleness as make grade
    decides it, the late penalty nbgrader recorded."""
    stamp = (notebook.get("metadata") or {}).get("course")
    current = {"stamp": info.stamp, "given": info.given, "functions": info.answer_ids,
               "tests": [gid for gid, _ in info.tests]}  # fmt: skip
    stale, note = history.staleness(info.name, stamp, current)
    late = (
        f"Late penalty: {penalty:g} points (nbgrader's late policy), so your grade is "
        f"{grade:g} / {total:g}."
    ) if penalty else ""  # fmt: skip
    return {
        "sandboxed": False, "unsandboxed": PLAIN, "stale": stale, "late": late,
        "release": nb.stamp_label(stamp) if stamp is not None else "",
        "notes": [note] if note else [],
    }  # fmt: skip


def _error(cell) -> str:
    for out in cell.get("outputs") or []:
        if out.get("output_type") == "error":
            return str(out.get("evalue") or out.get("ename") or "failed")
    return ""


def _name_error(cell) -> bool:
    return any(
        o.get("output_type") == "error" and o.get("ename") == "NameError"
        for o in cell.get("outputs") or []
    )


def _plain_refusals(notebook: dict, info) -> list[str]:
    """The imports plain nbgrader's kernel refused, cell by cell, as make grade's notes say."""

    def label(i, cell):
        gid = nb.grade_id(cell)
        return f"cell {i + 1} ({gid})" if gid in info.answer_ids else f"cell {i + 1}"

    return notebook_refusals(notebook, lambda c: test_of(c, info) is not None, label)


def autograded_page(assignment: str, student: str, notebook: dict, folder: Path, grades: dict):
    """The page for an autograded notebook whose grade cells carry the gradebook's ``score`` and
    ``points`` (nbgrader's GetGrades; ``grades``: its ``score`` (late penalty deducted),
    ``max_score`` and ``late_penalty``): written by ``make grade`` (its header beside it) or by
    plain ``nbgrader autograde``."""
    info = assignment_info(assignment)
    cells = {test_of(c, info): c for c in notebook["cells"] if test_of(c, info)}
    side = Path(folder) / SIDECAR
    header = json.loads(side.read_text("utf-8")) if side.is_file() else None
    # Plain nbgrader's kernel refused an import (make grade's notes and messages say so already)
    refusals = [] if header else _plain_refusals(notebook, info)
    tests = []
    for gid, pts in info.tests:
        cell = cells.get(gid, {})
        meta = nb.meta(cell)
        got, points = float(meta.get("score") or 0.0), float(meta.get("points", pts))
        passed = bool(cell) and got >= points
        message = "" if passed else with_hint(_error(cell), refusals, _name_error(cell))
        tests.append(
            {"grade_id": gid, "function": info.checks[gid].function, "points": points,
             "score": got, "passed": passed, "message": message}
        )  # fmt: skip
    penalty = float(grades.get("late_penalty") or 0.0)
    total = float(grades.get("max_score") or sum(t["points"] for t in tests))
    grade = float(grades.get("score") or 0.0)
    if header is None:
        header = _plain_header(notebook, info, penalty, grade, total)
        header["notes"] += refusals
    # The page's score is before the penalty (as make grade's); the late note gives the grade.
    return render(info, student, notebook, tests, header, grade + penalty, total)
