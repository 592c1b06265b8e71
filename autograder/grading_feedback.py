"""What a student gets back: a graded copy of the notebook and a feedback page, both leak-free.

* ``<grading>/autograded/<student>/<a>/<a>.ipynb``: the submission as it ran, with outputs capped in
  characters (a single 60 MB line would pass nbgrader's line cap) and every test cell replaced by
  its *released* form (visible tests only: the source with hidden tests never enters it) with the
  verdict as its output. It stays well under 10 MB whatever the submission printed.
* ``<grading>/feedback/<student>/<a>/<a>.html``: the score, the release the student worked from,
  the student's answer cells, and for each test cell its visible part, score/max and the message.
  No hidden-test source and no traceback appears in it: the hidden checks never ran in the kernel,
  and messages are written by the judges.
"""

from __future__ import annotations

import copy
import html
import json
from pathlib import Path

from . import notebooks

MAX_SOURCE_CHARS = 100_000  # per cell of the graded copy
MAX_OUTPUT_CHARS = 2_000_000  # all outputs of the graded copy together
MAX_GRADED_BYTES = 9 * 1024**2  # the graded copy is shrunk further if it ever exceeds this


def _trim(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n# [grader: {len(text) - limit:,} more characters cut off]\n"


def _output_chars(out: dict) -> int:
    return len(json.dumps(out))


def _small_metadata(meta) -> dict:
    """A cell's metadata, unless it is not a dict or is suspiciously large."""
    if not isinstance(meta, dict):
        return {}
    try:
        return meta if len(json.dumps(meta)) <= 20_000 else {}
    except (TypeError, ValueError):
        return {}


def _verdict_output(test: dict) -> dict:
    if test["passed"]:
        return {
            "output_type": "stream",
            "name": "stdout",
            "text": f"passed: {test['score']:g}/{test['points']:g} points\n",
        }
    msg = test["message"] or "failed"
    return {
        "output_type": "error",
        "ename": "AssertionError",
        "evalue": msg,
        "traceback": [f"AssertionError: {msg}"],
    }


def graded_notebook(nb: dict, info, cell_results: dict, tests: list[dict]) -> dict:
    """The graded copy: student cells as they ran, test cells in their released form + verdict."""
    from .grading_worker import test_of

    by_gid = {t["grade_id"]: t for t in tests}
    release_tests = {
        (c.get("metadata", {}).get("nbgrader") or {}).get("grade_id"): c
        for c in info.release_cells
        if c["cell_type"] == "code"
    }
    out_budget = MAX_OUTPUT_CHARS

    def test_cell(gid):
        cell = copy.deepcopy(release_tests[gid])
        cell["outputs"] = [_verdict_output(by_gid[gid])]
        cell["execution_count"] = None
        return cell

    cells, placed = [], {}
    for i, cell in enumerate(nb["cells"]):
        gid = test_of(cell, info)
        if gid is not None:
            if gid not in placed and gid in release_tests:
                placed[gid] = len(cells)
                cells.append(test_cell(gid))
            continue
        c = {
            "cell_type": cell.get("cell_type")
            if cell.get("cell_type") in ("code", "markdown", "raw")
            else "raw",
            "metadata": _small_metadata(cell.get("metadata")),
            "source": _trim(notebooks.source(cell), MAX_SOURCE_CHARS),
        }
        if isinstance(cell.get("id"), str):
            c["id"] = cell["id"][:64]
        if c["cell_type"] == "code":
            res = cell_results.get(i)
            outs = []
            for out in res.outputs if res is not None else []:
                n = _output_chars(out)
                if n > out_budget:
                    outs.append(
                        {
                            "output_type": "stream",
                            "name": "stderr",
                            "text": "[grader: output removed, the notebook printed too much]\n",
                        }
                    )
                    break
                out_budget -= n
                outs.append(out)
            c["outputs"] = outs
            c["execution_count"] = res.execution_count if res is not None else None
        cells.append(c)
    # Deleted test cells come back, after the cell that precedes them in the release.
    rel_keys = []
    for rc in info.release_cells:
        rel_keys.append(
            {
                k
                for k in (
                    (rc.get("metadata", {}).get("nbgrader") or {}).get("grade_id"),
                    rc.get("id"),
                )
                if k
            }
        )
    for gid, _pts in info.tests:
        if gid in placed or gid not in release_tests:
            continue
        pos = len(cells)
        idx = next(i for i, keys in enumerate(rel_keys) if gid in keys)
        before = set().union(*rel_keys[:idx]) if idx else set()
        for j in range(len(cells) - 1, -1, -1):
            c = cells[j]
            keys = {(c.get("metadata", {}).get("nbgrader") or {}).get("grade_id"), c.get("id")}
            if keys & before:
                pos = j + 1
                break
        cells.insert(pos, test_cell(gid))
        placed[gid] = pos
    graded = {
        "cells": cells,
        "metadata": {
            k: v
            for k, v in (nb.get("metadata") or {}).items()
            if k in ("kernelspec", "language_info", "course")
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    if _size(graded) > MAX_GRADED_BYTES:  # many huge cells: keep the grading, drop the bulk
        for c in cells:
            if test_of(c, info):
                continue
            c["source"] = _trim(c["source"], 5_000)
            nbg = c["metadata"].get("nbgrader")
            c["metadata"] = (
                {"nbgrader": {k: v for k, v in nbg.items() if k in NBGRADER_KEYS}} if nbg else {}
            )
            if c["cell_type"] == "code":
                c["outputs"] = []
    if _size(graded) > MAX_GRADED_BYTES:  # absurdly many cells: keep answers and tests only
        keep = set(info.answer_ids)
        graded["cells"] = [
            c
            for c in cells
            if test_of(c, info) or (c["metadata"].get("nbgrader") or {}).get("grade_id") in keep
        ]
    return graded


NBGRADER_KEYS = ("grade", "grade_id", "locked", "points", "schema_version", "solution", "task")


def _size(nb: dict) -> int:
    return len(notebooks.dumps(nb).encode())


# ------------------------------------------------------------------------------------------
# Feedback page
# ------------------------------------------------------------------------------------------
CSS = """
body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
pre{background:#f6f8fa;padding:.6rem;overflow-x:auto;white-space:pre-wrap;border-radius:4px}
.pass{color:#1a7f37}.fail{color:#cf222e}p.fail{white-space:pre-wrap}.note{background:#fff8c5;padding:.5rem;border-radius:4px}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3rem .6rem;text-align:left}
section{border-top:1px solid #ddd;margin-top:1.2rem;padding-top:.4rem}
"""


def _e(s) -> str:
    return html.escape(str(s), quote=True)


def _docline(source: str) -> str:
    first = source.strip().splitlines()[0] if source.strip() else ""
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
    return _trim("".join(str(p) for p in parts), 5_000)


def feedback_html(job, info, nb: dict | None, cell_results: dict, result: dict) -> str:
    from .grading_worker import test_of

    tests = result["tests"]
    score = sum(t["score"] for t in tests)
    total = sum(t["points"] for t in tests)
    h = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{_e(info.name)}: feedback for {_e(job.student)}</title><style>{CSS}</style></head><body>",
        f"<h1>{_e(info.name)}</h1>",
        f"<p>Student: <b>{_e(job.student)}</b> &middot; Score: <b>{score:g} / {total:g}</b></p>",
    ]
    current = f"{info.stamp['release']}+{info.stamp['source_sha256']}"
    if result.get("release"):
        line = f"Release you worked from: {_e(result['release'])}"
        if result.get("stale"):
            line += (
                f" (the current release is {_e(current)}: your notebook came from another version)"
            )
        h.append(f"<p>{line}</p>")
    if result.get("reason"):
        h.append(f"<p class='note'>{_e(result['reason'])}</p>")
    for note in result.get("notes", []):
        if note != result.get("reason"):
            h.append(f"<p class='note'>{_e(note)}</p>")
    h.append("<h2>Tests</h2><table><tr><th>test</th><th>what it checks</th><th>score</th></tr>")
    for t in tests:
        cls = "pass" if t["passed"] else "fail"
        h.append(
            f"<tr><td>{_e(t['grade_id'])}</td><td>{_e(_docline(info.visible.get(t['grade_id'], '')))}</td>"
            f"<td class='{cls}'>{t['score']:g} / {t['points']:g}</td></tr>"
        )
    h.append("</table>")
    by_gid = {t["grade_id"]: t for t in tests}
    answers = set(info.answer_ids)
    shown_tests = set()

    def test_section(gid):
        t = by_gid[gid]
        cls = "pass" if t["passed"] else "fail"
        parts = [
            f"<section><h3>Test {_e(gid)} <span class='{cls}'>{t['score']:g} / {t['points']:g}</span></h3>",
            f"<pre>{_e(info.visible.get(gid, ''))}</pre>",
        ]
        if not t["passed"]:
            parts.append(f"<p class='fail'>{_e(t['message'])}</p>")
        parts.append("</section>")
        return "".join(parts)

    if nb is not None:
        for i, cell in enumerate(nb["cells"]):
            gid = test_of(cell, info)
            if gid is not None:
                if gid not in shown_tests and gid in by_gid:
                    shown_tests.add(gid)
                    h.append(test_section(gid))
                continue
            cid = (cell.get("metadata", {}).get("nbgrader") or {}).get("grade_id")
            if cell.get("cell_type") == "code" and cid in answers:
                res = cell_results.get(i)
                h.append(
                    f"<section><h3>Your answer: {_e(cid)}</h3><pre>{_e(_trim(notebooks.source(cell), 20_000))}</pre>"
                )
                out = _text_outputs(res.outputs) if res is not None else ""
                if out.strip():
                    h.append(f"<p>Output:</p><pre>{_e(out)}</pre>")
                h.append("</section>")
    for gid, _ in info.tests:
        if gid not in shown_tests:
            h.append(test_section(gid))
    h.append("</body></html>\n")
    return "\n".join(h)


def write_outputs(
    grading_dir: Path, job, info, nb: dict | None, cell_results: dict, result: dict
) -> None:
    """Write (or replace) the graded copy and the feedback page of one submission."""
    name = f"{info.name}"
    graded = grading_dir / "autograded" / job.student / name / f"{name}.ipynb"
    fb = grading_dir / "feedback" / job.student / name / f"{name}.html"
    if nb is not None:
        notebooks.write(graded_notebook(nb, info, cell_results, result["tests"]), graded)
    elif graded.exists():
        graded.unlink()
    fb.parent.mkdir(parents=True, exist_ok=True)
    fb.write_text(feedback_html(job, info, nb, cell_results, result), encoding="utf-8")
