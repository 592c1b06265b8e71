"""A Canvas class, end to end, with the commands an instructor runs: collect -> grade -> export.

Canvas's "Download Submissions" zip of a small class (built as ``lib/content_zipper.rb`` names
files): a student on time with a stray PDF beside her notebook, one late whose notebook was
resubmitted (``-1``), one whose browser renamed it, one with only a PDF, one with no submission
whose Canvas cell already holds 7.00, and the Test Student. The due date is set with nbgrader's
own command, the late policy (penalty_method = zero) in a Jupyter config folder, as an
instructor would. Everything runs through ``make`` into a grading folder of its own: every
student must land in the right row, existing grades and Points Possible stay as Canvas has them,
and nothing is written outside that grading folder.
"""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from autograder import nb, samples
from autograder.course import ROOT, source_notebook
from autograder.export.csvio import read_table

pytestmark = pytest.mark.slow

A = "01_one_hot_lookup"
COLUMN = f"Exercise {A} (1234)"
HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Quiz 1 (991)", COLUMN]
HEADER += ["Current Score", "Final Grade"]
ROSTER = [
    HEADER,
    ["    Points Possible", "", "", "", "", "3.00", "10.00", "(read only)", "(read only)"],
    ["Martin, Alice", "101", "S101", "alice", "Sec A", "3.00", "", "", ""],
    ["Chen, Bob", "102", "S102", "bob@uni.example", "Sec A", "2.00", "", "", ""],
    ["Diaz, Carol", "103", "S103", "carol", "Sec B", "", "", "", ""],
    ["Evans, Dave", "104", "S104", "dave", "Sec B", "1.00", "7.00", "70", "C"],
    ["Smith, Erin", "105", "S105", "erin", "Sec B", "", "", "", ""],
    ["Student, Test", "110", "", "", "Sec A", "", "", "", ""],
]
MISTAKES = samples.module(A).MISTAKES
KEEP = {".git", ".venv", "__pycache__", ".pytest_cache", ".ruff_cache", ".hypothesis"}


def points(mistake: str | None) -> float:
    pts = nb.points(nb.read(source_notebook(A)))
    return sum(pts.values()) - sum(pts[g] for g in (MISTAKES[mistake].fails if mistake else ()))


def canvas_zip(path: Path) -> Path:
    def notebook(sources):
        return nb.dumps(samples.build(A, sources)).encode()

    files = {
        f"martinalice_101_5001_{A}.ipynb": notebook({}),
        "martinalice_101_5002_scratch notes.pdf": b"%PDF-1.4 scratch",
        f"chenbob_LATE_102_5003_{A}-1.ipynb": notebook(MISTAKES["float64 result"].sources),
        f"diazcarol_103_5004_{A} (1).ipynb": notebook(MISTAKES["off by one"].sources),
        "smitherin_105_5005_my answers.pdf": b"%PDF-1.4 answers",
    }
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return path


