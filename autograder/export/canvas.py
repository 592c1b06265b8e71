"""Canvas: fill the instructor's own gradebook export, ready for Grades > Import.

The roster is what Canvas writes under Grades > Export (``lib/gradebook_exporter.rb`` in
instructure/canvas-lms): a header ``Student, ID, [SIS User ID,] SIS Login ID, [Integration ID,]
[Root Account,] Section``, custom columns, one ``Title (id)`` column per assignment, then
read-only totals (Current Score, Final Grade...); a row ``    Points Possible`` (``(read only)``
under the totals), sometimes a row saying which assignments post grades manually, then one row
per student (the Test Student last). Everything is kept as it is; only the nbgrader assignments'
columns are filled (or appended), with raw points (or scaled to Points Possible on request).
A student without a submission keeps the cell the roster has (Canvas's importer changes only
cells that differ), unless the instructor asks to clear it. Points Possible is left as Canvas has
it (a change there changes the Canvas assignment) except in a new column, which needs one, or on
request. Canvas's importer (``lib/gradebook_importer.rb``) finds assignments by the ``(id)`` in a
header, or else by title, and creates a new assignment for any other column.
"""

import re

from autograder.export.csvio import ExportError, Table, format_points
from autograder.export.gradebook import Grades
from autograder.export.options import Options
from autograder.export.report import Report
from autograder.export.roster import RosterRow, match_students, norm

# Canvas's importer drops columns whose header contains one of these (group totals included).
NON_ASSIGNMENT = re.compile(
    "Current Score|Current Points|Current Grade|Final Score|Final Points|Final Grade|"
    "Override Score|Override Grade|Override Status"
)
POSTING_ROW = re.compile(r"^\s*(Muted|Manual Posting.*)?\s*$", re.IGNORECASE)
TITLE_AND_ID = re.compile(r"^(.*)\s\((\d+)\)$")


def check_header(table: Table) -> int:
    """The index of the ``Section`` column, after checking this is a Canvas gradebook export."""
    head = table.header
    canvas = len(head) > 3 and (
        ("Student" in head[0] and "ID" in head[1])
        or ("LastName" in head[0] and "FirstName" in head[1] and "ID" in head[2])
    )
    section = table.column("Section")
    if not canvas or section is None:
        raise ExportError(
            "this is not a Canvas gradebook export (its header must start with Student, ID, "
            f"... Section): {head[:6]}"
        )
    return section


def special_rows(table: Table) -> tuple[int | None, set[int]]:
    """The Points Possible row's index, and every row that is not a student's."""
    points, special = None, set()
    for i, row in enumerate(table.rows):
        first = row[0] if row else ""
        if "Points Possible" in first:
            points = i if points is None else points
            special.add(i)
        elif all(POSTING_ROW.match(c) for c in row):
            special.add(i)  # the manual-posting row, or a row with no student in it
        elif "Student" in first and row[1:2] == ["ID"]:
            special.add(i)  # a second copy of the header
    return points, special


def roster_rows(table: Table, special: set[int]) -> list[RosterRow]:
    """The student rows, by login (SIS Login ID) and every other identifier Canvas exports."""
    cols = {n: table.column(n) for n in ("SIS Login ID", "SIS User ID", "ID", "Integration ID")}
    first_last = table.header[0] == "LastName"
    rows = []
    for i, row in enumerate(table.rows):
        if i in special:
            continue
        value = {n: (row[c].strip() if c is not None else "") for n, c in cols.items()}
        login = value["SIS Login ID"]
        name = f"{row[1]} {row[0]}".strip() if first_last else row[0]
        emails = (login,) if "@" in login else ()
        rows.append(RosterRow(i, login, emails, tuple(value.values()), name, value["ID"]))
    return rows


