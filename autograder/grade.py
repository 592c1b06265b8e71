"""`make grade`: grade every submission, in parallel, with the verdict taken out of the kernel.

    python -m autograder.grade [--jobs N] [--assignment A] [--submitted DIR] [--grading-dir DIR]
                               [--memory-gib G] [--cell-timeout S] [--notebook-budget S]

Input: nbgrader's layout, ``grading/submitted/<student>/<assignment>/<assignment>.ipynb``.
Output (in ``grading/``): the gradebook (``gradebook.db``), ``grades.csv``, ``test_report.csv``,
``autograded/<student>/<a>/<a>.ipynb`` and ``feedback/<student>/<a>/<a>.html``.

Each submission is graded by one of N long-lived worker processes: its code runs in a sandboxed,
memory-capped kernel (autograder/sandbox.py) that only computes the student's outputs for the
inputs it is handed; the worker judges them against the reference (autograder/grading_worker.py).
Only this process writes the gradebook. The exit status is non-zero only when grading itself
failed; a bad submission (invalid notebook, endless loop, dead kernel...) gets zeros and is named
with the reason.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import fcntl
import multiprocessing
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

from . import grading_book
from .grading_worker import Job, Settings, init_worker, work
from .paths import GRADING, assignments
from .sandbox import GIB, Limits, probe


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def discover(submitted: Path, only: list[str] | None) -> tuple[list[Job], list[str]]:
    """Every <student>/<assignment> folder of a known assignment, in a stable order."""
    known = set(assignments())
    jobs, skipped = [], []
    if not submitted.is_dir():
        return jobs, skipped
    for sdir in sorted(p for p in submitted.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for adir in sorted(p for p in sdir.iterdir() if p.is_dir() and not p.name.startswith(".")):
            a = adir.name
            if only and a not in only:
                continue
            if a not in known:
                skipped.append(f"{sdir.name}/{a}: no such assignment in solutions/")
                continue
            nb = adir / f"{a}.ipynb"
            ts = adir / "timestamp.txt"
            stamp = None
            if ts.is_file() and not ts.is_symlink():
                stamp = ts.read_text(encoding="utf-8", errors="replace")[:64].strip() or None
            jobs.append(Job(0, sdir.name, a, nb, stamp))
    for i, job in enumerate(jobs):
        job.index = i
    return jobs, skipped


class Progress:
    """A plain-text progress bar on stderr (one line per step when stderr is not a terminal)."""

    def __init__(self, total: int):
        self.total, self.done, self.bad, self.t0 = total, 0, 0, time.monotonic()
        self.tty = sys.stderr.isatty()
        self.last_pct = -1

    def step(self, result: dict) -> None:
        self.done += 1
        self.bad += result["status"] != "graded"
        elapsed = time.monotonic() - self.t0
        eta = elapsed / self.done * (self.total - self.done)
        width = 30
        fill = int(width * self.done / max(self.total, 1))
        line = (
            f"[{'#' * fill}{'.' * (width - fill)}] {self.done}/{self.total} "
            f"({self.bad} bad)  {elapsed:.0f}s elapsed, ~{eta:.0f}s left  "
            f"{result['student']}/{result['assignment']}"
        )
        if self.tty:
            sys.stderr.write("\r" + line[:150].ljust(150))
            if self.done == self.total:
                sys.stderr.write("\n")
        else:
            pct = 10 * self.done // max(self.total, 1)
            if pct != self.last_pct or self.done == self.total:
                self.last_pct = pct
                sys.stderr.write(line + "\n")
        sys.stderr.flush()


def run_pool(
    jobs: list[Job], settings: Settings, n_workers: int, names: list[str], progress: Progress
) -> list[dict]:
    """Grade jobs with a pool of long-lived workers; a worker that crashes is replaced."""
    results: dict[int, dict] = {}
    todo = list(jobs)
    for _attempt in range(3):
        if not todo:
            break
        ctx = multiprocessing.get_context("spawn")
        remaining = ctx.Value("i", len(todo))  # workers launch the next kernel only if one is due
        with cf.ProcessPoolExecutor(
            max_workers=min(n_workers, len(todo)),
            mp_context=ctx,
            initializer=init_worker,
            initargs=(settings, names, remaining),
        ) as pool:
            futures = {pool.submit(work, job): job for job in todo}
            for fut in cf.as_completed(futures):
                job = futures[fut]
                try:
                    res = fut.result()
                except cf.process.BrokenProcessPool:
                    continue  # retried below with a fresh pool
                except Exception as exc:  # noqa: BLE001
                    res = _error_result(job, f"internal error: {type(exc).__name__}: {exc}")
                results[job.index] = res
                progress.step(res)
        todo = [j for j in todo if j.index not in results]
    for job in todo:  # the pool broke three times on these
        res = _error_result(job, "the grading worker crashed on this submission three times")
        results[job.index] = res
        progress.step(res)
    return [results[j.index] for j in jobs]


def _error_result(job: Job, reason: str) -> dict:
    from .grading_worker import _zero_tests, assignment_info

    info = assignment_info(job.assignment)
    return {
        "index": job.index, "student": job.student, "assignment": job.assignment, "timestamp": job.timestamp,
        "status": "error", "reason": reason, "notes": [], "release": "", "stale": False,
        "tests": _zero_tests(info, "not graded"), "seconds": 0.0,
    }  # fmt: skip


def main(argv=None) -> int:
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
        "--no-sandbox", action="store_true", help="run kernels without bubblewrap (not recommended)"
    )
    args = p.parse_args(argv)

    t0 = time.monotonic()
    grading_dir = args.grading_dir.resolve()
    submitted = (args.submitted or grading_dir / "submitted").resolve()
    unknown = set(args.assignment or []) - set(assignments())
    if unknown:
        print(
            f"error: no such assignment: {', '.join(sorted(unknown))} (known: {', '.join(assignments())})",
            file=sys.stderr,
        )
        return 2
    grading_dir.mkdir(parents=True, exist_ok=True)
    lock = open(grading_dir / ".grade.lock", "w")  # noqa: SIM115 - held until the process exits
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"error: another `make grade` is running on {grading_dir}", file=sys.stderr)
        return 2
    jobs, skipped = discover(submitted, args.assignment)
    for s in skipped:
        print(f"warning: skipped {s}", file=sys.stderr)
    if not jobs:
        print(
            f"nothing to grade in {submitted} (expected <student>/<assignment>/<assignment>.ipynb)"
        )
        return 0
    names = sorted({j.assignment for j in jobs})

    sandboxed, why = (False, "--no-sandbox was given") if args.no_sandbox else probe()
    if not sandboxed:
        bar = "!" * 78
        print(
            f"{bar}\nWARNING: grading WITHOUT the sandbox: {why}\n"
            "Student code can read and write this machine's files (solutions/, the gradebook).\n"
            f"The verdict is still taken outside the kernel. Install bubblewrap to fix this.\n{bar}",
            file=sys.stderr,
        )

    # The gradebook's structure is prepared while the workers grade (nbgrader takes a few seconds).
    prep: dict = {}

    def _prepare():
        try:
            prep["done"] = grading_book.prepare(grading_dir, names)
        except Exception as exc:  # noqa: BLE001
            prep["error"] = exc

    prep_thread = threading.Thread(target=_prepare, daemon=True)
    prep_thread.start()

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
        f"sandbox: {'bubblewrap' if sandboxed else 'NONE'}; memory cap {args.memory_gib:g} GiB; "
        f"{args.cell_timeout:g} s per cell, {args.notebook_budget:g} s per notebook",
        file=sys.stderr,
    )
    progress = Progress(len(jobs))
    t_pool = time.monotonic()
    try:
        results = run_pool(jobs, settings, n_workers, names, progress)
    finally:
        shutil.rmtree(run_root, ignore_errors=True)
    t_graded = time.monotonic()
    prep_thread.join()
    t_prepared = time.monotonic()
    report = grading_book.write_report(grading_dir, results)
    grades = None
    if "error" not in prep:
        try:
            grading_book.record(grading_dir, results)
            grades = grading_book.export_grades(grading_dir)
        except Exception as exc:  # noqa: BLE001 - say so, still print what was graded
            prep["error"] = exc
    if "error" in prep:
        print(
            f"GRADEBOOK NOT WRITTEN: {type(prep['error']).__name__}: {prep['error']}",
            file=sys.stderr,
        )
    print(grading_book.summary(results))
    for r in results:
        if r.get("trace"):
            print(f"\n{r['student']}/{r['assignment']}:\n{r['trace']}", file=sys.stderr)
    print(f"\nreport:    {report}")
    if grades:
        print(f"gradebook: {grading_dir / 'gradebook.db'}\ngrades:    {grades}")
    print(f"feedback:  {grading_dir / 'feedback'}/<student>/<assignment>/<assignment>.html")
    busy = sum(r["seconds"] for r in results)
    print(
        f"{len(results)} submission(s) in {time.monotonic() - t0:.1f} s: grading {t_graded - t_pool:.1f} s "
        f"({busy / max(len(results), 1):.2f} s per notebook per worker, {n_workers} workers), "
        f"waiting for the gradebook set-up {t_prepared - t_graded:.1f} s, "
        f"writing {time.monotonic() - t_prepared:.1f} s"
    )
    failed = "error" in prep or any(r["status"] == "error" for r in results)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
