"""Benchmark: plain serial ``nbgrader autograde`` against ``make grade``, on N copies of a submission.

    python -m autograder.bench_grading [-n 16] [--assignment 01_one_hot_lookup] [--jobs NPROC]

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

from . import grading_book, notebooks, samples
from .grade import default_jobs
from .paths import ROOT, SOLUTIONS, source_notebook


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


def bench(n: int, assignment: str, jobs: int, keep: Path | None = None) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="bench-grading-"))
    try:
        course = tmp / "course"
        (course / "solutions").mkdir(parents=True)
        shutil.copytree(SOLUTIONS / assignment, course / "solutions" / assignment)
        (course / "nbgrader_config.py").write_text(
            "c = get_config()  # noqa: F821\n"
            f"load_subconfig({str(ROOT / 'nbgrader_config.py')!r})  # noqa: F821\n"
            f"c.CourseDirectory.root = {str(course)!r}\n"
            f"c.CourseDirectory.db_url = {'sqlite:///' + str(course / 'grading' / 'gradebook.db')!r}\n",
            encoding="utf-8",
        )
        nb = samples.build(assignment, {})
        submitted = course / "grading" / "submitted"
        for i in range(n):
            notebooks.write(nb, submitted / f"student{i:03d}" / assignment / f"{assignment}.ipynb")
        full = sum(notebooks.points(notebooks.read(source_notebook(assignment))).values())

        # Untimed set-up for both: the gradebook learns the assignment.
        _run(
            [
                sys.executable,
                "-m",
                "nbgrader",
                "generate_assignment",
                assignment,
                "--force",
                "--log-level=WARN",
            ],
            course,
        )
        ours = tmp / "ours"
        grading_book.prepare(ours, [assignment])

        plain_s = _run(
            [
                sys.executable,
                "-m",
                "nbgrader",
                "autograde",
                assignment,
                "--force",
                "--log-level=WARN",
            ],
            course,
        )
        ours_s = _run(
            [
                sys.executable, "-m", "autograder.grade", "--jobs", str(jobs), "--assignment", assignment,
                "--grading-dir", str(ours), "--submitted", str(submitted),
            ],
            ROOT,
        )  # fmt: skip

        # Both must have given full marks to every copy.
        from nbgrader.api import Gradebook

        with Gradebook(
            "sqlite:///" + str(course / "grading" / "gradebook.db"),
            course_id=grading_book.COURSE_ID,
        ) as gb:
            plain_scores = [s.score for s in gb.assignment_submissions(assignment)]
        with (ours / "test_report.csv").open(encoding="utf-8") as f:
            totals: dict = {}
            for row in csv.DictReader(f):
                totals[row["student"]] = totals.get(row["student"], 0.0) + float(row["score"])
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
    args = p.parse_args(argv)
    r = bench(args.n, args.assignment, args.jobs, args.keep)
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
