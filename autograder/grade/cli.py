"""`make grade`: grade every submission, in parallel, with the verdict taken out of the kernel.

    python -m autograder.grade [--jobs N] [--assignment A] [--submitted DIR] [--grading-dir DIR]
                               [--memory-gib G] [--cell-timeout S] [--notebook-budget S]
                               [--no-sandbox] [--scheduler ADDRESS]

Input: nbgrader's layout, ``grading/submitted/<student>/<assignment>/<assignment>.ipynb``.
Output (in ``grading/``): the gradebook (``gradebook.db``), ``grades.csv``, ``test_report.csv``,
``autograded/<student>/<a>/<a>.ipynb`` and ``feedback/<student>/<a>/<a>.html``.

Each submission is graded by one of N long-lived worker processes: its code runs in a sandboxed,
memory-capped kernel (autograder/grade/sandbox.py) that only computes the student's outputs for
the inputs it is handed; the worker judges them against the reference. Only this process writes
the gradebook.

Exit status: 0 when every submission was graded or refused with a reason (a bad submission gets
zeros and is named); 1 when grading itself failed for some submission; 2 for a usage error or a
second run on the same grading folder; 3 when the sandbox cannot start here: nothing is graded,
the reason and the fix are printed (opt out explicitly with --no-sandbox, NO_SANDBOX=1 for make,
or COURSE_GRADE_NO_SANDBOX=1).

With ``--scheduler ADDRESS`` the same grading runs on a Dask cluster's workers instead of the
local pool (:mod:`.cluster`); exit status 4 there when the cluster cannot grade this course.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import shutil
import stat
import sys
import tempfile
import threading
import time
from pathlib import Path

from ..course import COURSE_ID, GRADING, assignments
from . import gradebook, guard, late, report
from .cluster import add_arguments as add_cluster_arguments
from .pool import run_pool
from .progress import Progress
from .results import ERROR, Job
from .sandbox import GIB, Limits, no_sandbox_requested, probe, refusal
from .settings import Settings

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NO_SANDBOX = 0, 1, 2, 3


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _visible_dirs(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))


def _timestamp(adir: Path) -> str | None:
    ts = adir / "timestamp.txt"
    if ts.is_file() and not ts.is_symlink():
        return ts.read_text(encoding="utf-8", errors="replace")[:64].strip() or None
    return None


def discover(submitted: Path, only: list[str] | None) -> tuple[list[Job], list[str]]:
    """Every <student>/<assignment> folder of a known assignment, in a stable order."""
    known = set(assignments())
    jobs, skipped = [], []
    if not submitted.is_dir():
        return jobs, skipped
    for sdir in _visible_dirs(submitted):
        for adir in _visible_dirs(sdir):
            a = adir.name
            if only and a not in only:
                continue
            if a not in known:
                skipped.append(f"{sdir.name}/{a}: no such assignment in solutions/")
                continue
            jobs.append(Job(len(jobs), sdir.name, a, adir / f"{a}.ipynb", _timestamp(adir)))
    return jobs, skipped


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=default_jobs(),
        help="worker processes (default: the cores)",
    )
    p.add_argument(
        "--assignment", "-a", action="append", help="grade only this assignment (repeatable)"
    )
    p.add_argument(
        "--grading-dir",
        type=Path,
        default=GRADING,
        help="gradebook, reports, feedback (default grading/)",
    )
    p.add_argument("--submitted", type=Path, help="submissions (default <grading-dir>/submitted)")
    p.add_argument(
        "--memory-gib", type=float, default=4.0, help="memory cap per kernel (address space)"
    )
    p.add_argument(
        "--cell-timeout", type=float, default=20.0, help="seconds per cell and per hidden check"
    )
    p.add_argument(
        "--notebook-budget",
        type=float,
        default=60.0,
        help="seconds per notebook, all cells and checks",
    )
    p.add_argument(
        "--no-sandbox",
        action="store_true",
        help="grade WITHOUT bubblewrap (explicit opt-out; reports and feedback say so)",
    )
    add_cluster_arguments(p)  # --scheduler: grade on a Dask cluster (autograder/grade/cluster.py)
    return p.parse_args(argv)


def _lock(grading_dir: Path):
    """An exclusive lock on the grading folder, held until the process exits; None if taken."""
    lock = open(grading_dir / ".grade.lock", "w")  # noqa: SIM115 - held until the process exits
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return None
    return lock


def sandbox_decision(no_sandbox: bool) -> tuple[bool, str | None]:
    """(sandboxed, None) or (False, None) when the instructor opted out, or (False, refusal)."""
    if no_sandbox or no_sandbox_requested():
        print(
            "WARNING: grading WITHOUT the sandbox, as asked: student code can read and write this "
            "machine's files. Reports and feedback say so.",
            file=sys.stderr,
        )
        return False, None
    ok, why = probe()
    return (True, None) if ok else (False, refusal(why))


def _open_cluster(args):
    """--scheduler: (session, None) once every worker passed its checks, or (None, exit status)."""
    from . import cluster

    try:
        return cluster.open_session(args), None
    except cluster.Refused as exc:
        print(exc, file=sys.stderr)
        return None, exc.code


def _prepare_in_background(grading_dir: Path, names: list[str]) -> tuple[threading.Thread, dict]:
    """The gradebook's structure is prepared while the workers grade (nbgrader takes seconds)."""
    prep: dict = {}

    def target():
        try:
            prep["done"] = gradebook.prepare(grading_dir, names)
        except Exception as exc:  # noqa: BLE001
            prep["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, prep


class _Before:
    """What must happen before the first submission is handed to a worker: the gradebook's
    snapshot (before any student code runs), then its set-up in the background. Called once the
    workers are starting, so their start-up (imports, references, first kernels) overlaps it."""

    def __init__(self, grading_dir: Path, names: list[str]):
        self.grading_dir, self.names = grading_dir, names
        self.snap, self.prep, self.thread = None, {}, None
        self.done_at = self.last_result = None  # when jobs could go out; the last result came

    def __call__(self) -> None:
        if self.thread is None:
            self.snap = _snapshot(self.grading_dir)
            self.thread, self.prep = _prepare_in_background(self.grading_dir, self.names)
            self.done_at = time.monotonic()


def _grade(jobs, names, args, grading_dir: Path, sandboxed: bool, before):
    run_root = Path(tempfile.mkdtemp(prefix="course-grade-", dir="/tmp"))
    os.chmod(run_root, 0o700)
    settings = Settings(
        run_root=run_root,
        grading_dir=grading_dir,
        limits=Limits(memory_bytes=int(args.memory_gib * GIB)),
        cell_timeout=args.cell_timeout,
        notebook_budget=args.notebook_budget,
        sandboxed=sandboxed,
    )
    n_workers = max(1, min(args.jobs, len(jobs)))
    print(
        f"grading {len(jobs)} submission(s) of {', '.join(names)} with {n_workers} worker(s); "
        f"sandbox: {'bubblewrap' if sandboxed else 'NONE (opted out)'}; memory cap "
        f"{args.memory_gib:g} GiB; {args.cell_timeout:g} s per cell, {args.notebook_budget:g} s per notebook",
        file=sys.stderr,
    )
    try:
        progress = Progress(len(jobs))
        results = run_pool(jobs, settings, n_workers, names, progress, before)
        before.last_result = progress.last_at
        return results, n_workers
    finally:
        shutil.rmtree(run_root, ignore_errors=True)


def _snapshot(grading_dir: Path) -> dict | Exception:
    """The guarded columns of the gradebook before any student code runs ({} on a fresh one);
    the exception when the gradebook cannot be read (then it will not be written either)."""
    if not (grading_dir / "gradebook.db").exists():
        return {}
    try:
        return guard.snapshot(gradebook.db_url(grading_dir), COURSE_ID)
    except Exception as exc:  # noqa: BLE001 - a corrupt gradebook: grade, report, do not record
        return exc


def _write(grading_dir: Path, results, prep: dict, snap, timings: dict) -> Path | None:
    """The report, then the gradebook (verified against the snapshot) and grades.csv; None when
    the gradebook was not written or had been tampered with."""
    t0 = time.monotonic()
    report.write_report(grading_dir, results)
    timings["report"] = time.monotonic() - t0
    if isinstance(snap, Exception) and "error" not in prep:
        prep["error"] = snap
    if "error" not in prep:
        try:
            t0 = time.monotonic()
            gradebook.record(grading_dir, results)
            problems = guard.verify(gradebook.db_url(grading_dir), COURSE_ID, snap, results)
            timings["gradebook"] = time.monotonic() - t0
            if problems:
                raise guard.Tampered(problems)
            t0 = time.monotonic()
            grades = gradebook.export_grades(grading_dir)
            timings["export"] = time.monotonic() - t0
            return grades
        except Exception as exc:  # noqa: BLE001 - say so, still print what was graded
            prep["error"] = exc
    err = prep["error"]
    label = (
        "GRADEBOOK TAMPERED WITH" if isinstance(err, guard.Tampered) else "GRADEBOOK NOT WRITTEN"
    )
    print(f"{label}: {type(err).__name__}: {err}", file=sys.stderr)
    return None


def _write_runs(grading_dir: Path, results, timings: dict, n_workers: int) -> None:
    """The results `make report` reads, and where its page will be (it is not built here)."""
    t = timings
    wall = t["end"] - t["start"]
    run = {"finished": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "wall_s": wall}
    run["steps"] = {  # seconds of each step of this run (the benchmark's fixed costs)
        "before_grading": t["pool"] - t["start"], "grading": t["graded"] - t["pool"],
        "gradebook_setup_wait": t["prepared"] - t["graded"],
        # within grading: the snapshot (workers starting meanwhile), and after the last result
        **({"snapshot": t["jobs_out"] - t["pool"]} if t.get("jobs_out") else {}),
        **({"after_last_result": t["graded"] - t["last_result"]} if t.get("last_result") else {}),
        **{k: t[k] for k in ("report", "gradebook", "export") if k in t},
    }  # fmt: skip
    report.write_runs(grading_dir, results, {**run, "workers": n_workers})
    print(
        f"class report (run `make report GRADING={grading_dir}`): {grading_dir / 'report' / 'index.html'}"
    )


def _print_end(grading_dir: Path, results, grades, timings: dict, n_workers: int) -> None:
    print(report.summary(results))
    if any(r.seconds_late > 0 or r.lms_late for r in results):
        print(report.late_lines(results, late.describe()))
    for r in results:
        if r.trace:
            print(f"\n{r.student}/{r.assignment}:\n{r.trace}", file=sys.stderr)
    print(f"\nreport:    {grading_dir / 'test_report.csv'}")
    if grades:
        print(f"gradebook: {grading_dir / 'gradebook.db'}\ngrades:    {grades}")
        print(f"by submission (no submission told from 0): {grading_dir / 'submissions.csv'}")
    print(f"feedback:  {grading_dir / 'feedback'}/<student>/<assignment>/<assignment>.html")
    _write_runs(grading_dir, results, timings, n_workers)
    busy = sum(r.seconds for r in results) / max(len(results), 1)
    t = timings
    print(
        f"{len(results)} submission(s) in {t['end'] - t['start']:.1f} s: grading {t['graded'] - t['pool']:.1f} s "
        f"({busy:.2f} s per notebook per worker, {n_workers} workers), waiting for the gradebook "
        f"set-up {t['prepared'] - t['graded']:.1f} s, writing {t['end'] - t['prepared']:.1f} s"
    )


def _usage_problem(args, grading_dir: Path) -> str | None:
    unknown = set(args.assignment or []) - set(assignments())
    if unknown:
        return (
            f"no such assignment: {', '.join(sorted(unknown))} (known: {', '.join(assignments())})"
        )
    return None


def _keep_shared(grading_dir: Path) -> None:
    """A group-shared grading folder (setgid, as `make hub` makes it for formgrader, run as the
    instructor) stays group-writable: what grading writes there is for the group too."""
    if grading_dir.stat().st_mode & stat.S_ISGID:
        os.umask(0o002)


def _import_nbgrader() -> None:
    """nbgrader's gradebook API takes a second or more to import (it brings nbconvert, Jupyter
    server's handlers, SQLAlchemy): started in a thread at once, it is ready by the snapshot
    while this process waits for the sandbox probe and starts the workers."""

    def target():
        try:
            import nbgrader.api  # noqa: F401
        except Exception:  # noqa: BLE001, S110 - the same import fails where it is used, and says why
            pass

    threading.Thread(target=target, daemon=True).start()


def main(argv=None) -> int:
    args = parse_args(argv)
    timings = {"start": time.monotonic()}
    grading_dir = args.grading_dir.resolve()
    submitted = (args.submitted or grading_dir / "submitted").resolve()
    problem = _usage_problem(args, grading_dir)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    grading_dir.mkdir(parents=True, exist_ok=True)
    _keep_shared(grading_dir)
    lock = _lock(grading_dir)
    if lock is None:
        print(f"error: another `make grade` is running on {grading_dir}", file=sys.stderr)
        return EXIT_USAGE
    # nbgrader started from here (the gradebook's set-up, its config) uses this grading folder.
    os.environ["COURSE_GRADING_DIR"] = str(grading_dir)
    jobs, skipped = discover(submitted, args.assignment)
    for s in skipped:
        print(f"warning: skipped {s}", file=sys.stderr)
    if not jobs:
        print(
            f"nothing to grade in {submitted} (expected <student>/<assignment>/<assignment>.ipynb)"
        )
        return EXIT_OK
    _import_nbgrader()
    try:
        late.annotate(jobs, grading_dir)
    except Exception as exc:  # noqa: BLE001 - a broken late-penalty setting: grade nothing
        print(
            f"error: the due dates or late-penalty settings cannot be used: {exc}", file=sys.stderr
        )
        return EXIT_USAGE
    session, code = _open_cluster(args) if args.scheduler else (None, None)
    if code is not None:
        return code
    sandboxed, refused = (session.sandboxed, None) if session else sandbox_decision(args.no_sandbox)
    if refused:
        print(refused, file=sys.stderr)
        return EXIT_NO_SANDBOX
    names = sorted({j.assignment for j in jobs})
    timings["pool"] = time.monotonic()
    before = _Before(grading_dir, names)
    if session is not None:  # on the cluster: the same results, graded by its workers
        before()
        results, n_workers = session.grade(jobs, names, args, grading_dir)
    else:
        results, n_workers = _grade(jobs, names, args, grading_dir, sandboxed, before)
    timings["graded"] = time.monotonic()
    timings["jobs_out"], timings["last_result"] = before.done_at, before.last_result
    before.thread.join()
    timings["prepared"] = time.monotonic()
    prep = before.prep
    grades = _write(grading_dir, results, prep, before.snap, timings)
    timings["end"] = time.monotonic()
    _print_end(grading_dir, results, grades, timings, n_workers)
    failed = "error" in prep or any(r.status == ERROR for r in results)
    return EXIT_FAILED if failed else EXIT_OK
