"""make export: nbgrader's gradebook into Canvas's and Moodle's grade-import CSV files.

The gradebook is built directly with nbgrader's API (assignments, grade cells, submissions, auto
and manual scores); the rosters are written as the LMS exports them (a BOM, CRLF, quoted names,
Canvas's Points Possible row and read-only columns, Moodle's profile and grade columns).
"""

import csv
import io

import nbgrader.api
import pytest
from alembic.config import Config
from alembic.script import ScriptDirectory
from nbgrader.api import Gradebook
from nbgrader.dbutil import _temp_alembic_ini

from autograder.course import COURSE_ID
from autograder.export.__main__ import main
from autograder.export.csvio import format_points, parse, read_table
from autograder.export.roster import read_map

A1, A2 = "01_one_hot_lookup", "02_sparse_backward"
STUDENTS = {  # nbgrader id: first name, last name
    "alice": ("Alice", "Martin"),
    "bob": ("Bob", "Chen"),
    "carol": ("Carol", "Diaz"),
    "dave": ("Dave", "Evans"),  # graded, in no roster
    "erin": ("Erin", "Smith"),  # matched by e-mail address
    "frank": ("Frank", "Jones"),  # matched by the mapping file
    "gina": ("Gina", "Ruiz"),  # the mapping file wins over a login equal to her id
}
# (assignment, student): {cell: (auto score, manual score or None)}
SUBMISSIONS = {
    (A1, "alice"): {"t1": (3.0, None), "t2": (4.0, None)},
    (A1, "bob"): {"t1": (2.0, None), "t2": (0.0, 5.0)},  # a grader's manual score counts
    (A1, "carol"): {"t1": (0.0, None), "t2": (0.0, None)},  # a real zero
    (A1, "dave"): {"t1": (4.5, None), "t2": (0.0, None)},
    (A1, "erin"): {"t1": (1.0, None), "t2": (6.0, None)},
    (A1, "frank"): {"t1": (2.5, None), "t2": (3.0, None)},  # late: 1 point off (below)
    (A1, "gina"): {"t1": (4.0, None), "t2": (5.0, None)},
    (A2, "alice"): {"s1": (5.0, None)},
    (A2, "bob"): {"s1": (2.0, None)},
}
CELLS = {A1: {"t1": 4.0, "t2": 6.0}, A2: {"s1": 5.0}}
EXPECTED = {  # nbgrader's total per submission
    A1: {"alice": 7, "bob": 7, "carol": 0, "dave": 4.5, "erin": 7, "frank": 4.5, "gina": 9},
    A2: {"alice": 5, "bob": 2},
}

CANVAS_ROWS = [
    ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Quiz 1 (991)", f"{A1} (1234)"]
    + ["Exercises Current Score", "Current Score", "Final Grade"],
    ["    Points Possible", "", "", "", "", "3.00", "10.00"] + ["(read only)"] * 3,
    ["Martin, Alice", "101", "S101", "alice", "Sec A", "3.00", "", "70", "70", "C"],
    ["Chen, Bob", "102", "S102", "BOB", "Sec A", "2.00", "", "", "", ""],
    ["Diaz, Carol", "103", "S103", "carol", "Sec B", "", "", "", "", ""],
    ["Smith, Erin", "105", "S105", "erin@uni.example", "Sec B", "1.00", "", "", "", ""],
    ["Jones, Frank", "106", "S106", "f.jones", "Sec B", "", "", "", "", ""],
    ["Ruiz, Gina", "107", "S107", "g.ruiz", "Sec B", "", "", "", "", ""],
    ["Other, Gina", "108", "S108", "gina", "Sec B", "", "", "", "", ""],
    ["Hill, Hank", "109", "S109", "hank", "Sec A", "1.00", "3.00", "", "", ""],
    ["Student, Test", "110", "", "", "Sec A", "", "", "", "", ""],
]
MOODLE_ROWS = [
    ["First name", "Last name", "ID number", "Institution", "Department", "Username"]
    + ["Email address", f"Assignment: {A1} (Real)", "Course total (Real)"]
    + ["Last downloaded from this course"],
    ["Alice", "Martin", "", "", "", "alice", "alice@uni.example", "-", "-", "1764547200"],
    ["Bob", "Chen", "", "", "", "bob", "bchen@uni.example", "-", "-", "1764547200"],
    ["Carol", "Diaz", "", "", "", "carol", "carol@uni.example", "-", "-", "1764547200"],
    ["Erin", "Smith", "", "", "", "e.smith", "Erin@uni.example", "-", "-", "1764547200"],
    ["Frank", "Jones", "", "", "", "f.jones", "frank.j@uni.example", "-", "-", "1764547200"],
    ["Gina", "Ruiz", "", "", "", "g.ruiz", "g.ruiz@uni.example", "-", "-", "1764547200"],
    ["Gina", "Other", "", "", "", "gina", "gina.o@uni.example", "-", "-", "1764547200"],
    ["Hank", "Hill", "", "", "", "hank", "hank@uni.example", "3.00", "-", "1764547200"],
]
# nbgrader's add_submission trips SQLAlchemy 2's autoflush warnings; they are nbgrader's own.
pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")
MAP_TEXT = "nbgrader id,LMS login\r\nfrank,f.jones\r\ngina,g.ruiz\r\n"


