"""The gradebook and the reports of ``make grade``; only the main process calls this module.

* :func:`prepare` puts each assignment's structure (notebooks, test cells, points) into the
  gradebook with nbgrader's own ``generate_assignment``, released into a throwaway folder so the
  tracked ``exercises/`` is never rewritten. It is skipped when the gradebook already holds the
  structure of the current source notebook.
* :func:`record` writes every score with nbgrader's Gradebook API from this one process, so SQLite
  never sees two writers; a failing test's message goes into the comment of the answer cell it
  grades.
* :func:`export_grades` writes ``grades.csv`` (nbgrader's own CSV exporter), :func:`write_report`
  ``test_report.csv`` (student, assignment, test, score, max, message, release), and
  :func:`summary` the tables printed at the end.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import warnings
from collections import Counter, defaultdict
from pathlib import Path

from .paths import ROOT, source_notebook

COURSE_ID = "embedding-tables"


def db_url(grading_dir: Path) -> str:
    return "sqlite:///" + str(grading_dir / "gradebook.db")


def _source_sha(assignment: str) -> str:
    return hashlib.sha256(source_notebook(assignment).read_bytes()).hexdigest()


def _nbgrader(args: list[str]) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # alembic
    return subprocess.run(
        [sys.executable, "-m", "nbgrader", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )


def prepare(grading_dir: Path, assignments: list[str]) -> list[str]:
    """Make sure the gradebook knows each assignment; returns what it had to (re)generate."""
    grading_dir.mkdir(parents=True, exist_ok=True)
    marker = grading_dir / ".gradebook_sources.json"
    try:
        known = json.loads(marker.read_text()) if marker.exists() else {}
    except ValueError:
        known = {}
    url = db_url(grading_dir)
    have_db = (grading_dir / "gradebook.db").exists()
    needed = [
        a
        for a in assignments
        if not (have_db and known.get(a) == _source_sha(a) and _has_assignment(url, a))
    ]
    if not needed:
        return []
    # One nbgrader start for all of them when it can (each start costs seconds); else one by one.
    if len(needed) == 1 or _generate("*", url).returncode != 0:
        for a in needed:
            proc = _generate(a, url)
            if (
                proc.returncode != 0
                and "because there are submissions" in proc.stdout + proc.stderr
            ):
                # The test cells changed since the last grading: everyone is regraded anyway.
                _drop_submissions(url, a)
                proc = _generate(a, url)
            if proc.returncode != 0:
                raise RuntimeError(
                    f"nbgrader generate_assignment {a} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
                )
    for a in needed:
        known[a] = _source_sha(a)
    marker.write_text(json.dumps(known, indent=1, sort_keys=True) + "\n")
    return needed


def _generate(assignment: str, url: str) -> subprocess.CompletedProcess:
    """nbgrader generate_assignment into the gradebook, released into a throwaway folder."""
    with tempfile.TemporaryDirectory(prefix="course-gradebook-") as tmp:
        return _nbgrader(
            [
                "generate_assignment", assignment, "--force", "--log-level=WARN", f"--db={url}",
                f"--CourseDirectory.release_directory={tmp}",
            ]
        )  # fmt: skip


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


def record(grading_dir: Path, results: list[dict]) -> int:
    """Write the scores of graded (and bad: zeros) submissions; returns how many were written."""
    from nbgrader.api import Gradebook
    from nbgrader.utils import parse_utc

    written = 0
    # nbgrader's add_submission makes SQLAlchemy warn about its own autoflush; harmless.
    warnings.filterwarnings("ignore", message=".*not in session.*")
    with Gradebook(db_url(grading_dir), course_id=COURSE_ID) as gb:
        for r in sorted(results, key=lambda r: (r["assignment"], r["student"])):
            if r["status"] == "error":
                continue  # grading itself failed: keep whatever the gradebook held
            a, student = r["assignment"], r["student"]
            gb.update_or_create_student(student)
            kwargs = {}
            if r.get("timestamp"):
                try:
                    parse_utc(r["timestamp"])
                    kwargs["timestamp"] = r["timestamp"]
                except Exception:  # noqa: BLE001 - an odd timestamp.txt is not worth failing over
                    pass
            gb.update_or_create_submission(a, student, **kwargs)
            comments = defaultdict(list)
            for t in r["tests"]:
                grade = gb.find_grade(t["grade_id"], a, a, student)
                grade.auto_score = max(0.0, min(float(t["score"]), float(grade.max_score)))
                grade.needs_manual_grade = grade.manual_score is not None
                if not t["passed"]:
                    comments[t["function"]].append(f"{t['grade_id']}: {t['message']}")
            for cell in gb.find_notebook(a, a).solution_cells:
                comment = gb.find_comment(cell.name, a, a, student)
                lines = comments.get(cell.name, [])
                if r["status"] == "bad" and r.get("reason"):
                    lines = [f"not graded: {r['reason']}"]
                comment.auto_comment = "\n".join(lines) if lines else None
            gb.db.commit()
            written += 1
    return written


def export_grades(grading_dir: Path) -> Path:
    """grades.csv: nbgrader's own CSV export of the whole gradebook."""
    from nbgrader.api import Gradebook
    from nbgrader.plugins.export import CsvExportPlugin

    grades = grading_dir / "grades.csv"
    with Gradebook(db_url(grading_dir), course_id=COURSE_ID) as gb:
        CsvExportPlugin(to=str(grades)).export(gb)
    return grades


