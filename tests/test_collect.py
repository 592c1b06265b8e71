"""make collect: an LMS's submissions download into nbgrader's layout, without trusting it.

The zips are built as the LMSs write them (Canvas's ``lib/content_zipper.rb``, Moodle's
``mod/assign/locallib.php``); the rosters as they export them. The end-to-end test of a Canvas
class (collect -> make grade -> make export) is in ``tests/test_canvas_term.py``.
"""

from __future__ import annotations

import csv
import io
import json
import os
import stat
import sys
import zipfile

import pytest

from autograder import samples
from autograder.collect import archive, canvas
from autograder.collect.cli import main
from autograder.course import ROOT
from autograder.export.csvio import Table

A = "01_one_hot_lookup"
NOTEBOOK = json.dumps(samples.build(A, {})).encode()
HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", f"{A} (1234)"]
ROSTER = [
    HEADER,
    ["    Points Possible", "", "", "", "", "10.00"],
    ["Martin, Alice", "101", "S101", "alice", "A", ""],
    ["Chen, Bob", "102", "S102", "bob", "A", ""],
    ["Smith_12, Carl", "12", "S012", "carl", "A", ""],  # his name ends in _12 before the ids
    ["Diaz, Carol", "103", "S103", "carol", "A", ""],
    ["Evil, Eve", "104", "S104", "../../etc", "A", ""],
    ["Student, Test", "110", "", "", "A", ""],
]


def write_csv(path, rows):
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\r\n").writerows(rows)
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path


def write_zip(path, members: dict[str, bytes], links: tuple[str, ...] = ()):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
        for name in links:  # a symbolic link as Info-ZIP stores one
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            z.writestr(info, "/etc/passwd")
    return path


def collect(tmp_path, capsys, members, rows=ROSTER, lms="canvas", links=()):
    zpath = write_zip(tmp_path / "subs.zip", members, links)
    roster = write_csv(tmp_path / "roster.csv", rows)
    grading = tmp_path / "grading"
    args = ["--lms", lms, "--zip", str(zpath), "--roster", str(roster), "--assignment", A]
    status = main([*args, "--grading-dir", str(grading)])
    out = capsys.readouterr()
    return status, grading, out.out, out.err


def placed(grading) -> dict[str, dict]:
    """student -> lms.json, for every notebook written."""
    return {
        p.parent.parent.name: json.loads((p.parent / "lms.json").read_text())
        for p in sorted((grading / "submitted").glob(f"*/{A}/{A}.ipynb"))
    }


@pytest.mark.parametrize(
    "name, user, late, display",
    [
        (f"martinalice_101_9001_{A}.ipynb", "101", False, f"{A}.ipynb"),
        (f"chenbob_LATE_102_9002_{A}-1.ipynb", "102", True, f"{A}-1.ipynb"),
        (f"chen-bob-late_102_9002_{A}.ipynb", "102", True, f"{A}.ipynb"),  # older Canvas
        (f"smith_12carl_12_9003_{A}.ipynb", "12", False, f"{A}.ipynb"),
        (f"diazcarol_103_9004_hw_1_2_{A}.ipynb", "103", False, f"hw_1_2_{A}.ipynb"),
        (f"müllerjörg_101_9005_{A}.ipynb", "101", False, f"{A}.ipynb"),
    ],
)
def test_canvas_file_names_are_read_as_canvas_writes_them(name, user, late, display):
    students = canvas.roster_students(Table(ROSTER[0], [list(r) for r in ROSTER[1:]]))
    found = canvas.identify((name,), students)
    assert found.problem is None
    assert (found.meta["user_id"], found.late, found.display) == (user, late, display)


@pytest.mark.parametrize(
    "name, says",
    [
        (f"anon_x7k2p_9001_{A}.ipynb", "anonymous grading"),
        (f"LATE_anon_x7k2p_9001_{A}.ipynb", "anonymous grading"),
        (f"ghost_999_9006_{A}.ipynb", "Canvas user 999 is not in the roster"),
        (f"{A}.ipynb", "not a name Canvas gives"),
    ],
)
def test_names_no_student_can_be_found_for(name, says):
    students = canvas.roster_students(Table(ROSTER[0], [list(r) for r in ROSTER[1:]]))
    assert says in canvas.identify((name,), students).problem


def test_a_class_zip_is_placed_by_login_and_everything_else_listed(tmp_path, capsys):
    members = {
        f"martinalice_101_9001_{A}.ipynb": NOTEBOOK,
        "martinalice_101_9002_notes.pdf": b"%PDF-1.4",
        f"chenbob_LATE_102_9003_{A}-1.ipynb": NOTEBOOK,
        "smith_12carl_12_9004_My Notebook.ipynb": NOTEBOOK,  # renamed: the only notebook
        "diazcarol_103_9005_02_sparse_backward.ipynb": NOTEBOOK,  # another assignment's
        f"evileve_104_9006_{A}.ipynb": NOTEBOOK,
        f"studenttest_110_9007_{A}.ipynb": NOTEBOOK,
        f"ghost_999_9008_{A}.ipynb": NOTEBOOK,
    }
    status, grading, out, err = collect(tmp_path, capsys, members)
    assert status == 0
    got = placed(grading)
    assert sorted(got) == ["alice", "bob", "carl"]
    assert got["bob"]["late"] is True and got["alice"]["late"] is False
    assert got["carl"]["file"] == "My Notebook.ipynb" and got["carl"]["user_id"] == "12"
    assert (grading / "submitted" / "bob" / A / f"{A}.ipynb").read_bytes() == NOTEBOOK
    assert not (grading / "submitted" / "bob" / A / "timestamp.txt").exists()  # no due date
    assert "notes.pdf: not a notebook" in out
    assert "uploaded to the wrong assignment" in err
    assert "'../../etc' cannot be a folder name" in err
    assert "no login for this student" in err and "Canvas user 999" in err
    assert "no due date for this assignment" in out
    listed = list(csv.DictReader((grading / "collected" / f"{A}.csv").open()))
    assert len(listed) == len(members)  # every file of the zip, placed or not, with the reason
    assert sorted(p.name for p in grading.iterdir()) == ["collected", "submitted"]
    # Collected again from the same zip: nothing changes, and it says so.
    status, _, out, _ = collect(tmp_path, capsys, members)
    assert status == 0 and "(0 new, 0 replaced, 3 unchanged)" in out


