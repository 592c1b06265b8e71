"""``python -m autograder.semester [--students N] [--semester-dir DIR] [--assignment A ...]
[--jobs N | --scheduler ADDRESS] [--no-sandbox]`` (``make semester STUDENTS=N``).

A whole term at once, in a folder of its own (default ``semester/``, gitignored): the class
(:mod:`.cohort`), its Canvas and Moodle rosters and one Canvas download per assignment before
and after the resubmissions (:mod:`.lms`), each assignment's due date in the gradebook and a late
policy (``penalty_method = zero``, in the folder's own Jupyter config), then the instructor's
commands, in-process: ``make collect`` (both downloads), ``make grade`` (the local pool, or the
Dask cluster with ``--scheduler``), ``make export`` for Canvas and for Moodle, and ``make
report``. Prints the wall time and the notebooks graded per second; ``class.csv`` says who handed
in what (the planted copies included), ``timing.json`` the times.

Exit status 0 when every step ran; otherwise the first failing step's status (2 for a folder it
will not use: the real grading/, a tracked one, or a non-empty one it did not make).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import datetime as dt
import json
import os
import shutil
import sys
import time
from pathlib import Path

from ..collect.cli import CollectError, check_grading_folder
from ..collect.cli import main as collect
from ..course import COURSE_ID, GRADING, ROOT, assignments
from ..export.__main__ import main as export
from ..grade.cli import default_jobs
from ..grade.cli import main as grade
from ..grade.gradebook import db_url
from ..report.cli import main as report
from . import cohort, lms

MARKER = ".semester"  # a folder holding it was made here, and may be made anew
DUE = dt.datetime(2026, 9, 7, 21, 0)  # the first due date (UTC); one assignment a week
LATE_POLICY = 'c = get_config()  # noqa: F821\nc.LateSubmissionPlugin.penalty_method = "zero"\n'


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m autograder.semester", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--students", type=int, default=200, help="class size (at least 6)")
    p.add_argument("--semester-dir", type=Path, default=ROOT / "semester", help="default semester/")
    p.add_argument("--assignment", action="append", default=[], help="repeatable; default all")
    p.add_argument("--jobs", type=int, default=default_jobs(), help="local grading workers")
    p.add_argument("--scheduler", help="grade on this Dask cluster (make grade SCHEDULER=...)")
    p.add_argument("--no-sandbox", action="store_true", help="grade without bubblewrap")
    args = p.parse_args(argv)
    if args.students < 6:
        p.error("--students: at least 6, so that every case of the term occurs")
    unknown = set(args.assignment) - set(assignments())
    if unknown:
        p.error(f"no such assignment: {', '.join(sorted(unknown))}")
    args.assignment = [a for a in assignments() if a in args.assignment] or assignments()
    return args


def fresh_folder(folder: Path) -> Path:
    """The semester's folder, emptied: never the real grading/, the repository or a tracked
    folder (collect's own rule), nor a non-empty folder this command did not make."""
    folder = folder.resolve()
    if folder in (ROOT.resolve(), GRADING.resolve()) or GRADING.resolve() in folder.parents:
        raise CollectError(f"{folder} is the course's own: choose a folder of its own")
    check_grading_folder(folder)
    if folder.exists() and any(folder.iterdir()):
        if not (folder / MARKER).is_file():
            raise CollectError(f"{folder} is not empty and not a semester's: choose another")
        shutil.rmtree(folder)
    (folder / "jupyter").mkdir(parents=True)
    (folder / MARKER).write_text("made by python -m autograder.semester; rebuilt on each run\n")
    (folder / "jupyter" / "nbgrader_config.py").write_text(LATE_POLICY)
    return folder


def set_due_dates(folder: Path, names: list[str]) -> None:
    """What `nbgrader db assignment add A --duedate=...` does, for every assignment."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url(folder), course_id=COURSE_ID) as gb:
        for j, a in enumerate(names):
            gb.update_or_create_assignment(a, duedate=DUE + dt.timedelta(weeks=j))


def write_class(folder: Path, names: list[str], works: list) -> dict:
    """The rosters, the downloads and class.csv; returns {assignment: [zip paths]}."""
    by_student = {}
    for w in works:
        by_student.setdefault(w.student, []).append(w)
    lms.canvas_roster(folder / "lms" / "canvas_gradebook.csv", names, by_student)
    lms.moodle_roster(folder / "lms" / "moodle_grades.csv", names, by_student)
    zips = {}
    for a in names:
        mine = [w for w in works if w.assignment == a]
        zips[a] = [folder / "lms" / f"{a}_{t}.zip" for t in ("first", "final")]
        for path, final in zip(zips[a], (False, True), strict=True):
            lms.canvas_zip(path, mine, final)
    with (folder / "class.csv").open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["student", "name", "assignment", "case", "sample", "copy_of", "file"])
        for w in works:
            file = lms.canvas_name(w, True) if w.final is not None else ""
            name = f"{w.student.first} {w.student.last}"
            out.writerow([w.student.login, name, w.assignment, w.case, w.sample, w.copy_of, file])
    return zips


def collect_all(folder: Path, zips: dict) -> int:
    """make collect for each download, first then final (its output in logs/collect.log)."""
    roster = folder / "lms" / "canvas_gradebook.csv"
    (folder / "logs").mkdir(exist_ok=True)
    with (folder / "logs" / "collect.log").open("w", encoding="utf-8") as log:
        for a, paths in zips.items():
            for path in paths:
                argv = ["--lms", "canvas", "--zip", str(path), "--roster", str(roster)]
                argv += ["--assignment", a, "--grading-dir", str(folder)]
                with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                    code = collect(argv)
                if code:
                    return code
    print(f"collected {2 * len(zips)} Canvas download(s): {folder / 'logs' / 'collect.log'}")
    return 0


def steps(args, folder: Path, zips: dict) -> list:
    """(name, callable returning an exit status), in the order an instructor runs them."""
    g = ["--grading-dir", str(folder)]
    how = ["--scheduler", args.scheduler] if args.scheduler else ["--jobs", str(args.jobs)]
    how += ["--no-sandbox"] if args.no_sandbox else []
    only = [x for a in args.assignment for x in ("--assignment", a)]
    rosters = {"canvas": "canvas_gradebook.csv", "moodle": "moodle_grades.csv"}
    out = [("collect", lambda: collect_all(folder, zips)), ("grade", lambda: grade(g + how + only))]
    for name, roster in rosters.items():
        argv = ["--lms", name, "--roster", str(folder / "lms" / roster), *g, *only]
        out.append((f"export {name}", lambda argv=argv: export(argv)))
    out.append(("report", lambda: report(g)))
    return out


def summary(args, notebooks: int, times: dict) -> str:
    where = f"on the cluster at {args.scheduler}" if args.scheduler else f"with {args.jobs} job(s)"
    wall, graded = times["total"], times["grade"]
    return (
        f"semester: {args.students} students, {len(args.assignment)} assignment(s), {notebooks} "
        f"notebooks graded {where}: wall time {wall:.1f} s ({notebooks / wall:.2f} notebooks/s); "
        f"make grade {graded:.1f} s ({notebooks / graded:.2f} notebooks/s)"
    )


def main(argv=None) -> int:
    args = parse_args(argv)
    start = time.monotonic()
    try:
        folder = fresh_folder(args.semester_dir)
    except CollectError as e:
        print(f"semester: {e}", file=sys.stderr)
        return 2
    # nbgrader, as make grade starts it, reads the late policy from this folder's config alone.
    with _environ(JUPYTER_CONFIG_DIR=str(folder / "jupyter")):
        set_due_dates(folder, args.assignment)
        works = cohort.plan(args.students, args.assignment)
        zips = write_class(folder, args.assignment, works)
        times = {"build": time.monotonic() - start}
        for name, step in steps(args, folder, zips):
            t = time.monotonic()
            code = step()
            times[name] = time.monotonic() - t
            if code:
                print(f"semester: {name} failed (exit status {code})", file=sys.stderr)
                return code
    times["total"] = time.monotonic() - start
    notebooks = sum(w.final is not None for w in works)
    line = summary(args, notebooks, times)
    record = {"students": args.students, "assignments": args.assignment, "notebooks": notebooks}
    (folder / "timing.json").write_text(json.dumps({**record, "seconds": times}, indent=1) + "\n")
    print(f"\n{line}\nclass: {folder / 'class.csv'}; report: {folder / 'report' / 'index.html'}")
    return 0


@contextlib.contextmanager
def _environ(**values):
    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
