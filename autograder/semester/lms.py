"""What the LMSs hand the instructor: Canvas's gradebook export and Moodle's grade export of the
class (the rosters ``make export`` fills), and Canvas's "Download Submissions" zips (what
``make collect`` reads), in the formats :mod:`autograder.collect` and :mod:`autograder.export`
document. A grade already in the LMS (``HAND_GRADE``, entered there for a student who handed
in no notebook) must survive the export."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from .. import nb
from ..course import source_notebook
from ..export.csvio import Table, write_table
from .cohort import ABSENT, LATE, RESUBMITTED, Student, Work

HAND_GRADE = "3.00"


def maximum(a: str) -> float:
    return sum(nb.points(nb.read(source_notebook(a))).values())


def canvas_column(j: int, a: str) -> str:
    return f"Exercise {a} ({2001 + j})"


def moodle_column(a: str) -> str:
    return f"Assignment: {a} (Real)"


def _existing(works: list[Work], missing: str) -> list[str]:
    return [HAND_GRADE if w.case == ABSENT else missing for w in works]


def canvas_roster(path: Path, names: list[str], works: dict) -> None:
    """Canvas's Grades > Export: a Points Possible row, the students, the Test Student last."""
    cols = [canvas_column(j, a) for j, a in enumerate(names)]
    header = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *cols]
    header += ["Current Score", "Final Grade"]
    rows = [["    Points Possible", "", "", "", "", *(f"{maximum(a):.2f}" for a in names)]]
    rows[0] += ["(read only)", "(read only)"]
    for s, ws in works.items():
        section = "Sec A" if s.index % 2 == 0 else "Sec B"
        ids = [f"{s.last}, {s.first}", s.canvas_id, f"S{s.canvas_id}", s.login, section]
        rows.append([*ids, *_existing(ws, ""), "", ""])
    rows.append(["Student, Test", "9999", "", "", "Sec A", *([""] * len(names)), "", ""])
    write_table(path, Table(header, rows))


def moodle_roster(path: Path, names: list[str], works: dict) -> None:
    """Moodle's Grades > Export > Plain text file, with its default fields and Username."""
    header = ["First name", "Last name", "ID number", "Institution", "Department", "Username"]
    header += ["Email address", *map(moodle_column, names), "Course total (Real)"]
    header += ["Last downloaded from this course"]
    rows = []
    for s, ws in works.items():
        ids = [s.first, s.last, "", "", "", s.login, f"{s.login}@uni.example"]
        rows.append([*ids, *_existing(ws, "-"), "-", "1764547200"])
    write_table(path, Table(header, rows))


def canvas_name(w: Work, final: bool) -> str:
    """``lastfirst[_LATE]_<user id>_<attachment id>_<file>`` as Canvas names a download."""
    s: Student = w.student
    lastfirst = re.sub(r"\W", "", f"{s.last}{s.first}".lower())
    late = "_LATE" if w.case == LATE else ""
    attachment = 500000 + 100 * s.index + 2 * int(w.assignment[:2]) + final
    again = "-1" if final and w.case == RESUBMITTED else ""
    return f"{lastfirst}{late}_{s.canvas_id}_{attachment}_{w.assignment}{again}.ipynb"


def canvas_zip(path: Path, works: list[Work], final: bool) -> int:
    """One assignment's download (the first, or the final one after resubmissions)."""
    count = 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for w in works:
            data = w.final if final else w.first
            if data is not None:
                z.writestr(canvas_name(w, final), data)
                count += 1
    return count
