"""Moodle: a grade-import CSV (Grades > Import > CSV file) built from Moodle's own grade export.

The roster is Moodle's Grades > Export > Plain text file (``grade/export/txt`` in moodle/moodle):
the user profile fields the site exports (by default First name, Last name, ID number,
Institution, Department, Email address; Username where the site adds it), then one column per
grade item (``Assignment: Title (Real)``), Course total, and ``Last downloaded from this course``.
The output keeps the identifier columns and adds one column per nbgrader assignment (a roster
column whose header holds the assignment's name lends its header). Moodle's importer
(``grade/import/csv/classes/load_data.php``) reads ``-`` as "no grade" both for an existing
grade item and for a new one, whereas an empty cell in a *new* grade item is stored as 0 (its
database layer turns '' into 0 in numeric columns), and ``-`` in an existing item *clears* the
grade. So a student without a submission keeps the roster's cell (``-`` where it had none), and a
student with no submission in any exported assignment is left out of the file, unless the
instructor asks to clear (``--clear-missing``: ``-``). Moodle's export does not give an item's
maximum: grades are raw points (``--scale-to N`` scales them), and the maxima are printed.
"""

from autograder.export.csvio import ExportError, Table, format_points
from autograder.export.gradebook import Grades
from autograder.export.options import Options
from autograder.export.report import Report
from autograder.export.roster import RosterRow, match_students, norm

IDENTIFIERS = ("First name", "Last name", "ID number", "Username", "Email address")
NOT_GRADES = IDENTIFIERS + ("Institution", "Department", "Suspended")
NO_GRADE = "-"
OTHER_DISPLAYS = ("(percentage)", "(letter)", "(feedback)")


def identifier_columns(table: Table) -> dict[str, int]:
    """The identifier columns the roster has, by their English names; Username or Email needed."""
    found = {n: c for n in IDENTIFIERS if (c := table.column(n)) is not None}
    found = dict(sorted(found.items(), key=lambda item: item[1]))  # in the roster's order
    if "Username" not in found and "Email address" not in found:
        raise ExportError(
            "this is not a Moodle grade export with a 'Username' or 'Email address' column "
            f"(export it in English, with the Email address field): {table.header[:6]}"
        )
    return found


def roster_rows(table: Table, ids: dict[str, int]) -> tuple[list[RosterRow], int]:
    """The rows that identify a user (Username or Email address), and how many did not."""
    rows, skipped = [], 0
    for i, row in enumerate(table.rows):
        value = {n: row[c].strip() for n, c in ids.items()}
        login, email = value.get("Username", ""), value.get("Email address", "")
        if not (login or email):
            skipped += 1
            continue
        emails = tuple(e for e in (email, login) if "@" in e)
        name = f"{value.get('First name', '')} {value.get('Last name', '')}".strip()
        rows.append(RosterRow(i, login, emails, tuple(value.values()), name or login or email))
    return rows, skipped


def grade_column(table: Table, name: str) -> int | None:
    """The roster's grade column for assignment ``name`` (its points, not %, letter, feedback)."""
    found = []
    for c, head in enumerate(table.header):
        h = norm(head)
        if head.strip() in NOT_GRADES or h.startswith("course total") or h.startswith("last down"):
            continue
        if norm(name) in h and not h.endswith(OTHER_DISPLAYS):
            found.append(c)
    return found[0] if len(found) == 1 else None


def column_values(grades, name, rows, owner, old, report, opts, factor) -> list[str]:
    """One cell per output row: the score; without a submission the roster's cell (or Moodle's
    no-grade mark, which clears it, when asked)."""
    scores, cells = grades.scores[name], []
    for row, before in zip(rows, old, strict=True):
        student = owner.get(row.index)
        if student in scores:
            cells.append(format_points(scores[student] * factor))
            continue
        report.empty[name] += 1
        had = before.strip() not in ("", NO_GRADE)
        if had and opts.clear_missing:
            report.cleared[name].append(row.name)
        elif had:
            report.kept[name] += 1
        cells.append(before.strip() if had and not opts.clear_missing else NO_GRADE)
    return cells


def add_assignment(table, name, grades, rows, owner, out, header, report, opts) -> None:
    """Append ``name``'s column to the output rows."""
    column = grade_column(table, name)
    header.append(table.header[column] if column is not None else name)
    if column is None:
        report.notes.append(
            f"{name}: no grade column in the roster; on import map it to its grade item, "
            "or to 'New grade item'"
        )
    top = grades.max_score[name]
    factor = opts.factor(name, top, None)
    old = [table.rows[r.index][column] if column is not None else "" for r in rows]
    cells = column_values(grades, name, rows, owner, old, report, opts, factor)
    for line, cell in zip(out, cells, strict=True):
        line.append(cell)
    written = top * factor
    report.notes.append(
        f"{name}: grades out of {format_points(written)}: the grade item's maximum grade in "
        f"Moodle must be {format_points(written)}"
        + ("" if factor != 1 else " (or scale them with --scale-to N)")
    )
    if written > 100:
        report.notes.append(
            f"{name}: maximum {format_points(written)} points; Moodle refuses "
            "grades above 100 unless the site allows them (unlimitedgrades, gradepointmax)"
        )


def export_moodle(
    grades: Grades, table: Table, mapping: dict[str, str], opts: Options | None = None
) -> tuple[Table, Report]:
    """The Moodle import file: identifier columns, then one points column per assignment."""
    opts = opts or Options()
    if opts.set_points_possible:
        raise ExportError("Moodle's import cannot set a maximum: change it on the grade item")
    ids = identifier_columns(table)
    rows, skipped = roster_rows(table, ids)
    matching = match_students(grades.graded_students(), rows, mapping)
    owner = {row: student for student, row in matching.rows.items()}
    report = Report("Moodle", list(grades.scores), len(rows), len(matching.rows))
    report.unmatched = {grades.names[s]: why for s, why in matching.unmatched.items()}
    if skipped:
        report.notes.append(f"{skipped} roster row(s) without Username or Email address left out")
    header = [table.header[c] for c in ids.values()]
    out = [[table.rows[r.index][c] for c in ids.values()] for r in rows]
    for name in grades.scores:
        add_assignment(table, name, grades, rows, owner, out, header, report, opts)
    if not opts.clear_missing:  # nothing to import for them: their grades stay as Moodle has them
        graded = {s for scores in grades.scores.values() for s in scores}
        keep = [i for i, r in enumerate(rows) if owner.get(r.index) in graded]
        report.left_out = len(rows) - len(keep)
        out = [out[i] for i in keep]
    return Table(header, out, ","), report