def write_report(grading_dir: Path, results: list[dict]) -> Path:
    """test_report.csv: one row per test cell of every submission graded in this run."""
    grading_dir.mkdir(parents=True, exist_ok=True)
    report = grading_dir / "test_report.csv"
    with report.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "student",
                "assignment",
                "test",
                "score",
                "max",
                "message",
                "release",
                "current_release",
                "status",
            ]
        )
        for r in sorted(results, key=lambda r: (r["assignment"], r["student"])):
            for t in r["tests"]:
                w.writerow(
                    [
                        r["student"], r["assignment"], t["grade_id"], f"{t['score']:g}", f"{t['points']:g}",
                        t["message"], r.get("release", ""), "no" if r.get("stale") else "yes", r["status"],
                    ]
                )  # fmt: skip
    return report


def _short(msg: str, n: int = 90) -> str:
    line = " ".join(msg.split())
    return line if len(line) <= n else line[: n - 3] + "..."


def summary(results: list[dict]) -> str:
    """The tables printed at the end of a run."""
    lines = []
    by_a = defaultdict(list)
    for r in results:
        by_a[r["assignment"]].append(r)
    head = f"{'assignment':<28} {'graded':>6} {'mean':>7} {'max':>5} {'full':>5} {'zero':>5} {'bad':>4} {'error':>5}"
    lines += ["", head, "-" * len(head)]
    for a in sorted(by_a):
        rs = by_a[a]
        ok = [r for r in rs if r["status"] != "error"]
        scores = [sum(t["score"] for t in r["tests"]) for r in ok]
        total = sum(t["points"] for t in rs[0]["tests"]) if rs[0]["tests"] else 0
        mean = sum(scores) / len(scores) if scores else 0.0
        lines.append(
            f"{a:<28} {len(ok):>6} {mean:>7.2f} {total:>5g} {sum(s == total for s in scores):>5} "
            f"{sum(s == 0 for s in scores):>5} {sum(r['status'] == 'bad' for r in rs):>4} "
            f"{sum(r['status'] == 'error' for r in rs):>5}"
        )
    fails = Counter()
    seen = Counter()
    example = defaultdict(Counter)
    for r in results:
        if r["status"] == "error":
            continue
        for t in r["tests"]:
            key = (r["assignment"], t["grade_id"])
            seen[key] += 1
            if not t["passed"]:
                fails[key] += 1
                example[key][_short(t["message"], 70)] += 1
    if fails:
        lines += ["", "Tests the class fails most:"]
        for (a, gid), n in fails.most_common(12):
            msg, k = example[(a, gid)].most_common(1)[0]
            lines.append(f"  {n:>4}/{seen[(a, gid)]:<4} {a}/{gid}  (most common, {k}x: {msg})")
    bad = [r for r in results if r["status"] == "bad"]
    if bad:
        lines += ["", "Could not grade (zeros recorded, with the reason):"]
        for r in sorted(bad, key=lambda r: (r["assignment"], r["student"])):
            lines.append(f"  {r['student']}/{r['assignment']}: {_short(r['reason'] or '', 150)}")
    err = [r for r in results if r["status"] == "error"]
    if err:
        lines += ["", "GRADING FAILED for (nothing recorded; rerun after fixing the cause):"]
        for r in sorted(err, key=lambda r: (r["assignment"], r["student"])):
            lines.append(f"  {r['student']}/{r['assignment']}: {_short(r['reason'] or '', 200)}")
    stale = [r for r in results if r.get("stale") and r["status"] != "error"]
    if stale:
        lines += [
            "",
            f"{len(stale)} submission(s) came from another release than the current one (see test_report.csv).",
        ]
    return "\n".join(lines)
