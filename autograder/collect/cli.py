"""``python -m autograder.collect --lms canvas|moodle --zip FILE --roster FILE --assignment A``

(``make collect LMS=canvas ZIP=... ROSTER=... ASSIGNMENT=A``.) Reads the LMS's submissions zip
and writes each student's notebook to ``<grading>/submitted/<id>/<A>/<A>.ipynb`` (default
``grading/``), with ``lms.json`` and, for a late submission when the gradebook has a due date,
``timestamp.txt``. Prints what it placed and every file it left out with the reason, and writes
the same list to ``<grading>/collected/<A>.csv``.

Exit status 0 when it ran (also when some files could not be placed: they are listed); 1 when a
file could not be written; 2 when an input is unusable (not a zip, not that LMS's roster, an
unknown assignment, a grading folder inside the repository that git does not ignore).
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from ..course import COURSE_ID, GRADING, ROOT, assignments
from ..export.csvio import ExportError, read_table
from . import archive, canvas, moodle, place

READERS = {"canvas": canvas, "moodle": moodle}


class CollectError(Exception):
    """An unusable input: reported, exit status 2."""


@dataclass
class Outcome:
    choice: place.Choice
    status: dict[str, str] = field(default_factory=dict)  # student id -> new/replaced/unchanged
    roster_size: int = 0
    due: object = None
    twins: list[str] = field(default_factory=list)  # also collected under the LMS's own id


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m autograder.collect", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--lms", required=True, choices=sorted(READERS))
    p.add_argument("--zip", required=True, type=Path, help="the LMS's submissions download")
    p.add_argument(
        "--roster",
        required=True,
        type=Path,
        help="Canvas: the gradebook export (Grades > Export); Moodle: the assignment's grading "
        "worksheet",
    )
    p.add_argument(
        "--assignment", required=True, help="the nbgrader assignment, e.g. 01_one_hot_lookup"
    )
    p.add_argument("--grading-dir", type=Path, default=GRADING, help="default grading/")
    return p.parse_args(argv)


def check_grading_folder(grading: Path) -> None:
    """Student work must not land where one `git add` puts it into the course repository."""
    try:
        rel = grading.relative_to(ROOT.resolve())
    except ValueError:
        return  # outside the repository
    try:
        proc = subprocess.run(
            ["git", "check-ignore", "-q", str(rel / "submitted")], cwd=ROOT, capture_output=True
        )
    except FileNotFoundError:
        return  # no git here: nothing to add it to
    if proc.returncode == 1:
        raise CollectError(
            f"{grading} is inside the course repository and git does not ignore it: student work "
            "there is one `git add` away from the repository. Add it to .gitignore, or choose a "
            "folder under grading/ or outside the repository."
        )


def due_date(grading: Path, assignment: str):
    """The assignment's due date in the gradebook (naive UTC, as nbgrader stores it), or None."""
    db = grading / "gradebook.db"
    if not db.is_file():
        return None
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(f"sqlite:///{db}", course_id=COURSE_ID) as gb:
        try:
            return gb.find_assignment(assignment).duedate
        except MissingEntry:
            return None


def read_inputs(args) -> tuple[dict, list, list]:
    """The roster's students, the zip's members and its refused entries."""
    if args.assignment not in assignments():
        raise CollectError(
            f"no such assignment: {args.assignment} (known: {', '.join(assignments())})"
        )
    try:
        students = READERS[args.lms].roster_students(read_table(args.roster))
        members, refused = archive.members(args.zip)
    except (ExportError, ValueError, archive.ArchiveError) as e:
        raise CollectError(str(e)) from e
    if not students:
        raise CollectError(f"{args.roster}: no student rows")
    return students, members, refused


def collect(args) -> Outcome:
    grading = args.grading_dir.resolve()
    check_grading_folder(grading)
    students, members, refused = read_inputs(args)
    reader, found = READERS[args.lms], []
    for m in members:
        f = reader.identify(m.parts, students)
        f.member = m
        found.append(f)
    choice = place.choose(found, args.assignment, set(assignments()))
    choice.problems += [(name, f"refused: {why}") for name, why in refused]
    out = Outcome(choice, roster_size=len(students), due=due_date(grading, args.assignment))
    grading.mkdir(parents=True, exist_ok=True)
    lms = {"lms": args.lms, "zip": args.zip.name}
    for sid, f in sorted(choice.chosen.items()):
        try:
            data = archive.read_member(args.zip, f.member)
        except (ValueError, zipfile.BadZipFile, OSError) as e:
            choice.problems.append((f"{f.student.name} ({sid}): {f.display}", f"unreadable: {e}"))
            continue
        out.status[sid] = place.write(grading, args.assignment, f, data, lms, out.due)
    for user_id in students:  # nbgrader's zip_collect names folders by the LMS's own id
        if (
            user_id not in out.status
            and (grading / "submitted" / user_id / args.assignment).is_dir()
        ):
            out.twins.append(user_id)
    write_manifest(grading / "collected" / f"{args.assignment}.csv", out)
    return out


def write_manifest(path: Path, out: Outcome) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["student", "name", "file", "late", "status", "why"])
        for sid, f in sorted(out.choice.chosen.items()):
            if sid in out.status:
                w.writerow(
                    [sid, f.student.name, f.display, "yes" if f.late else "", out.status[sid], ""]
                )
        for who, why in out.choice.problems:
            w.writerow(["", who, "", "", "not placed", why])
        for who, why in out.choice.skipped:
            w.writerow(["", who, "", "", "skipped", why])


def late_line(out: Outcome, lms: str) -> str:
    late = sum(1 for sid, f in out.choice.chosen.items() if f.late and sid in out.status)
    if not late:
        return f"  late: none marked late by {lms}"
    if out.due is None:
        return (
            f"  late: {late} marked late by {lms}, recorded in lms.json only: the gradebook has "
            "no due date for this assignment, so nbgrader deducts nothing (README: due dates)"
        )
    return (
        f"  late: {late} marked late by {lms}: timestamp.txt one second after the due date "
        f"({out.due:%Y-%m-%d %H:%M:%S} UTC), so nbgrader's late-submission plugin applies"
    )


def print_outcome(out: Outcome, args) -> None:
    counts = {
        k: sum(1 for s in out.status.values() if s == k) for k in ("new", "replaced", "unchanged")
    }
    print(
        f"collected {args.assignment} from {args.zip.name}: {len(out.status)} notebook(s) placed in "
        f"{args.grading_dir / 'submitted'} ({counts['new']} new, {counts['replaced']} replaced, "
        f"{counts['unchanged']} unchanged)"
    )
    print(late_line(out, args.lms))
    missing = out.roster_size - len(out.status)
    print(f"  {missing} of {out.roster_size} roster student(s) have no notebook placed")
    for who, why in out.choice.skipped:
        print(f"  skipped {who}: {why}")
    if out.choice.problems:
        print(f"could NOT place {len(out.choice.problems)} file(s):", file=sys.stderr)
        for who, why in out.choice.problems:
            print(f"  {who}: {why}", file=sys.stderr)
    for user_id in out.twins:
        print(
            f"warning: submitted/{user_id}/{args.assignment} also exists (nbgrader zip_collect "
            f"names folders by the {args.lms} id): grading both grades that student twice; "
            "remove one",
            file=sys.stderr,
        )
    print(f"list: {args.grading_dir / 'collected' / (args.assignment + '.csv')}")


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        out = collect(args)
    except CollectError as e:
        print(f"collect: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"collect: cannot write: {e}", file=sys.stderr)
        return 1
    print_outcome(out, args)
    return 0
