"""Benchmark: plain serial ``nbgrader autograde`` against ``make grade``, on N copies of a submission.

    python -m autograder.grade.bench [-n 16] [--assignment 01_one_hot_lookup] [--jobs NPROC]
    python -m autograder.grade.bench --cluster 2 [-n 16] [--repeat 2]

``--cluster W``: ``make grade --jobs W`` against ``make grade SCHEDULER=...`` with W local Dask
workers (one thread each) on the same N notebooks, alternating, best of ``--repeat``: the
cluster path's overhead as a ratio, and notebooks per second per worker core.

Both grade the same N copies of the demo correct submission in a temporary course (the real
grading/ is never touched). Neither is timed for setting up the gradebook: ``nbgrader
generate_assignment`` runs before either clock starts, exactly once for each. Each command is
timed from its start as a process to its exit, so interpreter and worker start-up count. The
figure that matters is the ratio on this machine; seconds per notebook are printed for both, and
the scores are checked to be full marks everywhere so a fast wrong grader cannot win.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .. import nb, samples
from ..course import COURSE_ID, ROOT, SOLUTIONS, source_notebook
from . import gradebook
from .cli import default_jobs


def _subprocess(cmd: list[str], cwd: Path, env: dict | None = None):
    """(the finished process, seconds from its start to its exit); a failure stops the benchmark."""
    if env is None:
        env = dict(os.environ)
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        shown = " ".join(a for a in cmd[1:6] if not a.startswith("/"))
        raise SystemExit(f"{shown} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc, seconds


def _run(cmd: list[str], cwd: Path) -> float:
    return _subprocess(cmd, cwd)[1]


def _course(tmp: Path, assignment: str, n: int) -> tuple[Path, Path]:
    """A temporary course holding one assignment and n copies of its correct submission."""
    course = tmp / "course"
    (course / "solutions").mkdir(parents=True)
    shutil.copytree(SOLUTIONS / assignment, course / "solutions" / assignment)
    (course / "nbgrader_config.py").write_text(nb.temporary_course_config(course), encoding="utf-8")
    notebook = samples.build(assignment, {})
    submitted = course / "grading" / "submitted"
    for i in range(n):
        nb.write(notebook, submitted / f"student{i:03d}" / assignment / f"{assignment}.ipynb")
    return course, submitted


def _scores(course: Path, ours: Path, assignment: str) -> tuple[list, dict]:
    from nbgrader.api import Gradebook

    with Gradebook(
        "sqlite:///" + str(course / "grading" / "gradebook.db"), course_id=COURSE_ID
    ) as gb:
        plain = [s.score for s in gb.assignment_submissions(assignment)]
    totals: dict = {}
    with (ours / "test_report.csv").open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            totals[row["student"]] = totals.get(row["student"], 0.0) + float(row["score"])
    return plain, totals


def bench(n: int, assignment: str, jobs: int, keep: Path | None = None, extra=()) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="bench-grading-"))
    nbgrader = [sys.executable, "-m", "nbgrader"]
    try:
        course, submitted = _course(tmp, assignment, n)
        full = sum(nb.points(nb.read(source_notebook(assignment))).values())
        # Untimed set-up for both: the gradebook learns the assignment.
        _run([*nbgrader, "generate_assignment", assignment, "--force", "--log-level=WARN"], course)
        ours = tmp / "ours"
        gradebook.prepare(ours, [assignment])
        plain_s = _run([*nbgrader, "autograde", assignment, "--force", "--log-level=WARN"], course)
        ours_s = _run(
            [
                sys.executable, "-m", "autograder.grade", "--jobs", str(jobs), "--assignment", assignment,
                "--grading-dir", str(ours), "--submitted", str(submitted), *extra,
            ],
            ROOT,
        )  # fmt: skip
        plain_scores, totals = _scores(course, ours, assignment)  # both must give full marks
        assert len(plain_scores) == n and all(s == full for s in plain_scores), plain_scores
        assert len(totals) == n and all(s == full for s in totals.values()), totals
        if keep:
            shutil.copytree(tmp, keep, dirs_exist_ok=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"n": n, "jobs": jobs, "plain_s": plain_s, "ours_s": ours_s, "ratio": plain_s / ours_s}


def _timed(cmd: list[str], env: dict) -> tuple[float, float]:
    """(seconds from start to exit, seconds of the grading phase as the command reports it)."""
    proc, seconds = _subprocess(cmd, ROOT, env)
    grading = re.search(r"grading ([0-9.]+) s", proc.stdout)
    return seconds, float(grading.group(1)) if grading else float("nan")


def _local_cluster(tmp: Path, workers: int, env: dict) -> tuple[str, list]:
    """A scheduler and ``workers`` one-thread workers on 127.0.0.1, as make worker starts them."""
    from distributed import Client

    dask = str(Path(sys.executable).parent / "dask")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    log = (tmp / "cluster.log").open("w")
    procs = [subprocess.Popen(
        [dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )]  # fmt: skip
    for i in range(workers):
        cmd = [dask, "worker", address, "--nthreads", "1", "--no-nanny", "--no-dashboard"]
        cmd += ["--name", f"bench{i}", "--preload", "autograder.grade.cluster_worker"]
        procs.append(subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT))
    with Client(address, timeout=60) as client:
        client.wait_for_workers(workers, timeout=120)
    return address, procs


def bench_cluster(n: int, assignment: str, workers: int, repeat: int, extra=()) -> dict:
    """``--jobs W`` against W local Dask workers on the same n notebooks, alternating, best of
    ``repeat``. The workers are started (and their imports paid) before either clock starts, as
    on a real cluster where they outlive one batch; each batch still pays its plugin set-up."""
    tmp = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    if "--no-sandbox" in extra:
        env["COURSE_GRADE_NO_SANDBOX"] = "1"
    procs = []
    try:
        _, submitted = _course(tmp, assignment, n)
        address, procs = _local_cluster(tmp, workers, env)
        base = [sys.executable, "-m", "autograder.grade", "--submitted", str(submitted), *extra]
        times: dict = {"local": [], "cluster": []}
        for i in range(repeat):
            for mode, flags in (
                ("local", ["--jobs", str(workers)]),
                ("cluster", ["--scheduler", address]),
            ):
                out = tmp / f"{mode}{i}"
                times[mode].append(_timed([*base, "--grading-dir", str(out), *flags], env))
                _full_marks(out, assignment, n)
    finally:
        for proc in reversed(procs):  # the workers first: they close fast while the scheduler lives
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)

    def best(runs):  # the fastest whole command, and the fastest grading phase, of the runs
        return min(a for a, _ in runs), min(g for _, g in runs)

    local, cluster = best(times["local"]), best(times["cluster"])
    return {"n": n, "workers": workers, "local": local, "cluster": cluster, "times": times}


def _full_marks(grading: Path, assignment: str, n: int) -> None:
    full = sum(nb.points(nb.read(source_notebook(assignment))).values())
    totals: dict = {}
    with (grading / "test_report.csv").open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            totals[row["student"]] = totals.get(row["student"], 0.0) + float(row["score"])
    assert len(totals) == n and all(s == full for s in totals.values()), totals


def print_cluster(r: dict, assignment: str) -> None:
    w, n = r["workers"], r["n"]
    (ls, lg), (cs, cg) = r["local"], r["cluster"]
    print(
        f"{n} copies of {assignment} on {default_jobs()} core(s); best of {len(r['times']['local'])}"
    )
    print(f"make grade --jobs {w}:           {ls:7.1f} s in all, grading {lg:6.1f} s")
    print(f"make grade SCHEDULER ({w} workers): {cs:7.1f} s in all, grading {cg:6.1f} s")
    for mode in ("local", "cluster"):
        runs = ", ".join(f"{a:.1f}/{g:.1f}" for a, g in r["times"][mode])
        print(f"  every {mode} run (s in all / grading): {runs}")
    print(
        f"cluster overhead: {100 * (cs / ls - 1):+.0f}% in all, {100 * (cg / lg - 1):+.0f}% grading"
    )
    print(
        f"cluster: {n / cg / w:.2f} notebooks/s per worker core while grading ({n / cs / w:.2f} in all)"
    )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("-n", type=int, default=16, help="copies of the correct submission (default 16)")
    p.add_argument("--assignment", default="01_one_hot_lookup")
    p.add_argument("--jobs", type=int, default=default_jobs())
    p.add_argument("--keep", type=Path, help="copy the temporary course here for inspection")
    p.add_argument("--no-sandbox", action="store_true", help="grade without bubblewrap (explicit)")
    p.add_argument(
        "--cluster", type=int, metavar="W", help="instead: W local Dask workers vs --jobs W"
    )
    p.add_argument(
        "--repeat", type=int, default=2, help="--cluster: alternate runs, best of (default 2)"
    )
    args = p.parse_args(argv)
    if args.cluster:
        extra = ("--no-sandbox",) if args.no_sandbox else ()
        print_cluster(
            bench_cluster(args.n, args.assignment, args.cluster, args.repeat, extra),
            args.assignment,
        )
        return 0
    r = bench(
        args.n, args.assignment, args.jobs, args.keep, ("--no-sandbox",) if args.no_sandbox else ()
    )
    cores = default_jobs()
    print(f"{r['n']} copies of {args.assignment} on {cores} core(s)")
    print(
        f"plain nbgrader autograde (serial): {r['plain_s']:7.1f} s   {r['plain_s'] / r['n']:5.2f} s/notebook"
    )
    print(
        f"make grade (--jobs {r['jobs']}):          {r['ours_s']:7.1f} s   {r['ours_s'] / r['n']:5.2f} s/notebook"
    )
    print(f"ratio: make grade is {r['ratio']:.2f}x faster")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