def write_csv(path, rows, delimiter=",", bom=True):
    buf = io.StringIO()
    csv.writer(buf, delimiter=delimiter, lineterminator="\r\n").writerows(rows)
    path.write_bytes(("\ufeff" if bom else "").encode() + buf.getvalue().encode("utf-8"))
    return path


def alembic_head() -> str:
    """nbgrader's get_alembic_version without its `alembic heads` subprocess (seconds here)."""
    with _temp_alembic_ini("sqlite:////tmp/gradebook.db") as ini:
        return ScriptDirectory.from_config(Config(ini)).get_current_head()


@pytest.fixture(scope="module")
def grading(tmp_path_factory):
    """A grading folder whose gradebook.db holds SUBMISSIONS, written through nbgrader's API."""
    folder = tmp_path_factory.mktemp("grading")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nbgrader.api, "get_alembic_version", alembic_head)
        build_gradebook(folder / "gradebook.db")
    return folder


def build_gradebook(db) -> None:
    with Gradebook(f"sqlite:///{db}", course_id=COURSE_ID) as gb:
        for sid, (first, last) in STUDENTS.items():
            gb.add_student(sid, first_name=first, last_name=last)
        for name, cells in CELLS.items():
            gb.add_assignment(name)
            gb.add_notebook(name, name)
            for cell, top in cells.items():
                gb.add_grade_cell(cell, name, name, max_score=top, cell_type="code")
        gb.add_assignment("03_unsubmitted")  # no submission: skipped by default
        for (name, sid), cells in SUBMISSIONS.items():
            gb.add_submission(name, sid)
            for cell, (auto, manual) in cells.items():
                grade = gb.find_grade(cell, name, name, sid)
                grade.auto_score, grade.manual_score = auto, manual
        gb.find_submission_notebook(A1, A1, "frank").late_submission_penalty = 1.0
        gb.db.commit()


def export(grading, tmp_path, capsys, lms, roster, *extra):
    """Run the CLI in-process; returns (exit status, output table, stdout, stderr)."""
    out = tmp_path / "out"
    args = ["--lms", lms, "--roster", str(roster), "--grading-dir", str(grading)]
    status = main([*args, "--out", str(out), *extra])
    captured = capsys.readouterr()
    path = out / f"{lms}.csv"
    return status, (read_table(path) if path.exists() else None), captured.out, captured.err


@pytest.fixture
def canvas(grading, tmp_path, capsys):
    roster = write_csv(tmp_path / "canvas_roster.csv", CANVAS_ROWS)
    (tmp_path / "map.csv").write_text(MAP_TEXT)
    return export(grading, tmp_path, capsys, "canvas", roster, "--map", str(tmp_path / "map.csv"))


@pytest.fixture
def moodle(grading, tmp_path, capsys):
    roster = write_csv(tmp_path / "moodle_roster.csv", MOODLE_ROWS)
    (tmp_path / "map.csv").write_text(MAP_TEXT)
    return export(grading, tmp_path, capsys, "moodle", roster, "--map", str(tmp_path / "map.csv"))


def by_login(table, login_column):
    col = table.column(login_column)
    return {row[col]: row for row in table.rows if row[col]}


def test_canvas_keeps_rows_and_columns_and_fills_points(canvas):
    status, table, _, _ = canvas
    assert status == 0
    assert table.header[: len(CANVAS_ROWS[0])] == CANVAS_ROWS[0]
    assert table.header[len(CANVAS_ROWS[0]) :] == [A2]  # the unknown assignment, appended
    assert len(table.rows) == len(CANVAS_ROWS) - 1
    a1 = table.column(f"{A1} (1234)")
    for original, row in zip(CANVAS_ROWS[1:], table.rows, strict=True):
        for c, cell in enumerate(original):
            if c != a1:  # every other column, read-only ones included, is untouched
                assert row[c] == cell
    rows = by_login(table, "SIS Login ID")
    assert rows["alice"][a1] == "7" and rows["BOB"][a1] == "7"  # case-insensitive login
    assert rows["erin@uni.example"][a1] == "7"  # e-mail local part
    assert rows["f.jones"][a1] == "4.5"  # mapping file; 5.5 less the late penalty


