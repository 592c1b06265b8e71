"""Canvas's "Download Submissions" zip, read against Canvas's gradebook export.

Canvas names each file of a student's current submission (``lib/content_zipper.rb`` in
instructure/canvas-lms, ``get_filename`` and ``add_upload_submission``)::

    <lastfirst>[_LATE]_<user id>_<attachment id>_<display name>

``lastfirst`` is the sortable name ("Last, First") lower-cased with every non-word character
removed and any ``_<digits>_`` collapsed (so that the ids can be found); ``LATE`` is there when
Canvas marked the submission late (older Canvas wrote ``-late``, all lower case); the display
name is the file as the student uploaded it, with ``/\\:*?"<>|`` replaced by ``_``, and a
``-1``, ``-2``... where the student uploaded a file of that name before (Canvas's
``Attachment.make_unique_filename``). There is no time in it. With anonymous grading the user id
is ``anon_<anonymous id>``, which no export holds.

The roster is Canvas's gradebook export (Grades > Export), read by
:mod:`autograder.export.canvas`: its ``ID`` column is the Canvas user id of the file names, its
``SIS Login ID`` the student's id in this course (``grading/submitted/<SIS Login ID>/``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..export.canvas import check_header, special_rows
from ..export.csvio import Table
from .place import Found, Student

IDS = re.compile(r"(?=_(\d+)_(\d+)_)")
LATE = re.compile(r"[_-]late$", re.IGNORECASE)
ANONYMOUS = re.compile(r"^(?:late_)?anon_", re.IGNORECASE)
IMPOSSIBLE_NAME = re.compile(r"_\d+_")  # Canvas collapses these in the name part
# The same names for nbgrader's own FileNameCollectorPlugin (nbgrader_config.py), which matches
# from the start of the extracted file's absolute path: student_id is the Canvas user id, file_id
# the display name without Canvas's "-1" (nbgrader adds the extension back).
NBGRADER_PATTERN = (
    r"(?i)^.*/(?P<name>[^/]*?)(?:[_-]late)?_(?P<student_id>\d+)_(?P<attachment_id>\d+)_"
    r"(?P<file_id>[^/]+?)(?:-\d+)?\.ipynb$"
)


@dataclass(frozen=True)
class Reading:
    """One way to split a Canvas file name into its parts."""

    name: str
    late: bool
    user_id: str
    attachment_id: str
    display: str


def readings(filename: str) -> list[Reading]:
    """Every split of ``filename`` that Canvas could have written, leftmost first."""
    out = []
    for m in IDS.finditer(filename):
        prefix = filename[: m.start()]
        late = bool(LATE.search(prefix))
        name = LATE.sub("", prefix)
        if IMPOSSIBLE_NAME.search(name + "_"):
            continue
        display = filename[m.start() + len(m.group(1)) + len(m.group(2)) + 3 :]
        if display:
            out.append(Reading(name, late, m.group(1), m.group(2), display))
    return out


def roster_students(table: Table) -> dict[str, Student]:
    """Canvas user id -> the student (course id = SIS Login ID, name as Canvas shows it)."""
    check_header(table)
    _, special = special_rows(table)
    id_col, login_col = table.column("ID"), table.column("SIS Login ID")
    if id_col is None or login_col is None:
        raise ValueError("the Canvas roster needs both its ID and SIS Login ID columns")
    first_last = table.header[0] == "LastName"
    students: dict[str, Student] = {}
    for i, row in enumerate(table.rows):
        user_id = row[id_col].strip()
        if i in special or not user_id.isdigit():
            continue
        name = f"{row[1]} {row[0]}".strip() if first_last else row[0].strip()
        login = row[login_col].strip()
        if user_id in students:
            students[user_id] = Student("", name, "the roster has two rows with this Canvas ID")
        else:
            students[user_id] = Student(login, name)
    return students


def identify(parts: tuple[str, ...], students: dict[str, Student]) -> Found:
    """Whose file this is, from its name: a :class:`Found` with a problem when no one's."""
    filename = parts[-1]
    if ANONYMOUS.match(filename):
        return Found(
            display=filename,
            problem="anonymous grading hides the Canvas user id: turn anonymity off for the "
            "download (or collect with nbgrader's zip_collect, under anonymous ids)",
        )
    options = readings(filename)
    if not options:
        return Found(display=filename, problem="not a name Canvas gives (lastfirst_<id>_<id>_file)")
    known = [r for r in options if r.user_id in students]
    if len({r.user_id for r in known}) > 1:
        ids = ", ".join(sorted({r.user_id for r in known}))
        return Found(display=filename, problem=f"the name could belong to Canvas users {ids}")
    if not known:
        return Found(
            display=options[0].display,
            problem=f"Canvas user {options[0].user_id} is not in the roster (dropped? export "
            "the gradebook again)",
        )
    r = known[0]
    meta = {"user_id": r.user_id, "attachment_id": r.attachment_id, "name_in_zip": r.name}
    return Found(student=students[r.user_id], late=r.late, display=r.display, meta=meta)
