"""Benchmark: plain serial ``nbgrader autograde`` against ``make grade``, on N copies of a submission.

    python -m autograder.grade.bench [-n 16] [--assignment 01_one_hot_lookup] [--jobs NPROC]

Both grade the same N copies of the demo correct submission in a temporary course (the real
grading/ is never touched). Neither is timed for setting up the gradebook: ``nbgrader
generate_assignment`` runs before either clock starts, exactly once for each. Each command is
timed from its start as a process to its exit, so interpreter and worker start-up count. The
figure that matters is the ratio on this machine; seconds per notebook are printed for both, and
the scores are checked to be full marks everywhere so a fast wrong grader cannot win.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .. import nb, samples
from ..course import COURSE_ID, ROOT, SOLUTIONS, source_notebook
from . import gradebook
from .cli import default_jobs


def _run(cmd: list[str], cwd: Path) -> float:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(
            f"{' '.join(cmd[:4])} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    return seconds


def _course(tmp: Path, assignment: str, n: int) -> tuple[Path, Path]:
    """A temporary course holding one assignment and n copies of its correct submission."""
    course = tmp / "course"
    (course / "solutions").mkdir(parents=True)
    shutil.copytree(SOLUTIONS / assignment, course / "solutions" / assignment)
    (course / "nbgrader_config.py").write_text(nb.temporary_course_config(course), encoding="utf-8")
    notebook = samples.build(assignment, {})
    submitted = course / "grading" / "submitted"
    for i in range(n):
        nb.write(notebook, submitted / f"student{i:03d}" / assignment / f"{assignment}.ipynb")
    return course, submitted


def _scores(course: Path, ours: Path, assignment: str) -> tuple[list, dict]:
    from nbgrader.api import Gradebook

    with Gradebook(
        "sqlite:///" + str(course / "grading" / "gradebook.db"), course_id=COURSE_ID
    ) as gb:
        plain = [s.score for s in gb.assignment_submissions(assignment)]
    totals: dict = {}
    with (ours / "test_report.csv").open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            totals[row["student"]] = totals.get(row["student"], 0.0) + float(row["score"])
    return plain, totals


def bench(n: int, assignment: str, jobs: int, keep: Path | None = None, extra=()) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="bench-grading-"))
    nbgrader = [sys.executable, "-m", "nbgrader"]
    try:
        course, submitted = _course(tmp, assignment, n)
        full = sum(nb.points(nb.read(source_notebook(assignment))).values())
        # Untimed set-up for both: the gradebook learns the assignment.
        _run([*nbgrader, "generate_assignment", assignment, "--force", "--log-level=WARN"], course)
        ours = tmp / "ours"
        gradebook.prepare(ours, [assignment])
        plain_s = _run([*nbgrader, "autograde", assignment, "--force", "--log-level=WARN"], course)
        ours_s = _run(
            [
                sys.executable, "-m", "autograder.grade", "--jobs", str(jobs), "--assignment", assignment,
                "--grading-dir", str(ours), "--submitted", str(submitted), *extra,
            ],
            ROOT,
        )  # fmt: skip
        plain_scores, totals = _scores(course, ours, assignment)  # both must give full marks
        assert len(plain_scores) == n and all(s == full for s in plain_scores), plain_scores
        assert len(totals) == n and all(s == full for s in totals.values()), totals
        if keep:
            shutil.copytree(tmp, keep, dirs_exist_ok=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"n": n, "jobs": jobs, "plain_s": plain_s, "ours_s": ours_s, "ratio": plain_s / ours_s}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("-n", type=int, default=16, help="copies of the correct submission (default 16)")
    p.add_argument("--assignment", default="01_one_hot_lookup")
    p.add_argument("--jobs", type=int, default=default_jobs())
    p.add_argument("--keep", type=Path, help="copy the temporary course here for inspection")
    p.add_argument("--no-sandbox", action="store_true", help="grade without bubblewrap (explicit)")
    args = p.parse_args(argv)
    r = bench(
        args.n, args.assignment, args.jobs, args.keep, ("--no-sandbox",) if args.no_sandbox else ()
    )
    cores = default_jobs()
    print(f"{r['n']} copies of {args.assignment} on {cores} core(s)")
    print(
        f"plain nbgrader autograde (serial): {r['plain_s']:7.1f} s   {r['plain_s'] / r['n']:5.2f} s/notebook"
    )
    print(
        f"make grade (--jobs {r['jobs']}):          {r['ours_s']:7.1f} s   {r['ours_s'] / r['n']:5.2f} s/notebook"
    )
    print(f"ratio: make grade is {r['ratio']:.2f}x faster")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