def test_canvas_points_possible_row(canvas):
    _, table, _, _ = canvas
    points = table.rows[0]
    assert points[0].strip() == "Points Possible"
    assert points[table.column(f"{A1} (1234)")] == "10.00"  # left as Canvas has it
    assert points[table.column(A2)] == "5"  # a new column needs one: the gradebook's maximum
    assert points[table.column("Quiz 1 (991)")] == "3.00"
    assert points[table.column("Current Score")] == "(read only)"
    _, _, _, err = canvas
    assert f"'{A1} (1234)': Canvas says" not in err  # 10 is the maximum: nothing to say


def test_missing_submission_keeps_the_roster_grade_and_a_real_zero_stays_zero(canvas):
    _, table, out, err = canvas
    rows = by_login(table, "SIS Login ID")
    a1, a2 = table.column(f"{A1} (1234)"), table.column(A2)
    assert rows["carol"][a1] == "0"  # graded zero
    assert rows["carol"][a2] == ""  # no submission
    assert rows["hank"][a1] == "3.00" and rows["hank"][a2] == ""  # Canvas's grade kept
    test_student = next(r for r in table.rows if r[0] == "Student, Test")
    assert test_student[a1] == "" and test_student[a2] == ""
    assert "import clears" not in err and "1 hold a grade, kept" in out


def test_clear_missing_clears_and_says_so(grading, tmp_path, capsys):
    roster = write_csv(tmp_path / "r.csv", CANVAS_ROWS)
    status, table, _, err = export(grading, tmp_path, capsys, "canvas", roster, "--clear-missing")
    assert status == 0
    assert by_login(table, "SIS Login ID")["hank"][table.column(f"{A1} (1234)")] == ""
    assert "Hill, Hank" in err and "import clears" in err
    mroster = write_csv(tmp_path / "m.csv", MOODLE_ROWS)
    status, mtable, _, err = export(grading, tmp_path, capsys, "moodle", mroster, "--clear-missing")
    assert status == 0 and by_login(mtable, "Username")["hank"][-2:] == ["-", "-"]
    assert "Hank Hill" in err


@pytest.mark.parametrize(
    "points, extra, cell, written",
    [
        ("12.00", ["--scale"], "12.00", {"alice": "8.4", "frank": "5.4"}),  # 7/10 of 12
        ("12.00", ["--set-points-possible"], "10", {"alice": "7", "frank": "4.5"}),
        ("12.00", ["--scale-to", "100"], "12.00", {"alice": "70", "frank": "45"}),
        ("", ["--scale"], None, None),  # nothing to scale to: exit 2
    ],
)
def test_canvas_scaling_and_points_possible(
    grading, tmp_path, capsys, points, extra, cell, written
):
    rows = [list(r) for r in CANVAS_ROWS]
    rows[1][6] = points
    roster = write_csv(tmp_path / "r.csv", rows)
    (tmp_path / "map.csv").write_text(MAP_TEXT)
    args = ["--map", str(tmp_path / "map.csv"), "--assignment", A1, *extra]
    status, table, _, err = export(grading, tmp_path, capsys, "canvas", roster, *args)
    if written is None:
        assert status == 2 and "--scale-to" in err
        return
    a1 = table.column(f"{A1} (1234)")
    assert status == 0 and table.rows[0][a1] == cell
    got = by_login(table, "SIS Login ID")
    assert {s: got[login][a1] for s, login in (("alice", "alice"), ("frank", "f.jones"))} == written


def test_canvas_user_id_matches_plain_zip_collect_ids(tmp_path, capsys):
    """nbgrader's zip_collect names students by the Canvas user id: the export finds them by
    the roster's ID; an id that is also another row's login matches nobody."""
    folder = tmp_path / "g"
    folder.mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nbgrader.api, "get_alembic_version", alembic_head)
        with Gradebook(f"sqlite:///{folder / 'gradebook.db'}", course_id=COURSE_ID) as gb:
            gb.add_assignment(A1)
            gb.add_notebook(A1, A1)
            gb.add_grade_cell("t1", A1, A1, max_score=10.0, cell_type="code")
            for sid, points in (("101", 6.0), ("103", 8.0)):
                gb.add_student(sid)
                gb.add_submission(A1, sid)
                gb.find_grade("t1", A1, A1, sid).auto_score = points
            gb.db.commit()
    rows = [list(r) for r in CANVAS_ROWS]
    rows[3][3] = "103"  # Bob's login is Carol's Canvas user id
    status, table, _, err = export(
        folder, tmp_path, capsys, "canvas", write_csv(tmp_path / "r.csv", rows)
    )
    got = by_login(table, "SIS Login ID")
    assert status == 0 and got["alice"][table.column(f"{A1} (1234)")] == "6"
    assert got["carol"][table.column(f"{A1} (1234)")] == ""
    assert "another's Canvas user id" in err


