"""The instructor's reports: ``test_report.csv`` and the tables printed at the end of a run."""

from __future__ import annotations

import csv
import json
from collections import Counter, defaultdict
from dataclasses import asdict
from pathlib import Path

from .late import late_text
from .results import BAD, ERROR, SubmissionResult

REPORT_HEADER = [
    "student", "assignment", "test", "score", "max", "message", "mistake", "release",
    "current_release", "status", "sandboxed",
]  # fmt: skip


def _by_student(results: list[SubmissionResult]) -> list[SubmissionResult]:
    return sorted(results, key=lambda r: (r.assignment, r.student))


def write_report(grading_dir: Path, results: list[SubmissionResult]) -> Path:
    """test_report.csv: one row per test cell of every submission graded in this run."""
    grading_dir.mkdir(parents=True, exist_ok=True)
    report = grading_dir / "test_report.csv"
    with report.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(REPORT_HEADER)
        for r in _by_student(results):
            for t in r.tests:
                w.writerow(
                    [
                        r.student, r.assignment, t.grade_id, f"{t.score:g}", f"{t.points:g}", t.message,
                        t.mistake, r.release, "no" if r.stale else "yes", r.status,
                        "yes" if r.sandboxed else "NO",
                    ]
                )  # fmt: skip
    return report


def _short(msg: str, n: int = 90) -> str:
    line = " ".join(msg.split())
    return line if len(line) <= n else line[: n - 3] + "..."


def _table(results: list[SubmissionResult]) -> list[str]:
    by_a = defaultdict(list)
    for r in results:
        by_a[r.assignment].append(r)
    head = f"{'assignment':<28} {'graded':>6} {'mean':>7} {'max':>5} {'full':>5} {'zero':>5} {'bad':>4} {'error':>5}"
    lines = ["", head, "-" * len(head)]
    for a in sorted(by_a):
        rs = by_a[a]
        ok = [r for r in rs if r.status != ERROR]
        scores = [r.score for r in ok]
        total = rs[0].max_score
        mean = sum(scores) / len(scores) if scores else 0.0
        lines.append(
            f"{a:<28} {len(ok):>6} {mean:>7.2f} {total:>5g} {sum(s == total for s in scores):>5} "
            f"{sum(s == 0 for s in scores):>5} {sum(r.status == BAD for r in rs):>4} "
            f"{sum(r.status == ERROR for r in rs):>5}"
        )
    return lines


def _most_failed(results: list[SubmissionResult]) -> list[str]:
    fails, seen, example = Counter(), Counter(), defaultdict(Counter)
    for r in results:
        if r.status == ERROR:
            continue
        for t in r.tests:
            key = (r.assignment, t.grade_id)
            seen[key] += 1
            if not t.passed:
                fails[key] += 1
                example[key][_short(t.message, 70)] += 1
    if not fails:
        return []
    lines = ["", "Tests the class fails most:"]
    for (a, gid), n in fails.most_common(12):
        msg, k = example[(a, gid)].most_common(1)[0]
        lines.append(f"  {n:>4}/{seen[(a, gid)]:<4} {a}/{gid}  (most common, {k}x: {msg})")
    return lines


def _listed(results, status: str, title: str, width: int) -> list[str]:
    rows = [r for r in _by_student(results) if r.status == status]
    if not rows:
        return []
    return ["", title] + [
        f"  {r.student}/{r.assignment}: {_short(r.reason or '', width)}" for r in rows
    ]


def summary(results: list[SubmissionResult]) -> str:
    """The tables printed at the end of a run."""
    lines = _table(results) + _most_failed(results)
    lines += _listed(results, BAD, "Could not grade (zeros recorded, with the reason):", 150)
    lines += _listed(
        results, ERROR, "GRADING FAILED for (nothing recorded; rerun after fixing the cause):", 200
    )
    stale = [r for r in results if r.stale and r.status != ERROR]
    if stale:
        lines += [
            "",
            f"{len(stale)} submission(s) came from another release than the current one (see test_report.csv).",
        ]
    return "\n".join(lines)


def late_lines(results: list[SubmissionResult], policy: str) -> str:
    """Every submission that was late, or that the LMS marked late, with its penalty."""
    rows = [
        r for r in _by_student(results) if (r.seconds_late > 0 or r.lms_late) and r.status != ERROR
    ]
    lines = [
        "",
        f"Late submissions ({len(rows)}; due dates from the gradebook, penalties by {policy}):",
    ]
    for r in rows:
        when = (
            f"{late_text(r.seconds_late)} after {r.due}"
            if r.seconds_late > 0
            else "no due date in the gradebook"
        )
        flag = ", marked late by the LMS" if r.lms_late else ""
        pen = f"penalty {r.late_penalty:g} of {r.score:g}" if r.late_penalty else "no penalty"
        lines.append(f"  {r.student}/{r.assignment}: {when}{flag}: {pen}")
    return "\n".join(lines)


RUNS = "runs"  # <grading>/runs/<assignment>.json: what `make report` reads (autograder/report)


def _record(r: SubmissionResult) -> dict:
    d = asdict(r)
    d.pop("trace", None)  # a grader traceback stays in the terminal
    d.pop("phases", None)  # timings: summed per run below
    d["score"], d["max_score"] = r.score, r.max_score
    return d


def write_runs(grading_dir: Path, results: list[SubmissionResult], run: dict) -> list[Path]:
    """One file per assignment graded: every submission's latest result (a later run of some
    students replaces theirs, keeps the others') and the list of runs with their timings."""
    folder = grading_dir / RUNS
    folder.mkdir(parents=True, exist_ok=True)
    by_a = defaultdict(list)
    for r in results:
        by_a[r.assignment].append(r)
    written = []
    for a, rs in sorted(by_a.items()):
        path = folder / f"{a}.json"
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            old = {}
        subs = old.get("submissions", {}) if isinstance(old, dict) else {}
        subs.update({r.student: _record(r) for r in rs})
        runs = old.get("runs", []) if isinstance(old, dict) else []
        phases: dict = {}
        for r in rs:
            for k, v in r.phases.items():
                phases[k] = phases.get(k, 0.0) + v
        runs.append({
            **run, "notebooks": len(rs), "worker_seconds": sum(r.seconds for r in rs),
            "phases": dict(sorted(phases.items())),
        })  # fmt: skip
        data = {"assignment": a, "submissions": dict(sorted(subs.items())), "runs": runs}
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
        tmp.replace(path)
        written.append(path)
    return written
