"""Which roster row belongs to which nbgrader student.

Rules, in order, for each graded student (ids and logins compared case-insensitively):

1. the mapping file (``--map``: nbgrader id, LMS login), when it names the student: the row
   whose login, SIS id, user id or e-mail is that value (and no other rule is tried);
2. the nbgrader id equal to the row's login (Canvas ``SIS Login ID``, Moodle ``Username``);
3. the nbgrader id equal to the row's e-mail address, or to the part before its ``@``;
4. the nbgrader id equal to the row's Canvas user id (``ID``: the id in Canvas's submission file
   names, which plain ``nbgrader zip_collect`` uses as the student's id).

A rule that finds two rows, or a row that two students claim, matches nobody: both are reported,
and so is an id that is one row's login or e-mail and another row's Canvas user id.
"""

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from autograder.export.csvio import ExportError, parse, read_text


@dataclass
class RosterRow:
    """One student row of the LMS roster, by its identifiers."""

    index: int  # position among the table's data rows
    login: str = ""
    emails: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()  # every identifier a mapping file may give
    name: str = ""
    user_id: str = ""  # Canvas's ID (the user id in its submission file names)


@dataclass
class Matching:
    """Row index per matched student; a reason per graded student left without a row."""

    rows: dict[str, int] = field(default_factory=dict)
    unmatched: dict[str, str] = field(default_factory=dict)


def norm(value: str) -> str:
    return value.strip().casefold()


def local_part(email: str) -> str:
    return norm(email).split("@", 1)[0] if "@" in email else ""


def read_map(path: Path) -> dict[str, str]:
    """The mapping file: two columns, nbgrader id then LMS login; an optional header row whose
    first cell mentions ``nbgrader`` (or is ``id``/``student``) is skipped."""
    table = parse(read_text(path))
    records = [table.header, *table.rows] if table.header else []
    if records and (norm(records[0][0]) in ("id", "student") or "nbgrader" in norm(records[0][0])):
        records = records[1:]
    mapping: dict[str, str] = {}
    for line, record in enumerate(records, start=1):
        cells = [c.strip() for c in record]
        if not any(cells):
            continue
        if len(cells) < 2 or not cells[0] or not cells[1] or any(cells[2:]):
            raise ExportError(f"{path}: row {line} is not 'nbgrader id, LMS login': {record}")
        if norm(cells[0]) in mapping:
            raise ExportError(f"{path}: {cells[0]} appears twice")
        mapping[norm(cells[0])] = cells[1]
    return mapping


def index_rows(rows: list[RosterRow]) -> dict[str, dict[str, set[int]]]:
    """Lookup tables: alias, login and e-mail local part -> the rows that carry it."""
    index: dict[str, dict[str, set[int]]] = {
        k: defaultdict(set) for k in ("alias", "login", "email", "local", "user_id")
    }
    for row in rows:
        for alias in row.aliases:
            if alias.strip():
                index["alias"][norm(alias)].add(row.index)
        if row.login.strip():
            index["login"][norm(row.login)].add(row.index)
        for email in row.emails:
            if local_part(email):
                index["email"][norm(email)].add(row.index)
                index["local"][local_part(email)].add(row.index)
        if row.user_id.strip():
            index["user_id"][norm(row.user_id)].add(row.index)
    return index


def find_row(student: str, mapping: dict[str, str], index) -> tuple[int | None, str]:
    """The student's row by the rules above, or None and why not."""
    sid = norm(student)
    if sid in mapping:
        found, how = index["alias"].get(norm(mapping[sid]), set()), f"login {mapping[sid]!r}"
        if not found:
            return None, f"the mapping file gives {mapping[sid]!r}, which no roster row has"
    else:
        found, how = index["login"].get(sid, set()), "login"
        for rule, label in (("email", "e-mail address"), ("local", "e-mail address")):
            if not found:
                found, how = index[rule].get(sid, set()), label
        by_user_id = index["user_id"].get(sid, set())
        if found and by_user_id and found != by_user_id:
            return (
                None,
                f"this id is one row's {how} and another's Canvas user id: use the mapping file",
            )
        if not found:
            found, how = by_user_id, "Canvas user id"
        if not found:
            return (
                None,
                "no roster row has this id as its login, e-mail (or before its @) or user id",
            )
    if len(found) > 1:
        return None, f"{len(found)} roster rows match by {how}: add the student to the mapping file"
    return next(iter(found)), ""


def match_students(students, rows: list[RosterRow], mapping: dict[str, str]) -> Matching:
    """Match every graded student to at most one row; a row claimed twice goes to nobody."""
    index, result = index_rows(rows), Matching()
    for student in students:
        row, why = find_row(student, mapping, index)
        if row is None:
            result.unmatched[student] = why
        else:
            result.rows[student] = row
    claims: dict[int, list[str]] = defaultdict(list)
    for student, row in result.rows.items():
        claims[row].append(student)
    for claimants in claims.values():
        if len(claimants) > 1:
            for student in claimants:
                del result.rows[student]
                others = ", ".join(c for c in claimants if c != student)
                result.unmatched[student] = f"the same roster row as {others}: fix the mapping file"
    return result