def test_unmatched_graded_students_are_listed_by_name(canvas, moodle):
    for status, _, _, err in (canvas, moodle):
        assert status == 0
        assert "1 graded student(s) have no row in the roster" in err
        assert "Dave Evans (dave)" in err


def test_mapping_file_wins_over_a_matching_login(canvas, moodle):
    (_, table, _, _), (_, mtable, _, _) = canvas, moodle
    rows = by_login(table, "SIS Login ID")
    a1 = table.column(f"{A1} (1234)")
    assert rows["g.ruiz"][a1] == "9" and rows["gina"][a1] == ""
    mrows = by_login(mtable, "Username")
    assert mrows["g.ruiz"][-2] == "9" and "gina" not in mrows  # no submission: left out


def test_unknown_assignment_column_is_announced(canvas):
    _, _, out, err = canvas
    assert f"new column '{A2}'" in err and "creates a new assignment" in err
    assert "03_unsubmitted: no submission in the gradebook, not exported" in out


def test_moodle_import_file(moodle):
    status, table, _, _ = moodle
    assert status == 0
    assert table.header == [
        "First name", "Last name", "ID number", "Username", "Email address",
        f"Assignment: {A1} (Real)", A2,
    ]  # fmt: skip
    rows = by_login(table, "Username")
    # Hank and the other Gina have no submission: left out, their Moodle grades untouched.
    assert sorted(rows) == ["alice", "bob", "carol", "e.smith", "f.jones", "g.ruiz"]
    assert rows["alice"][-2:] == ["7", "5"]
    assert rows["bob"][-2:] == ["7", "2"]
    assert rows["carol"][-2:] == ["0", "-"]  # Moodle's own "no grade" mark, never 0
    assert rows["e.smith"][-2:] == ["7", "-"]  # e-mail local part, any case
    assert rows["f.jones"][-2:] == ["4.5", "-"]
    assert f"note: {A2}: no grade column in the roster" in moodle[3]
    assert f"note: {A1}: grades out of 10: the grade item's maximum grade in Moodle" in moodle[3]


def test_round_trip_gives_the_gradebook_scores(canvas, moodle):
    """Re-reading each exported file gives every matched student's nbgrader total."""
    login_of = {"alice": "alice", "bob": "BOB", "carol": "carol", "erin": "erin@uni.example"}
    login_of |= {"frank": "f.jones", "gina": "g.ruiz"}
    _, table, _, _ = canvas
    rows = by_login(table, "SIS Login ID")
    cols = {A1: table.column(f"{A1} (1234)"), A2: table.column(A2)}
    for name, scores in EXPECTED.items():
        for sid, points in scores.items():
            if sid != "dave":
                assert float(rows[login_of[sid]][cols[name]]) == pytest.approx(points)
    _, mtable, _, _ = moodle
    mrows = by_login(mtable, "Email address")
    assert float(mrows["frank.j@uni.example"][-2]) == EXPECTED[A1]["frank"]


def test_semicolon_roster_without_bom_and_assignment_filter(grading, tmp_path, capsys):
    rows = [list(r) for r in CANVAS_ROWS]
    rows[1][6] = "12,00"  # a decimal-comma locale; not the gradebook's maximum
    roster = write_csv(tmp_path / "r.csv", rows, delimiter=";", bom=False)
    status, table, _, err = export(grading, tmp_path, capsys, "canvas", roster, "--assignment", A1)
    assert status == 0 and table.delimiter == ";"
    assert table.header == CANVAS_ROWS[0]  # A2 not exported: no new column
    raw = (tmp_path / "out" / "canvas.csv").read_bytes()
    assert not raw.startswith(b"\xef\xbb\xbf") and b"\r\n" in raw
    assert b'"Martin, Alice"' not in raw  # ';' needs no quotes around the comma
    # Without the mapping file, frank has no row, and gina takes the row whose login is hers.
    assert "Frank Jones (frank)" in err
    assert by_login(table, "SIS Login ID")["gina"][table.column(f"{A1} (1234)")] == "9"
    assert f"'{A1} (1234)': Canvas says 12,00 points possible, the grades are out of 10" in err
    assert table.rows[0][6] == "12,00"  # Canvas's assignment is not changed


