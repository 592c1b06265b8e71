"""Moodle's assignment "Download all submissions" zip, read against its grading worksheet.

Moodle names each submitted file (``download_submissions`` in ``mod/assign/locallib.php``,
moodle/moodle)::

    <Full Name>_<participant>_assignsubmission_file_/<file>      (Moodle 3.1 and later)
    <Full Name>_<participant>_assignsubmission_file_<file>       (earlier, one flat folder)

where underscores in the name became spaces, ``<participant>`` is the assignment's own
participant number (``get_uniqueid_for_user``: the ``assign_user_mapping`` id, also used for
blind marking), and online text comes as ``..._assignsubmission_onlinetext_/onlinetext.html``.
That number is in no gradebook export: only the same assignment's **grading worksheet**
(Assignment > Submissions > "Download grading worksheet", the ``assignfeedback_offline``
plugin) has it, in its ``Identifier`` column ("Participant 1234567"), beside ``Full name`` and
``Email address`` (and ``Username`` or ``ID number`` where the site shows them). The worksheet is
this collector's roster: a student's course id is their ``Username`` when the worksheet has one,
else their e-mail address. The zip carries no late flag; the worksheet's times are written in the
downloading user's language and time zone, so no time is taken from them.
"""

from __future__ import annotations

import re

from ..export.csvio import Table
from .place import Found, Student

PREFIX = re.compile(
    r"^(?P<name>[^_]*)_(?P<participant>\d+)_assignsubmission_(?P<kind>[a-z]+)_(?P<rest>.*)$"
)
PARTICIPANT = re.compile(r"(\d+)\s*$")


def roster_students(table: Table) -> dict[str, Student]:
    """Participant number -> the student, from the grading worksheet."""
    ident = table.column("Identifier")
    if ident is None:
        raise ValueError(
            "this is not a Moodle grading worksheet (no 'Identifier' column): download it from "
            "the assignment's Submissions page, 'Download grading worksheet', in English"
        )
    cols = {n: table.column(n) for n in ("Full name", "Username", "Email address")}
    students: dict[str, Student] = {}
    for row in table.rows:
        m = PARTICIPANT.search(row[ident])
        if not m:
            continue
        value = {n: row[c].strip() if c is not None else "" for n, c in cols.items()}
        course_id = value["Username"] or value["Email address"]
        problem = None if course_id else "the worksheet shows no Username or Email address"
        students[m.group(1)] = Student(course_id, value["Full name"], problem)
    return students


def identify(parts: tuple[str, ...], students: dict[str, Student]) -> Found:
    """Whose file this is: the participant number in its folder (or flat) name."""
    folder = parts[-2] if len(parts) > 1 and PREFIX.match(parts[-2]) else None
    m = PREFIX.match(folder or parts[-1])
    if not m:
        return Found(
            display=parts[-1], problem="not a name Moodle gives (Name_<n>_assignsubmission_...)"
        )
    display = parts[-1] if folder else m.group("rest")
    number = m.group("participant")
    if number not in students:
        return Found(
            display=display,
            problem=f"participant {number} is not in the grading worksheet (download it again)",
        )
    meta = {"participant": number, "name_in_zip": m.group("name"), "plugin": m.group("kind")}
    return Found(student=students[number], display=display, meta=meta)
