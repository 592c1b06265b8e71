"""The class's numbers, per assignment, from ``<grading>/runs/<assignment>.json``."""

from __future__ import annotations

import json
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from ..grade.late import late_text
from ..grade.report import RUNS
from ..grade.results import BAD, ERROR
from .sections import section

UNRECOGNISED = "(not recognised)"  # a failed test whose judge named no mistake


@dataclass
class MistakeRow:
    mistake: str
    students: int
    tests: list
    example: str
    link: str | None


@dataclass
class Assignment:
    name: str
    max_score: float
    scores: dict  # student -> score (graded and bad; errors left out)
    tests: list  # [(grade_id, function, points, passed, judged)]
    mistakes: list  # [MistakeRow], most students first
    stale: list  # [(student, release)]
    late: list  # [(student, text)]
    ungradable: list  # [(student, status, reason)]
    runs: list
    worker_seconds: float
    counts: dict = field(default_factory=dict)


class ReportError(Exception):
    """Nothing to report on, with what to do."""


def load(grading_dir: Path) -> list[dict]:
    folder = grading_dir / RUNS
    paths = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if not paths:
        raise ReportError(
            f"no grading results in {folder}: run `make grade GRADING={grading_dir}` first"
        )
    out = []
    for p in paths:
        try:
            out.append(json.loads(p.read_text(encoding="utf-8")))
        except ValueError as exc:
            raise ReportError(f"{p} cannot be read ({exc}): grade that assignment again") from exc
    return out


def _tests(subs: list[dict]) -> list[tuple]:
    rows, order = {}, []
    for s in subs:
        for t in s["tests"]:
            key = t["grade_id"]
            if key not in rows:
                order.append(key)
                rows[key] = [key, t["function"], t["points"], 0, 0]
            if s["status"] == BAD:  # the notebook was never run: its zeros judge nothing
                continue
            rows[key][3] += bool(t["passed"])
            rows[key][4] += 1
    return [tuple(rows[k]) for k in order]


def _mistakes(name: str, subs: list[dict]) -> list[MistakeRow]:
    students, tests, example, where = defaultdict(set), defaultdict(set), {}, defaultdict(Counter)
    for s in subs:
        if s["status"] != "graded":
            continue
        for t in s["tests"]:
            if t["passed"]:
                continue
            for m in [m for m in t.get("mistake", "").split(";") if m] or [UNRECOGNISED]:
                students[m].add(s["student"])
                tests[m].add(t["grade_id"])
                where[m][t["function"]] += 1
                example.setdefault(m, " ".join(t.get("message", "").split()))
    rows = []
    for m in students:
        function = where[m].most_common(1)[0][0]
        link = None if m == UNRECOGNISED else section(name, function, m)
        rows.append(MistakeRow(m, len(students[m]), sorted(tests[m]), example[m], link))
    return sorted(rows, key=lambda r: (r.mistake == UNRECOGNISED, -r.students, r.mistake))


def _late(s: dict) -> str:
    when = f"{late_text(s['seconds_late'])} after {s['due']}" if s["seconds_late"] > 0 else ""
    flag = "marked late by the LMS" if s.get("lms_late") else ""
    pen = s.get("late_penalty")
    penalty = f"penalty {pen:g} of {s['score']:g}" if pen else "no penalty"
    return "; ".join(x for x in (when, flag, penalty) if x)


def summarise(data: dict) -> Assignment:
    subs = list(data["submissions"].values())
    name = data["assignment"]
    scored = {s["student"]: s["score"] for s in subs if s["status"] != ERROR}
    return Assignment(
        name=name,
        max_score=max((s["max_score"] for s in subs), default=0.0),
        scores=scored,
        tests=_tests(subs),
        mistakes=_mistakes(name, subs),
        stale=[(s["student"], s["release"]) for s in subs if s["stale"]],
        late=[(s["student"], _late(s)) for s in subs if s["seconds_late"] > 0 or s["lms_late"]],
        ungradable=[(s["student"], s["status"], s["reason"] or "") for s in subs if s["status"] in (BAD, ERROR)],
        runs=data.get("runs", []),
        worker_seconds=sum(s["seconds"] for s in subs),
        counts=_counts(subs, scored),
    )  # fmt: skip


def _counts(subs: list[dict], scored: dict) -> dict:
    vals = list(scored.values())
    top = max((s["max_score"] for s in subs), default=0.0)
    return {
        "submissions": len(subs),
        "graded": sum(s["status"] == "graded" for s in subs),
        "bad": sum(s["status"] == BAD for s in subs),
        "error": sum(s["status"] == ERROR for s in subs),
        "mean": statistics.fmean(vals) if vals else 0.0,
        "median": statistics.median(vals) if vals else 0.0,
        "full": sum(v == top for v in vals),
        "zero": sum(v == 0 for v in vals),
    }
