"""Which file of the zip is whose submission, and writing it into nbgrader's layout.

Each student gets at most one notebook, ``<grading>/submitted/<id>/<A>/<A>.ipynb``, whatever
the file was called: the one named like the assignment (``A.ipynb``, ``A-1.ipynb`` after a
resubmission, ``A (2).ipynb`` from a browser), else the only notebook of the submission when it is
not named like another assignment of the course. Beside it ``lms.json`` records what the LMS
said (the late flag, its ids, the file's name). When the gradebook has a due date for the
assignment, ``timestamp.txt`` carries the LMS's late flag in nbgrader's terms (the LMS gives no
time): one second after the due date for a submission marked late, no file for one on time (an
earlier ``timestamp.txt`` described another file and is removed). Anything else is listed with
the reason and left out.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}")
COPY_SUFFIX = re.compile(r"(?:-\d+| ?\(\d+\))$")  # Canvas's -1, a browser's " (1)"
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f UTC"  # nbgrader's own (Exchange.timestamp_format, UTC)


@dataclass(frozen=True)
class Student:
    """A roster row: the course's id for the student ("" if none), their name, what is wrong."""

    id: str
    name: str
    problem: str | None = None


@dataclass
class Found:
    """One file of the zip as the LMS named it, and whose it is (or why no one's)."""

    display: str  # the file's name as the student uploaded it
    student: Student | None = None
    late: bool = False
    meta: dict = field(default_factory=dict)
    problem: str | None = None
    member: object = None  # the archive.Member it came from

    @property
    def is_notebook(self) -> bool:
        return self.display.lower().endswith(".ipynb")

    @property
    def stem(self) -> str:
        return COPY_SUFFIX.sub("", self.display[: -len(".ipynb")].strip()).strip()


@dataclass
class Choice:
    """The chosen notebook per student id, and every file left out with the reason."""

    chosen: dict[str, Found] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (file, why): not work
    problems: list[tuple[str, str]] = field(default_factory=list)  # (who or file, why)


def id_problem(student: Student) -> str | None:
    """Why this student's id cannot name a folder of grading/submitted/, or None."""
    if student.problem:
        return student.problem
    if not student.id:
        return "the roster gives no login for this student (a Test Student?)"
    if not SAFE_ID.fullmatch(student.id) or ".." in student.id:
        return f"the login {student.id!r} cannot be a folder name (letters, digits, . _ @ + -)"
    return None


def _label(f: Found) -> str:
    who = f"{f.student.name} ({f.student.id})" if f.student and f.student.id else ""
    return f"{who}: {f.display}" if who else f.member.name if f.member else f.display


def _one_student(files: list[Found], assignment: str, others: set[str], out: Choice) -> None:
    named = [f for f in files if f.stem == assignment]
    rest = [f for f in files if f.stem != assignment and f.stem not in others]
    if len({f.meta.get("user_id") for f in files}) > 1:
        out.problems.append((_label(files[0]), "two LMS users share this login in the roster"))
        return
    pick = named[0] if len(named) == 1 else rest[0] if not named and len(rest) == 1 else None
    if pick is None:
        names = ", ".join(sorted(f.display for f in files))
        why = (
            f"several notebooks named {assignment}: {names}"
            if named
            else f"several notebooks, none named {assignment}: {names}"
            if rest
            else f"only another assignment's notebook ({names}): uploaded to the wrong assignment?"
        )
        out.problems.append((_label(files[0]), why))
        return
    out.chosen[pick.student.id] = pick
    for f in files:
        if f is not pick:
            out.skipped.append(
                (_label(f), f"another notebook of the submission ({pick.display} taken)")
            )


def choose(found: list[Found], assignment: str, known: set[str]) -> Choice:
    """One notebook per student; every other file skipped or listed as a problem, with why."""
    out, by_student = Choice(), defaultdict(list)
    for f in found:
        if f.problem:
            out.problems.append((_label(f), f.problem))
        elif not f.is_notebook:
            out.skipped.append((_label(f), "not a notebook"))
        elif (why := id_problem(f.student)) is not None:
            out.problems.append((f"{f.student.name}: {f.display}", why))
        else:
            by_student[f.student.id].append(f)
    for files in by_student.values():
        _one_student(files, assignment, known - {assignment}, out)
    return out


def _real_dir(path: Path) -> None:
    """Create ``path`` as a plain folder; a symbolic link there is refused."""
    if path.is_symlink():
        raise OSError(f"{path} is a symbolic link: refusing to write through it")
    path.mkdir(exist_ok=True)


def _write_new(path: Path, data: bytes) -> None:
    """Replace ``path`` by a new plain file holding ``data`` (never through a link)."""
    tmp = path.with_name(f".{path.name}.collect-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def folder(grading: Path, student: str, assignment: str) -> Path:
    """``<grading>/submitted/<student>/<assignment>``, made of plain folders."""
    path = grading
    for part in ("submitted", student, assignment):
        path = path / part
        _real_dir(path)
    return path


def write(grading: Path, assignment: str, f: Found, data: bytes, lms: dict, due) -> str:
    """Write one submission; returns 'new', 'replaced' or 'unchanged'."""
    dest = folder(grading, f.student.id, assignment)
    notebook = dest / f"{assignment}.ipynb"
    old = notebook.read_bytes() if notebook.is_file() and not notebook.is_symlink() else None
    if notebook.is_symlink():
        notebook.unlink()
    _write_new(notebook, data)
    record = {**lms, "late": f.late, "file": f.display, **f.meta}
    record["sha256"] = hashlib.sha256(data).hexdigest()
    _write_new(dest / "lms.json", (json.dumps(record, indent=1, sort_keys=True) + "\n").encode())
    stamp = dest / "timestamp.txt"
    if f.late and due is not None:
        late_by_a_second = (due + dt.timedelta(seconds=1)).strftime(TIMESTAMP_FORMAT)
        _write_new(stamp, (late_by_a_second + "\n").encode())
    elif stamp.exists() or stamp.is_symlink():
        stamp.unlink()  # it described another file
    return "new" if old is None else "unchanged" if old == data else "replaced"
