"""`make semester` at a small size (6 students, 3 assignments, about a minute on 2 cores), checked
as an instructor would check a term: every roster student has a row in each LMS file, no grade
is dropped or cleared, the late, resubmitted, broken, stale and missing work shows as such, the
planted copies are flagged, and nothing is written outside the semester's folder.

The expected grades come from the samples (a mistake loses exactly the points of the cells it
fails, tests/test_fairness.py) and the class the command wrote down (class.csv), never from the
files checked."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from autograder import nb, samples
from autograder.course import ROOT, source_notebook
from autograder.export.csvio import format_points, read_table
from autograder.semester import cli, cohort, lms

from .test_canvas_term import tree

pytestmark = pytest.mark.slow

NAMES = ["02_sparse_backward", "03_fancy_indexing_trap", "04_bags"]
STUDENTS = 6


def _rows(path: Path) -> list[dict]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    folder = tmp_path_factory.mktemp("term") / "semester"
    before = tree(ROOT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    cmd = ["make", "-s", "-o", ".venv/.installed", "semester", f"STUDENTS={STUDENTS}"]
    cmd += [f"SEMESTER={folder}", f"ASSIGNMENT={' '.join(NAMES)}", "JOBS=2"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return {"folder": folder, "out": proc.stdout + proc.stderr, "before": before,
            "class": _rows(folder / "class.csv")}  # fmt: skip


def expected(row: dict) -> str:
    """The grade the LMS must receive for one row of class.csv (penalty_method = zero)."""
    a, kind = row["assignment"], row["case"]
    pts = nb.points(nb.read(source_notebook(a)))
    if kind in (cohort.ABSENT, cohort.MISSING):
        return lms.HAND_GRADE if kind == cohort.ABSENT else ""
    if kind in (cohort.LATE, cohort.BROKEN, cohort.STUB):
        return "0"
    lost = samples.module(a).MISTAKES[row["sample"]].fails if kind == cohort.MISTAKE else ()
    return format_points(sum(pts.values()) - sum(pts[g] for g in lost))


def test_every_case_of_the_term_occurs(term):
    kinds = {r["case"] for r in term["class"]}
    assert kinds == set(cohort.PATTERN) | {cohort.MISSING}
    assert len(term["class"]) == STUDENTS * len(NAMES)


def test_canvas_has_every_roster_row_and_every_grade(term):
    roster = read_table(term["folder"] / "lms" / "canvas_gradebook.csv")
    table = read_table(term["folder"] / "export" / "canvas.csv")
    assert table.header == roster.header
    assert [r[:5] for r in table.rows] == [r[:5] for r in roster.rows]  # Test Student included
    login = {r[3]: r for r in table.rows}
    for row in term["class"]:
        col = table.column(lms.canvas_column(NAMES.index(row["assignment"]), row["assignment"]))
        assert login[row["student"]][col] == expected(row), row


def test_moodle_has_every_student_with_work_and_every_grade(term):
    table = read_table(term["folder"] / "export" / "moodle.csv")
    users = {r[table.column("Username")]: r for r in table.rows}
    handed_in = {r["student"] for r in term["class"] if r["case"] != cohort.MISSING}
    # Moodle's file leaves out whoever has nothing to import, and says so.
    assert set(users) == handed_in
    assert "1 roster student(s) left out: no submission here" in term["out"]
    for row in term["class"]:
        if row["student"] in users:
            want = expected(row) or "-"
            assert users[row["student"]][table.column(lms.moodle_column(row["assignment"]))] == want


def test_late_broken_and_stale_work_is_named_in_the_report(term):
    attention = {(r["assignment"], r["student"], r["kind"]): r["detail"]
                 for r in _rows(term["folder"] / "report" / "attention.csv")}  # fmt: skip
    page = (term["folder"] / "report" / "index.html").read_text(encoding="utf-8")
    named = {cohort.LATE: "late", cohort.BROKEN: "bad", cohort.OLDER: "stale"}
    for row in term["class"]:
        kind = named.get(row["case"])
        key = (row["assignment"], row["student"], kind)
        assert (key in attention) == (kind is not None), (row, attention)
        if kind:
            assert row["student"] in page
    for (a, _, kind), detail in attention.items():
        want = {"late": "marked late by the LMS; penalty", "bad": "not valid JSON",
                "stale": f"release {nb.stamp_label(cohort.first_release(a))}"}[kind]  # fmt: skip
        assert want in detail, (a, kind, detail)


def test_late_work_keeps_its_raw_score_beside_the_penalty(term):
    subs = {(r["student"], r["assignment"]): r for r in _rows(term["folder"] / "submissions.csv")}
    late = [r for r in term["class"] if r["case"] == cohort.LATE]
    assert late
    for row in late:
        sub = subs[(row["student"], row["assignment"])]
        made = row["sample"] in samples.module(row["assignment"]).MISTAKES
        raw = expected({**row, "case": cohort.MISTAKE if made else cohort.CORRECT})
        assert float(sub["raw_score"]) == float(raw) == float(sub["late_penalty"]) > 0, sub
        assert sub["score"] == "0"


def test_the_resubmission_replaced_the_first_download(term):
    (row,) = [r for r in term["class"] if r["case"] == cohort.RESUBMITTED]
    a = row["assignment"]
    placed = _rows(term["folder"] / "collected" / f"{a}.csv")
    mine = [r for r in placed if r["student"] == row["student"]]
    assert [(r["file"], r["status"]) for r in mine] == [(f"{a}-1.ipynb", "replaced")]
    meta = json.loads((term["folder"] / "submitted" / row["student"] / a / "lms.json").read_text())
    assert meta["file"] == f"{a}-1.ipynb" and meta["zip"] == f"{a}_final.zip"


def test_missing_and_absent_students_keep_what_the_lms_has(term):
    for a in NAMES:
        none = sum(r["case"] in (cohort.ABSENT, cohort.MISSING) for r in term["class"]
                   if r["assignment"] == a)  # fmt: skip
        kept = sum(r["case"] == cohort.ABSENT for r in term["class"] if r["assignment"] == a)
        line = f"{a}: {none + 1} roster student(s) without a matched submission (left as the "
        assert f"{line}roster has it; {kept} hold a grade, kept)" in term["out"]  # + Test Student


def test_planted_copies_are_flagged(term):
    flagged = {(r["assignment"], r["student_a"], r["student_b"]): r["flagged"]
               for r in _rows(term["folder"] / "report" / "similarity.csv")}  # fmt: skip
    copies = [r for r in term["class"] if r["case"] == cohort.COPY]
    assert copies
    for row in copies:
        a, b = sorted([row["student"], row["copy_of"]])
        assert flagged[(row["assignment"], a, b)] == "yes", row


def test_it_prints_the_wall_time_and_notebooks_per_second(term):
    handed = sum(bool(r["file"]) for r in term["class"])
    m = re.search(r"(\d+) notebooks graded with 2 job\(s\): wall time ([\d.]+) s \(([\d.]+) "
                  r"notebooks/s\)", term["out"])  # fmt: skip
    assert m and int(m.group(1)) == handed, term["out"][-2000:]
    assert float(m.group(3)) == pytest.approx(handed / float(m.group(2)), rel=0.02)
    timing = json.loads((term["folder"] / "timing.json").read_text())
    assert timing["notebooks"] == handed and timing["assignments"] == NAMES


def test_nothing_is_written_outside_the_semester_folder(term):
    assert tree(ROOT) == term["before"]


@pytest.mark.parametrize("where", ["grading", "exercises", "not-a-semester"])
def test_it_refuses_a_folder_it_must_not_empty(where, tmp_path, capsys):
    folder = ROOT / where if where != "not-a-semester" else tmp_path
    (tmp_path / "notes.txt").write_text("mine\n")
    before = tree(folder) if folder.exists() else None
    assert cli.main(["--students", "6", "--semester-dir", str(folder)]) == 2
    assert "semester:" in capsys.readouterr().err
    assert (tree(folder) if folder.exists() else None) == before
