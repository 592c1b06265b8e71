"""``python -m autograder.export --lms canvas|moodle --roster FILE [--map FILE] ...``

Writes ``<out>/canvas.csv`` or ``<out>/moodle.csv`` (default ``grading/export/``). Exit status 0
when the file is written, also when some graded students have no roster row (they are listed on
stderr, with how many); 2 when an input is unusable (no gradebook, not a roster of that LMS, an
unknown assignment, two LMS columns for one assignment).
"""

import argparse
import sys
from pathlib import Path

from autograder import course
from autograder.export.canvas import export_canvas
from autograder.export.csvio import ExportError, read_table, write_table
from autograder.export.gradebook import read_grades
from autograder.export.moodle import export_moodle
from autograder.export.options import Options
from autograder.export.report import Report, print_report
from autograder.export.roster import read_map

EXPORTERS = {"canvas": export_canvas, "moodle": export_moodle}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m autograder.export",
        description="Write the LMS's grade-import CSV from nbgrader's gradebook.",
    )
    p.add_argument("--lms", required=True, choices=("canvas", "moodle"))
    p.add_argument(
        "--roster",
        required=True,
        type=Path,
        help="the LMS's own grade export (Canvas: Grades > Export; Moodle: Export > "
        "Plain text file)",
    )
    p.add_argument("--map", type=Path, help="CSV with two columns: nbgrader id, LMS login")
    p.add_argument(
        "--assignment",
        action="append",
        default=[],
        help="export only this assignment (repeatable; default: every graded one)",
    )
    p.add_argument(
        "--grading-dir",
        type=Path,
        default=course.GRADING,
        help="where gradebook.db is (default grading/)",
    )
    p.add_argument("--out", type=Path, help="output folder (default <grading-dir>/export)")
    p.add_argument(
        "--clear-missing",
        action="store_true",
        help="a student with no submission gets no grade (the import clears theirs); default: "
        "their grade in the LMS is kept",
    )
    p.add_argument(
        "--set-points-possible",
        action="store_true",
        help="Canvas: write the gradebook's maximum as Points Possible (default: as Canvas has it)",
    )
    p.add_argument(
        "--scale",
        action="store_true",
        help="Canvas: scale raw points to the assignment's Points Possible",
    )
    p.add_argument("--scale-to", type=float, metavar="N", help="scale raw points to N points")
    return p.parse_args(argv)


def run(args: argparse.Namespace) -> tuple[Path, Report, list[str]]:
    """Read the gradebook, the roster and the mapping; write the LMS file."""
    roster = read_table(args.roster)
    if not roster.header:
        raise ExportError(f"{args.roster} is empty")
    mapping = read_map(args.map) if args.map else {}
    grades, skipped = read_grades(args.grading_dir / "gradebook.db", args.assignment or None)
    if not grades.scores:
        raise ExportError("the gradebook has no submission to export: run `make grade` first")
    opts = Options(args.clear_missing, args.set_points_possible, args.scale, args.scale_to)
    if opts.set_points_possible and (opts.scale or opts.scale_to is not None):
        raise ExportError(
            "--set-points-possible with --scale: choose one (scale, or change Canvas)"
        )
    table, report = EXPORTERS[args.lms](grades, roster, mapping, opts)
    out = (args.out or args.grading_dir / "export") / f"{args.lms}.csv"
    write_table(out, table)
    return out, report, skipped


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        out, report, skipped = run(args)
    except ExportError as e:
        print(f"export: {e}", file=sys.stderr)
        return 2
    print_report(report, out, skipped)
    return 0


if __name__ == "__main__":
    sys.exit(main())