def tree(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under ``folder`` (caches and .git left out): size and mtime."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if d not in KEEP]
        for name in [*dirnames, *filenames]:
            p = Path(dirpath) / name
            st = p.lstat()
            out[str(p.relative_to(folder))] = (st.st_size if p.is_file() else 0, st.st_mtime_ns)
    return out


def make(*args: str, env: dict) -> subprocess.CompletedProcess:
    cmd = ["make", "--no-print-directory", "-o", ".venv/.installed", *args]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (
        f"make {' '.join(args)}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    return proc


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    """The whole term for one assignment; returns the folders and what each step printed."""
    base = tmp_path_factory.mktemp("term")
    downloads, grading, jupyter = base / "Downloads", base / "grading", base / "jupyter"
    downloads.mkdir()
    jupyter.mkdir()
    (jupyter / "nbgrader_config.py").write_text(
        'c = get_config()  # noqa: F821\nc.LateSubmissionPlugin.penalty_method = "zero"\n'
    )
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\r\n").writerows(ROSTER)
    (downloads / "gradebook.csv").write_bytes(b"\xef\xbb\xbf" + buf.getvalue().encode())
    canvas_zip(downloads / "submissions.zip")
    before, inputs = tree(ROOT), tree(downloads)
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(jupyter), "COURSE_GRADING_DIR": str(grading)}
    due = subprocess.run(
        [sys.executable, "-m", "nbgrader", "db", "assignment", "add", A,
         "--duedate=2026-03-02 17:00:00 America/New_York"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert due.returncode == 0, due.stderr[-2000:]
    g = f"GRADING={grading}"
    roster = f"ROSTER={downloads / 'gradebook.csv'}"
    steps = {
        "collect": make("collect", "LMS=canvas", f"ZIP={downloads / 'submissions.zip'}", roster,
                        f"ASSIGNMENT={A}", g, env=env),
        "grade": make("grade", f"ASSIGNMENT={A}", "JOBS=2", g, env=env),
        "export": make("export", "LMS=canvas", roster, g, env=env),
    }  # fmt: skip
    return {"grading": grading, "before": before, "inputs": inputs, "downloads": downloads, **steps}


def test_every_student_lands_in_the_right_row(term):
    table = read_table(term["grading"] / "export" / "canvas.csv")
    col = table.column(COLUMN)
    got = {row[3]: row[col] for row in table.rows[1:]}
    assert got == {
        "alice": f"{points(None):g}",
        "bob@uni.example": "0",  # late: penalty_method zero, applied by nbgrader's plugin
        "carol": f"{points('off by one'):g}",
        "dave": "7.00",  # no submission: Canvas's grade kept
        "erin": "",  # only a PDF: nothing placed, nothing written
        "": "",  # the Test Student
    }
    assert table.rows[0][col] == "10.00"  # Points Possible as Canvas has it (not the maximum)
    for original, row in zip(ROSTER[1:], table.rows, strict=True):
        assert [c for i, c in enumerate(row) if i != col] == [
            c for i, c in enumerate(original) if i != col
        ]
    total = f"{points(None):g}"  # the notebook's maximum (not 10)
    assert (
        f"Canvas says 10.00 points possible, the grades are out of {total}" in term["export"].stderr
    )


def test_collect_placed_renamed_and_resubmitted_notebooks_and_listed_the_rest(term):
    submitted = term["grading"] / "submitted"
    assert sorted(p.name for p in submitted.iterdir()) == ["alice", "bob@uni.example", "carol"]
    out = term["collect"].stdout
    assert "3 notebook(s) placed" in out and "1 marked late by canvas" in out
    assert "scratch notes.pdf: not a notebook" in out and "my answers.pdf: not a notebook" in out
    stamp = (submitted / "bob@uni.example" / A / "timestamp.txt").read_text().strip()
    assert stamp == "2026-03-02 22:00:01.000000 UTC"  # one second after 17:00 New York time


def test_the_late_penalty_is_shown_and_recorded(term):
    grading = term["grading"]
    rows = {r["student"]: r for r in csv.DictReader((grading / "submissions.csv").open())}
    bob = rows["bob@uni.example"]
    assert float(bob["raw_score"]) == points("float64 result") == float(bob["late_penalty"])
    assert bob["score"] == "0" and bob["seconds_late"] == "1"
    assert rows["alice"]["late_penalty"] == "0" and rows["alice"]["score"] == f"{points(None):g}"
    page = (grading / "feedback" / "bob@uni.example" / A / f"{A}.html").read_text()
    assert "Your LMS marked this submission late" in page
    assert f"so your grade is 0 / {points(None):g}" in page
    assert "penalty_method = zero" in term["grade"].stdout


def test_nothing_is_written_outside_the_grading_folder(term):
    assert tree(ROOT) == term["before"]
    assert tree(term["downloads"]) == term["inputs"]


def test_the_guard_restores_a_late_penalty_the_grader_did_not_decide(term):
    """A submission (run unsandboxed) that wipes its own penalty is caught and undone."""
    from nbgrader.api import Gradebook

    from autograder.course import COURSE_ID
    from autograder.grade import guard
    from autograder.grade.results import SubmissionResult

    url = f"sqlite:///{term['grading'] / 'gradebook.db'}"
    snap = guard.snapshot(url, COURSE_ID)
    with Gradebook(url, course_id=COURSE_ID) as gb:
        gb.find_submission_notebook(A, A, "bob@uni.example").late_submission_penalty = 0.0
        gb.db.commit()
    decided = points("float64 result")
    result = SubmissionResult(0, "bob@uni.example", A, late_penalty=decided)
    problems = guard.verify(url, COURSE_ID, snap, [result])
    assert any("late penalty 0.0, the grader decided" in p for p in problems)
    with Gradebook(url, course_id=COURSE_ID) as gb:
        assert (
            gb.find_submission_notebook(A, A, "bob@uni.example").late_submission_penalty == decided
        )
