"""The report's numbers as CSV, beside the page: one file per table, every assignment in each."""

from __future__ import annotations

import csv
from pathlib import Path

from . import similarity

SIMILARITY_HEADER = ["assignment", "student_a", "student_b", "similarity", "flagged"]


def _write(path: Path, header: list[str], rows: list) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def write_all(out: Path, summaries: list, sims: dict) -> list[Path]:
    """summary.csv, scores.csv, tests.csv, mistakes.csv, attention.csv, similarity.csv,
    too_short.csv."""
    keys = ["submissions", "graded", "bad", "error", "mean", "median", "full", "zero"]
    summary = [
        [a.name, f"{a.max_score:g}", *(f"{a.counts[k]:.4g}" for k in keys), len(a.stale),
         len(a.late), f"{a.worker_seconds:.1f}", f"{sum(r['wall_s'] for r in a.runs):.1f}"]
        for a in summaries
    ]  # fmt: skip
    scores = [
        [a.name, s, f"{v:g}", f"{a.max_score:g}"] for a in summaries for s, v in a.scores.items()
    ]
    tests = [
        [a.name, g, f, f"{p:g}", n, judged, f"{n / judged:.3f}" if judged else ""]
        for a in summaries
        for g, f, p, n, judged in a.tests
    ]
    mistakes = [
        [a.name, i, m.mistake, m.students, ";".join(m.tests), m.link or "", m.example]
        for a in summaries
        for i, m in enumerate(a.mistakes, 1)
    ]
    attention = [[a.name, s, "stale", f"release {r}"] for a in summaries for s, r in a.stale]
    attention += [[a.name, s, "late", t] for a in summaries for s, t in a.late]
    attention += [[a.name, s, st, why] for a in summaries for s, st, why in a.ungradable]
    pairs = [
        [a, p.student_a, p.student_b, f"{p.similarity:.3f}", "yes" if p.flagged else "no"]
        for a, (ps, _, _) in sims.items()
        for p in ps
    ]
    short = [[a, s, ";".join(fs)] for a, (_, sh, _) in sims.items() for s, fs in sorted(sh.items())]
    return [
        _write(out / "summary.csv", ["assignment", "max", *keys, "stale", "late", "worker_seconds", "wall_seconds"], summary),
        _write(out / "scores.csv", ["assignment", "student", "score", "max"], scores),
        _write(out / "tests.csv", ["assignment", "test", "function", "points", "passed", "judged", "pass_rate"], tests),
        _write(out / "mistakes.csv", ["assignment", "rank", "mistake", "students", "tests", "section", "message"], mistakes),
        _write(out / "attention.csv", ["assignment", "student", "kind", "detail"], attention),
        _write(out / "similarity.csv", SIMILARITY_HEADER, pairs),
        _write(out / "too_short.csv", ["assignment", "student", f"functions under {similarity.MIN_TOKENS} tokens"], short),
    ]  # fmt: skip