def find_column(table: Table, name: str, section: int, points: int | None) -> int | None:
    """The assignment column whose header holds ``name`` (an exact title wins), or None."""
    exact, containing = [], []
    for c in range(section + 1, len(table.header)):
        head = table.header[c]
        read_only = points is not None and "read only" in table.rows[points][c]
        if NON_ASSIGNMENT.search(head) or read_only:
            continue
        title = TITLE_AND_ID.match(head).group(1) if TITLE_AND_ID.match(head) else head
        if norm(title) == norm(name):
            exact.append(c)
        elif norm(name) in norm(head):
            containing.append(c)
    if len(exact) == 1:
        return exact[0]
    candidates = exact + containing
    if len(candidates) > 1:
        heads = ", ".join(repr(table.header[c]) for c in candidates)
        raise ExportError(
            f"several Canvas columns contain {name!r} ({heads}): rename all but one in Canvas"
        )
    return candidates[0] if candidates else None


def add_column(table: Table, name: str) -> int:
    """Append an empty column named ``name``; returns its index."""
    table.header.append(name)
    for row in table.rows:
        row.append("")
    return len(table.header) - 1


def fill_column(table, column, name, grades, rows, owner, report, opts, factor) -> None:
    """Each student row's points for ``name``; without a submission the roster's cell is kept
    (or cleared, if asked)."""
    scores = grades.scores[name]
    for row in rows:
        student = owner.get(row.index)
        cell = table.rows[row.index]
        if student in scores:
            cell[column] = format_points(scores[student] * factor)
            continue
        report.empty[name] += 1
        had = cell[column].strip() not in ("", "-", "N/A")
        if had and opts.clear_missing:
            report.cleared[name].append(row.name or row.login)
            cell[column] = ""
        elif had:
            report.kept[name] += 1


def number(text: str) -> float | None:
    try:
        return float(text.strip().replace(",", ".")) if text.strip() else None
    except ValueError:
        return None


def points_possible(table, points: int, column: int, name, maximum, new: bool, opts, report):
    """The factor for ``name``'s scores; Points Possible left as Canvas has it unless the column
    is new or the instructor asked to set it."""
    before = table.rows[points][column].strip()
    canvas = None if new else number(before)
    factor = opts.factor(name, maximum, canvas)
    written = maximum * factor
    if new or canvas is None or opts.set_points_possible:
        table.rows[points][column] = format_points(written)
        if canvas is not None and abs(canvas - written) > 1e-9:
            report.notes.append(
                f"{table.header[column]!r}: Points Possible {before} -> {format_points(written)} "
                "(as asked): importing changes the Canvas assignment's points"
            )
    elif abs(canvas - written) > 1e-9:
        report.notes.append(
            f"{table.header[column]!r}: Canvas says {before} points possible, the grades are "
            f"out of {format_points(written)} (full marks show as "
            f"{100 * written / canvas:.0f}% in Canvas): add --scale to scale them to {before}, "
            f"or --set-points-possible to make Canvas's {format_points(written)}"
        )
    return factor


def export_canvas(
    grades: Grades, table: Table, mapping: dict[str, str], opts: Options | None = None
) -> tuple[Table, Report]:
    """The Canvas import file: the roster with every exported assignment's points filled in."""
    opts = opts or Options()
    section = check_header(table)
    points, special = special_rows(table)
    if points is None:  # Canvas always writes one; without it new assignments get no maximum
        table.rows.insert(0, ["    Points Possible"] + [""] * (len(table.header) - 1))
        points, special = 0, {i + 1 for i in special} | {0}
    rows = roster_rows(table, special)
    matching = match_students(grades.graded_students(), rows, mapping)
    owner = {row: student for student, row in matching.rows.items()}
    report = Report("Canvas", list(grades.scores), len(rows), len(matching.rows))
    report.unmatched = {grades.names[s]: why for s, why in matching.unmatched.items()}
    for name in grades.scores:
        column = find_column(table, name, section, points)
        new = column is None
        if new:
            column = add_column(table, name)
            report.new_columns.append(name)
        top = grades.max_score[name]
        factor = points_possible(table, points, column, name, top, new, opts, report)
        fill_column(table, column, name, grades, rows, owner, report, opts, factor)
    return table, report
