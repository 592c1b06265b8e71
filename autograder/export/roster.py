"""Which roster row belongs to which nbgrader student.

Rules, in order, for each graded student (ids and logins compared case-insensitively):

1. the mapping file (``--map``: nbgrader id, LMS login), when it names the student: the row
   whose login, SIS id, user id or e-mail is that value (and no other rule is tried);
2. the nbgrader id equal to the row's login (Canvas ``SIS Login ID``, Moodle ``Username``);
3. the nbgrader id equal to the part before the ``@`` of the row's e-mail address.

A rule that finds two rows, or a row that two students claim, matches nobody: both are reported.
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
        k: defaultdict(set) for k in ("alias", "login", "local")
    }
    for row in rows:
        for alias in row.aliases:
            if alias.strip():
                index["alias"][norm(alias)].add(row.index)
        if row.login.strip():
            index["login"][norm(row.login)].add(row.index)
        for email in row.emails:
            if local_part(email):
                index["local"][local_part(email)].add(row.index)
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
        if not found:
            found, how = index["local"].get(sid, set()), "e-mail address"
        if not found:
            return None, "no roster row has this id as its login or before the @ of its e-mail"
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
