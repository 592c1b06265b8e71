"""``python -m autograder.gradescope build A [--visibility V] [--out FILE]`` writes the zip;
``python -m autograder.gradescope test A [--zip FILE] [--notebook NB ...]`` grades with the built zip
here as Gradescope would (``make gradescope-test``). Inside Gradescope, ``run_autograder`` runs
``python -m autograder.gradescope.runner``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..course import GRADING


def parse(argv):
    p = argparse.ArgumentParser(prog="python -m autograder.gradescope", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="write grading/gradescope/ASSIGNMENT.zip")
    b.add_argument("assignment")
    b.add_argument(
        "--visibility",
        default="visible",
        help="when students see each test: visible (default), after_due_date, after_published, "
        "hidden",
    )
    b.add_argument("--out", type=Path, default=None, help="write the zip here instead")
    t = sub.add_parser("test", help="grade notebooks with the built zip as Gradescope would")
    t.add_argument("assignment")
    t.add_argument("--zip", type=Path, default=None, help="default grading/gradescope/A.zip")
    t.add_argument(
        "--notebook",
        type=Path,
        action="append",
        default=[],
        help="a notebook to grade (repeatable); default: a correct one, a classic mistake, the "
        "stub and another assignment's",
    )
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse(argv)
    if args.command == "test":
        from .trial import main as trial

        zip_path = args.zip or GRADING / "gradescope" / f"{args.assignment}.zip"
        return trial(args.assignment, zip_path, args.notebook)
    from .build import BuildError, build

    try:
        out = build(args.assignment, args.visibility, args.out)
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {out}")
    print("WARNING: this zip holds the reference solutions. Upload it to Gradescope only; never")
    print("publish it, commit it to a public repository, or hand it to students.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
