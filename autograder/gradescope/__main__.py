"""``python -m autograder.gradescope build A [--visibility V] [--out FILE]`` writes the zip;
``python -m autograder.gradescope run`` is what ``run_autograder`` calls inside Gradescope."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


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
    sub.add_parser("run", help="grade $GRADESCOPE_ROOT/submission (what run_autograder calls)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse(argv)
    if args.command == "run":
        from .runner import run

        return run()
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