@pytest.mark.parametrize(
    "rows, extra, message",
    [
        ([["Name", "Grade"], ["x", "1"]], [], "not a Canvas gradebook export"),
        ([[f"HW {A1} (1234)" if h.startswith(A1) else h for h in CANVAS_ROWS[0]] + [f"{A1} v2"],
          *(r + [""] for r in CANVAS_ROWS[1:])], [], "several Canvas columns contain"),
        (CANVAS_ROWS, ["--assignment", "99_nope"], "not in the gradebook: 99_nope"),
    ],
)  # fmt: skip
def test_unusable_input_exits_2(grading, tmp_path, capsys, rows, extra, message):
    roster = write_csv(tmp_path / "r.csv", rows)
    status, table, _, err = export(grading, tmp_path, capsys, "canvas", roster, *extra)
    assert status == 2 and table is None and message in err


def test_no_gradebook_and_moodle_roster_without_identifiers(grading, tmp_path, capsys):
    roster = write_csv(tmp_path / "r.csv", MOODLE_ROWS)
    status, _, _, err = export(tmp_path, tmp_path, capsys, "moodle", roster)
    assert status == 2 and "no gradebook" in err
    bad = write_csv(tmp_path / "bad.csv", [r[:3] for r in MOODLE_ROWS])
    assert main(["--lms", "moodle", "--roster", str(bad), "--grading-dir", str(grading)]) == 2
    assert "'Username' or 'Email address'" in capsys.readouterr().err


def test_csv_reading_details(tmp_path):
    text = '\ufeffStudent,ID\r\n"Doe, ""JD"" Jane",7\r\n"two\nlines",8\r\n\r\nshort\r\n'
    table = parse(text.removeprefix("\ufeff"))
    assert table.header == ["Student", "ID"]
    assert table.rows == [['Doe, "JD" Jane', "7"], ["two\nlines", "8"], ["short", ""]]
    (tmp_path / "m.csv").write_text("frank;f.jones\nGina;g.ruiz\n")
    assert read_map(tmp_path / "m.csv") == {"frank": "f.jones", "gina": "g.ruiz"}
    assert [format_points(x) for x in (7.0, 7.5, 0.0, 1 / 3, None)] == [
        "7",
        "7.5",
        "0",
        "0.3333",
        "",
    ]


def test_canvas_manual_posting_row_and_missing_points_possible(grading, tmp_path, capsys):
    posting = ["", "", "", "", "", "", "Manual Posting", "", "", ""]
    roster = write_csv(tmp_path / "r.csv", [CANVAS_ROWS[0], posting, *CANVAS_ROWS[2:]])
    status, table, _, _ = export(grading, tmp_path, capsys, "canvas", roster)
    assert status == 0 and len(table.rows) == len(CANVAS_ROWS)  # a Points Possible row added
    a1, a2 = table.column(f"{A1} (1234)"), table.column(A2)
    assert table.rows[0][0].strip() == "Points Possible"
    assert (table.rows[0][a1], table.rows[0][a2]) == ("10", "5")
    assert table.rows[1] == [*posting, ""]  # kept as it was, not taken for a student
    assert by_login(table, "SIS Login ID")["alice"][a1] == "7"


def test_submissions_csv_tells_no_submission_from_zero(grading):
    """nbgrader's grades.csv writes 0.0 for both; submissions.csv beside it does not."""
    from autograder.grade.gradebook import export_grades

    export_grades(grading)
    rows = {
        (r["assignment"], r["student"]): r
        for r in csv.DictReader((grading / "submissions.csv").open())
    }
    assert rows[(A1, "carol")]["submitted"] == "yes" and rows[(A1, "carol")]["score"] == "0"
    assert rows[(A2, "carol")]["submitted"] == "no" and rows[(A2, "carol")]["score"] == ""
    assert {r["submitted"] for (a, _), r in rows.items() if a == "03_unsubmitted"} == {"no"}
    frank = rows[(A1, "frank")]
    assert (frank["raw_score"], frank["late_penalty"], frank["score"]) == ("5.5", "1", "4.5")
    plain = list(csv.DictReader((grading / "grades.csv").open()))
    assert {r["score"] for r in plain if r["assignment"] == "03_unsubmitted"} == {"0.0"}
