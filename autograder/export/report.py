"""What an export did, said on the console: counts on stdout, every problem by name on stderr."""

import sys
from collections import defaultdict
from dataclasses import dataclass, field


@dataclass
class Report:
    """Counts and names gathered while filling the LMS file."""

    lms: str
    assignments: list[str] = field(default_factory=list)
    roster_students: int = 0
    matched: int = 0
    unmatched: dict[str, str] = field(default_factory=dict)  # display name -> why
    new_columns: list[str] = field(default_factory=list)
    empty: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # per assignment
    cleared: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    kept: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # grades kept
    left_out: int = 0  # roster rows not in the file (Moodle: nothing of theirs to import)
    notes: list[str] = field(default_factory=list)


def print_report(report: Report, out_path, skipped: list[str]) -> None:
    """Summary on stdout; unmatched students, cleared grades and notes on stderr."""
    err = sys.stderr
    print(
        f"wrote {out_path}: {len(report.assignments)} assignment(s), "
        f"{report.roster_students} roster student(s), {report.matched} graded student(s) matched"
    )
    for name in report.assignments:
        cleared = len(report.cleared.get(name, []))
        what = (
            f"{cleared} grade(s) cleared, as asked"
            if cleared
            else f"left as the roster has it; {report.kept[name]} hold a grade, kept"
        )
        print(
            f"  {name}: {report.empty[name]} roster student(s) without a matched submission ({what})"
        )
    if report.left_out:
        print(
            f"  {report.left_out} roster student(s) left out: no submission here, their grades stay as they are"
        )
    for name in skipped:
        print(f"  {name}: no submission in the gradebook, not exported")
    for column in report.new_columns:
        print(
            f"  new column {column!r}: on import {report.lms} creates a new assignment for it",
            file=err,
        )
    for name, rows in report.cleared.items():
        print(
            f"warning: {name}: {len(rows)} roster student(s) had a grade in the roster file but "
            f"no submission here; their cell now has no grade (--clear-missing), and the import "
            f"clears theirs (check the LMS's import preview): {', '.join(rows)}",
            file=err,
        )
    for note in report.notes:
        print(f"note: {note}", file=err)
    if report.unmatched:
        print(
            f"{len(report.unmatched)} graded student(s) have no row in the roster and are NOT "
            "in the file:",
            file=err,
        )
        for name, why in sorted(report.unmatched.items()):
            print(f"  {name}: {why}", file=err)