def test_unsafe_members_are_refused_and_links_never_followed(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(archive, "MAX_MEMBER_BYTES", 4096)
    members = {
        f"../martinalice_101_9001_{A}.ipynb": NOTEBOOK,
        f"/abs/chenbob_102_9002_{A}.ipynb": NOTEBOOK,
        f"C:\\diazcarol_103_9003_{A}.ipynb": NOTEBOOK,
        f"smith_12carl_12_9004_{A}.ipynb": b"{" + b" " * 8192 + b"}",
    }
    links = (f"martinalice_101_9005_{A}.ipynb",)
    status, grading, _, err = collect(tmp_path, capsys, members, links=links)
    assert status == 0 and placed(grading) == {}
    for why in ("climbs out of its folder", "an absolute name", "a symbolic link", "larger than"):
        assert why in err
    # A link planted inside the grading folder is not written through.
    monkeypatch.undo()
    outside = tmp_path / "outside"
    outside.mkdir()
    (grading / "submitted").mkdir(parents=True)
    (grading / "submitted" / "alice").symlink_to(outside, target_is_directory=True)
    status, _, _, err = collect(tmp_path, capsys, {f"martinalice_101_9001_{A}.ipynb": NOTEBOOK})
    assert status == 1 and "symbolic link" in err and list(outside.iterdir()) == []


def test_a_grading_folder_git_would_add_is_refused(tmp_path, capsys):
    zpath = write_zip(tmp_path / "subs.zip", {f"martinalice_101_9001_{A}.ipynb": NOTEBOOK})
    roster = write_csv(tmp_path / "roster.csv", ROSTER)
    inside = ROOT / "term2-collect-test"
    args = ["--lms", "canvas", "--zip", str(zpath), "--roster", str(roster), "--assignment", A]
    assert main([*args, "--grading-dir", str(inside)]) == 2
    assert "one `git add` away" in capsys.readouterr().err and not inside.exists()
    assert main([*args, "--grading-dir", str(tmp_path / "g"), "--assignment", "99_nope"]) == 2
    bad = write_csv(tmp_path / "bad.csv", [["Name", "Grade"], ["x", "1"]])
    args[5] = str(bad)
    assert main([*args, "--grading-dir", str(tmp_path / "g")]) == 2
    assert "not a Canvas gradebook export" in capsys.readouterr().err


def test_moodle_download_with_its_grading_worksheet(tmp_path, capsys):
    worksheet = [
        ["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade"],
        ["Participant 4711", "Alice Martin", "alice@uni.example", "Submitted", "", "10.00"],
        ["Participant 4712", "Bob Chen", "bob@uni.example", "Submitted", "", "10.00"],
        ["Participant 4713", "Carol Diaz", "carol@uni.example", "No submission", "", "10.00"],
    ]
    members = {
        f"Alice Martin_4711_assignsubmission_file_/{A}.ipynb": NOTEBOOK,  # Moodle 3.1 and later
        f"Bob Chen_4712_assignsubmission_file_{A}.ipynb": NOTEBOOK,  # earlier: flat
        "Bob Chen_4712_assignsubmission_onlinetext_/onlinetext.html": b"<p>hi</p>",
        f"Nobody_4799_assignsubmission_file_/{A}.ipynb": NOTEBOOK,
    }
    status, grading, out, err = collect(tmp_path, capsys, members, worksheet, "moodle")
    assert status == 0
    got = placed(grading)
    assert sorted(got) == ["alice@uni.example", "bob@uni.example"]
    assert got["bob@uni.example"]["participant"] == "4712"
    assert "onlinetext.html: not a notebook" in out
    assert "participant 4799 is not in the grading worksheet" in err


def test_plain_nbgrader_zip_collect_reads_the_same_names(monkeypatch):
    """nbgrader's own FileNameCollectorPlugin, with the pattern nbgrader_config.py gives it."""
    # loading the config puts the checkout on PYTHONPATH and sys.path: undone after the test
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))  # restored as it was
    monkeypatch.setattr(sys, "path", list(sys.path))
    from nbgrader.plugins.zipcollect import FileNameCollectorPlugin
    from traitlets.config.loader import PyFileConfigLoader

    cfg = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    assert cfg.FileNameCollectorPlugin.named_regexp == canvas.NBGRADER_PATTERN
    assert cfg.ZipCollectApp.downloaded_directory.startswith(("grading", ".."))
    plugin = FileNameCollectorPlugin(config=cfg)
    folder = "/course/grading/downloaded/A/extracted/subs"
    cases = {
        f"martinalice_101_9001_{A}.ipynb": ("101", A),
        f"chenbob_LATE_102_9002_{A}-1.ipynb": ("102", A),
        f"diazcarol_103_9004_hw_1_2_{A}.ipynb": ("103", f"hw_1_2_{A}"),
    }
    for name, (student, file_id) in cases.items():
        info = plugin.collect(f"{folder}/{name}")
        assert (info["student_id"], info["file_id"]) == (student, file_id)
    assert plugin.collect(f"{folder}/martinalice_101_9003_notes.pdf") is None
