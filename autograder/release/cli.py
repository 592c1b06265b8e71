"""`make release`: regenerate exercises/ from solutions/ (and the other one-way publishing steps).

python -m autograder.release                 # every assignment -> exercises/, and each chapter
                                             # page's notebook -> book/NN_slug.ipynb
python -m autograder.release --out DIR       # into DIR instead (tests compare it with exercises/)
python -m autograder.release --solutions     # after the deadline: grading/released_solutions/
python -m autograder.release --student-repo DIR   # book + exercises, nothing secret
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..course import EXERCISES, GRADING, ROOT, assignments
from . import history, points
from .generate import generate
from .pages import write_pages
from .solutions import release_solutions
from .student import student_repo


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("assignments", nargs="*", help="default: every assignment in solutions/")
    p.add_argument("--out", type=Path, default=EXERCISES)
    p.add_argument(
        "--solutions", action="store_true", help="release solutions (after the deadline)"
    )
    p.add_argument("--student-repo", type=Path, help="write the student-facing copy here")
    p.add_argument(
        "--grading-dir",
        type=Path,
        default=GRADING,
        help="--solutions: into <this>/released_solutions",
    )
    args = p.parse_args(argv)
    if args.solutions:
        os.environ["COURSE_GRADING_DIR"] = str(args.grading_dir.resolve())  # nbgrader's too
        out = release_solutions(args.assignments or None, args.grading_dir.resolve())
        print("solutions released into", out)
        return 0
    if args.student_repo:
        print("student-facing copy written to", student_repo(args.student_repo.resolve()))
        return 0
    for path in generate(args.out.resolve(), args.assignments or None):
        print("released", path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    if args.out.resolve() == EXERCISES.resolve():  # a real release, not a test's scratch copy
        for label in history.record(args.assignments or assignments()):
            print("new release recorded in", history.HISTORY.relative_to(ROOT), "-", label)
        if points.update():
            print("points table updated in", points.PAGE.relative_to(ROOT))
        for path in write_pages():
            print("page notebook", path.relative_to(ROOT))
    return 0
