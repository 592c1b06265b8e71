"""What a student gets back: the graded copy (:mod:`.graded`) and a feedback page, both leak-free.

``<grading>/feedback/<student>/<a>/<a>.html``: the score, the release the student worked from,
the student's answer cells, and for each test cell its visible part, score/max and the message.
It is rendered from ``templates/feedback.html`` with autoescaping, so a student's text can never
become markup; an instructor restyles the page by editing that one file. No hidden-test source and
no traceback appears in it: the hidden checks never ran in the kernel, and messages are written by
the judges.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from .. import nb
from .assignment import test_of
from .graded import graded_notebook, trim
from .late import late_text


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


def _sections(info, notebook: dict | None, cell_results: dict, by_gid: dict) -> list[dict]:
    """Answer cells and test cells in the student's order; tests not found there at the end."""
    sections, shown = [], set()

    def test(gid):
        shown.add(gid)
        return {"kind": "test", "test": by_gid[gid], "visible": info.visible.get(gid, "")}

    for i, cell in enumerate(notebook["cells"] if notebook is not None else []):
        gid = test_of(cell, info)
        if gid is not None:
            if gid not in shown and gid in by_gid:
                sections.append(test(gid))
        elif cell.get("cell_type") == "code" and nb.grade_id(cell) in info.answer_ids:
            res = cell_results.get(i)
            out = _text_outputs(res.outputs) if res is not None else ""
            src = trim(nb.source(cell), 20_000)
            sections.append(
                {
                    "kind": "answer",
                    "name": nb.grade_id(cell),
                    "source": src,
                    "output": out.strip() and out,
                }
            )
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


def feedback_html(job, info, notebook: dict | None, cell_results: dict, result) -> str:
    by_gid = {t.grade_id: t for t in result.tests}
    tests = [dict(vars(t), what=_docline(info.visible.get(t.grade_id, ""))) for t in result.tests]
    notes = [result.reason] if result.reason else []
    notes += [n for n in result.notes if n != result.reason]
    return _template().render(
        assignment=info.name,
        student=job.student,
        score=result.score,
        total=result.max_score,
        sandboxed=result.sandboxed,
        release=result.release,
        stale=result.stale,
        current=f"{info.stamp['release']}+{info.stamp['source_sha256']}",
        notes=notes,
        late=late_note(result),
        tests=tests,
        sections=_sections(info, notebook, cell_results, by_gid),
    )


def write_outputs(
    grading_dir: Path, job, info, notebook: dict | None, cell_results: dict, result
) -> None:
    """Write (or replace) the graded copy and the feedback page of one submission."""
    name = info.name
    graded = grading_dir / "autograded" / job.student / name / f"{name}.ipynb"
    fb = grading_dir / "feedback" / job.student / name / f"{name}.html"
    if notebook is not None:
        nb.write(graded_notebook(notebook, info, cell_results, result.tests), graded)
    elif graded.exists():
        graded.unlink()
    fb.parent.mkdir(parents=True, exist_ok=True)
    fb.write_text(feedback_html(job, info, notebook, cell_results, result), encoding="utf-8")
