"""Benchmark: plain serial ``nbgrader autograde`` against ``make grade``, on a mix of notebooks.

    python -m autograder.grade.bench [--chapters 01 02 ...] [--repeat 3] [--jobs NPROC]
    python -m autograder.grade.bench --cluster 2 [-n 16] [--repeat 2]

The mix: for every chapter asked for (default all), one correct alternative and the chapter's
demo mistake from ``autograder/samples``, each by its own student (18 notebooks for 9 chapters),
in a temporary course (the real grading/ is never touched). Both sides start from the same state:
the gradebook knows every assignment and holds no submission (set up once, untimed, with
nbgrader's ``generate_assignment`` for plain and ``gradebook.prepare`` for ours, and restored
before every run). Runs alternate plain, ours, plain, ours, ... (``--repeat``, default 3) and the
median of each side gives the ratio. Each command is timed from its start as a process to its
exit, so interpreter and worker start-up count. Every run checks the scores: the same for each
submission on both sides, full marks for the correct ones and less for the mistakes, so a fast
wrong grader cannot win.

It prints how much of each side is fixed start-up (the whole command minus the notebooks' own
time, over the workers for ours), where one notebook's time goes on each side (for plain from
nbgrader's log, for ours from the phases the workers clock), and what a sandboxed kernel's start
is made of (interpreter in bubblewrap, imports, first answer), measured apart.

``--cluster W``: ``make grade --jobs W`` against ``make grade SCHEDULER=...`` with W local Dask
workers (one thread each) on N copies of one correct submission, alternating, best of
``--repeat``: the cluster path's overhead as a ratio, and notebooks per second per worker core.
"""

from __future__ import annotations

import argparse
import csv
import json
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


PLAIN_LOG = ["--log-level=INFO", "--Application.log_format=%(asctime)s.%(msecs)03d %(message)s",
             "--Application.log_datefmt=%H:%M:%S"]  # fmt: skip
# nbgrader autograde's log, per submission: the line that starts each step of plain's breakdown
PLAIN_STEPS = (
    ("gradebook: student, submission", "Creating/updating student"),
    ("sanitize: copy, clear outputs", "Sanitizing"),
    ("execute: kernel start, imports, cells, checks, scores into the gradebook", "Autograding"),
    ("write the graded notebook", "Writing"),
)
OUR_PHASES = (
    ("setup", "read + parse the submission, scratch folder"),
    ("kernel", "wait until its kernel answers (started during the last one)"),
    ("cells", "student cells"),
    ("exchange", "checks: inputs in, harness in the kernel, outcomes out"),
    ("judge", "checks: judged against the reference"),
    ("outputs", "graded copy + feedback page"),
    ("close", "kill the kernel, remove its folder"),
    ("launch", "launch the next submission's kernel"),
)


def mixed_notebooks(chapters: list[str]) -> list[tuple[str, str, dict, bool]]:
    """(student, assignment, notebook, correct) for a correct alternative and the demo mistake
    of each chapter asked for."""
    from ..course import assignments

    picked = [a for a in assignments() if not chapters or a[:2] in chapters]
    out = []
    for a in picked:
        mod = samples.module(a)
        alternative = next(iter(mod.ALTERNATIVES.values()))
        out.append((f"c{a[:2]}_correct", a, samples.build(a, alternative), True))
        mistake = mod.MISTAKES[mod.DEMO_MISTAKE].sources
        out.append((f"c{a[:2]}_mistake", a, samples.build(a, mistake), False))
    return out


def _mixed_course(tmp: Path, mix: list) -> tuple[Path, Path]:
    """A temporary course with the mix's assignments and submissions; its gradebook knows every
    assignment (plain nbgrader's own generate_assignment), saved as the state each run starts from."""
    course = tmp / "course"
    names = sorted({a for _, a, _, _ in mix})
    (course / "solutions").mkdir(parents=True)
    for a in names:
        shutil.copytree(SOLUTIONS / a, course / "solutions" / a)
    (course / "nbgrader_config.py").write_text(nb.temporary_course_config(course), encoding="utf-8")
    submitted = course / "grading" / "submitted"
    for student, a, notebook, _ in mix:
        nb.write(notebook, submitted / student / a / f"{a}.ipynb")
    gen = [sys.executable, "-m", "nbgrader", "generate_assignment", "--force", "--log-level=WARN"]
    for a in names:
        _subprocess([*gen, a], course)
    shutil.copy2(course / "grading" / "gradebook.db", tmp / "plain-start.db")
    ours = tmp / "ours-start"
    gradebook.prepare(ours, names)
    return course, submitted


def _plain_scores(course: Path) -> dict:
    from nbgrader.api import Gradebook

    url = "sqlite:///" + str(course / "grading" / "gradebook.db")
    with Gradebook(url, course_id=COURSE_ID) as gb:
        return {
            (s.student.id, a.name): float(s.score)
            for a in gb.assignments
            for s in gb.assignment_submissions(a.name)
        }


def _our_scores(grading: Path) -> dict:
    totals: dict = {}
    with (grading / "test_report.csv").open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            key = (row["student"], row["assignment"])
            totals[key] = totals.get(key, 0.0) + float(row["score"])
    return totals


def _check_scores(mix: list, plain: dict, ours: dict) -> None:
    """The same score for every submission; full marks exactly for the correct ones."""
    for student, a, _, correct in mix:
        full = sum(nb.points(nb.read(source_notebook(a))).values())
        key = (student, a)
        assert plain.get(key) == ours.get(key), (key, plain.get(key), ours.get(key))
        assert (ours[key] == full) == correct, (key, ours[key], full)
    assert len(plain) == len(ours) == len(mix), (len(plain), len(ours), len(mix))


def _clock(stamp: str) -> float:
    h, m, s = stamp.split(":")
    return int(h) * 3600 + int(m) * 60 + float(s)


def plain_breakdown(log: str) -> tuple[float, dict]:
    """(seconds of the notebooks, seconds per step summed over them) from nbgrader's log."""
    events = []
    for line in log.splitlines():
        m = re.match(r"(\d\d:\d\d:\d\d\.\d{3}) (.*)", line)
        if m:
            events.append((_clock(m.group(1)), m.group(2)))
    steps = {label: 0.0 for label, _ in PLAIN_STEPS}
    current, since, first = None, None, None
    for t, text in events:
        for label, start in PLAIN_STEPS:
            # the second "Writing" of a submission (its graded copy) starts the last step
            if text.startswith(start) and (start != "Writing" or current == PLAIN_STEPS[2][0]):
                if current is not None:
                    steps[current] += t - since
                first = t if first is None else first
                current, since = label, t
                break
    last = events[-1][0] if events else 0.0
    if current is not None:
        steps[current] += last - since
    return (last - first if first is not None else 0.0), steps


def _plain_run(tmp: Path, course: Path) -> dict:
    """One plain serial ``nbgrader autograde`` of every submission, from the saved state."""
    grading = course / "grading"
    shutil.rmtree(grading / "autograded", ignore_errors=True)
    shutil.copy2(tmp / "plain-start.db", grading / "gradebook.db")
    cmd = [sys.executable, "-m", "nbgrader", "autograde", "*", "--force", *PLAIN_LOG]
    proc, wall = _subprocess(cmd, course)
    busy, steps = plain_breakdown(proc.stderr)
    return {"wall": wall, "busy": busy, "steps": steps, "scores": _plain_scores(course)}


def _our_run(tmp: Path, submitted: Path, jobs: int, i: int, extra=()) -> dict:
    """One ``make grade --jobs N`` of every submission, from the saved state (a copy of it)."""
    grading = tmp / f"ours{i}"
    shutil.copytree(tmp / "ours-start", grading)
    cmd = [sys.executable, "-m", "autograder.grade", "--jobs", str(jobs)]
    cmd += ["--grading-dir", str(grading), "--submitted", str(submitted), *extra]
    _, wall = _subprocess(cmd, ROOT)
    phases: dict = {}
    run: dict = {}
    for path in sorted((grading / "runs").glob("*.json")):
        run = json.loads(path.read_text(encoding="utf-8"))["runs"][-1]
        for k, v in run["phases"].items():
            phases[k] = phases.get(k, 0.0) + v
    out = {"wall": wall, "phases": phases, "steps": run["steps"], "inside": run["wall_s"]}
    out["workers"] = run["workers"]
    out["busy"] = sum(phases.values())
    out["scores"] = _our_scores(grading)
    shutil.rmtree(grading, ignore_errors=True)
    return out


def bench(chapters: list[str], jobs: int, repeat: int = 3, extra=()) -> dict:
    """Alternated runs, plain first, on the same mix from the same state; every run checked."""
    tmp = Path(tempfile.mkdtemp(prefix="bench-grading-"))
    mix = mixed_notebooks(chapters)
    runs: dict = {"plain": [], "ours": []}
    try:
        course, submitted = _mixed_course(tmp, mix)
        for i in range(repeat):
            runs["plain"].append(_plain_run(tmp, course))
            runs["ours"].append(_our_run(tmp, submitted, jobs, i, extra))
            _check_scores(mix, runs["plain"][-1]["scores"], runs["ours"][-1]["scores"])
        anatomy = kernel_anatomy(tmp, extra)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"mix": [(s, a, ok) for s, a, _, ok in mix], "jobs": jobs, "runs": runs,
            "anatomy": anatomy}  # fmt: skip


def _median_run(runs: list[dict]) -> dict:
    return sorted(runs, key=lambda r: r["wall"])[len(runs) // 2]


def _sandboxed_python(scratch: Path, code: str, sandboxed: bool) -> list[str]:
    """The kernel's own command (prlimit, bubblewrap, its environment), running ``code`` instead
    of the kernel."""
    from . import sandbox

    uid = sandbox.kernel_uid() if sandboxed else None
    if uid is not None:
        sandbox.own(scratch, uid)
    argv = sandbox.kernel_argv(scratch, sandbox.Limits(), sandboxed, uid)
    at = len(argv) - 1 - argv[::-1].index(sys.executable)
    return [*argv[:at], sys.executable, "-c", code]


ANATOMY = (
    ("interpreter in the sandbox", "pass"),
    ("+ import numpy", "import numpy"),
    ("+ import ipykernel", "import ipykernel.kernelapp"),
    ("+ both", "import ipykernel.kernelapp, numpy"),
)


def kernel_anatomy(tmp: Path, extra=(), times: int = 5) -> dict:
    """Median seconds of what one sandboxed kernel's start is made of, each measured alone."""
    from statistics import median

    from .sandbox import Limits, SandboxKernel

    sandboxed = "--no-sandbox" not in extra
    out: dict = {}
    for label, code in ANATOMY:
        runs = []
        for i in range(times):
            scratch = tmp / f"anatomy-{len(out)}-{i}"
            scratch.mkdir(mode=0o700)
            t0 = time.perf_counter()
            subprocess.run(_sandboxed_python(scratch, code, sandboxed), check=True)
            runs.append(time.perf_counter() - t0)
        out[label] = median(runs)
    runs = []
    for i in range(times):
        scratch = tmp / f"anatomy-kernel-{i}"
        scratch.mkdir(mode=0o700)
        kernel = SandboxKernel(scratch, Limits(), sandboxed)
        runs.append(kernel.start())
        kernel.shutdown()
    out["a whole kernel: launch until it answers"] = median(runs)
    return out


def _load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def print_bench(r: dict) -> None:
    n, jobs, runs = len(r["mix"]), r["jobs"], r["runs"]
    plain, ours = _median_run(runs["plain"]), _median_run(runs["ours"])
    chapters = sorted({a[:2] for _, a, _ in r["mix"]})
    print(f"{n} notebooks (a correct alternative and the demo mistake of chapters "
          f"{', '.join(chapters)}) on {default_jobs()} core(s); {_load()} after the runs")  # fmt: skip
    for side in ("plain", "ours"):
        walls = ", ".join(f"{x['wall']:.1f}" for x in runs[side])
        print(f"  every {side} run, in the order run (alternated), s: {walls}")
    print(
        f"plain nbgrader autograde (serial): {plain['wall']:7.1f} s  {plain['wall'] / n:5.2f} s/notebook (median)"
    )
    print(
        f"make grade (--jobs {jobs}):          {ours['wall']:7.1f} s  {ours['wall'] / n:5.2f} s/notebook (median)"
    )
    print(f"ratio: make grade is {plain['wall'] / ours['wall']:.2f}x faster (medians)")
    _print_fixed(plain, ours, n)
    _print_plain_notebook(plain, n)
    _print_our_notebook(ours, n)
    print("one sandboxed kernel's start, each part measured alone (median of 5):")
    for label, seconds in r["anatomy"].items():
        print(f"  {label:44s} {seconds:6.3f} s")


def _print_fixed(plain: dict, ours: dict, n: int) -> None:
    w = ours["workers"]
    fixed_plain = plain["wall"] - plain["busy"]
    fixed_ours = ours["wall"] - ours["busy"] / w
    print("fixed cost of each side (the whole command minus the notebooks' own time):")
    print(f"  plain: {fixed_plain:5.1f} s of {plain['wall']:.1f} (interpreter, nbgrader, config, "
          f"gradebook open; the notebooks {plain['busy']:.1f} s)")  # fmt: skip
    steps = ours["steps"]
    parts = ", ".join(f"{k.replace('_', ' ')} {v:.2f}" for k, v in steps.items() if k != "grading")
    print(f"  ours:  {fixed_ours:5.1f} s of {ours['wall']:.1f} (the notebooks {ours['busy']:.1f} s "
          f"over {w} workers = {ours['busy'] / w:.1f} s)")  # fmt: skip
    print(f"         interpreter + imports before main and exit {ours['wall'] - ours['inside']:.2f} s; "
          f"{parts} s; grading phase {steps['grading']:.2f} s, of which workers' start, "
          f"warm-up and imbalance {steps['grading'] - ours['busy'] / w:.2f} s")  # fmt: skip


def _print_plain_notebook(plain: dict, n: int) -> None:
    print(f"plain, one notebook: {plain['busy'] / n:.3f} s (from nbgrader's log), of which")
    for label, seconds in plain["steps"].items():
        print(f"  {label:68s} {seconds / n:6.3f} s")


def _print_our_notebook(ours: dict, n: int) -> None:
    print(f"ours, one notebook in one worker: {ours['busy'] / n:.3f} s, of which")
    phases = dict(ours["phases"])
    for key, label in OUR_PHASES:
        print(f"  {key:9s} {label:58s} {phases.pop(key, 0.0) / n:6.3f} s")
    for key, seconds in phases.items():
        print(f"  {key:68s} {seconds / n:6.3f} s")


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
    p.add_argument("--chapters", nargs="*", default=[], help="e.g. 01 02 05 (default: all)")
    p.add_argument("--jobs", type=int, default=default_jobs())
    p.add_argument("--no-sandbox", action="store_true", help="grade without bubblewrap (explicit)")
    p.add_argument(
        "--repeat", type=int, help="alternated runs of each side (default 3; --cluster: 2)"
    )
    p.add_argument(
        "--cluster", type=int, metavar="W", help="instead: W local Dask workers vs --jobs W"
    )
    p.add_argument("-n", type=int, default=16, help="--cluster: copies of the correct submission")
    p.add_argument("--assignment", default="01_one_hot_lookup", help="--cluster: the assignment")
    args = p.parse_args(argv)
    extra = ("--no-sandbox",) if args.no_sandbox else ()
    if args.cluster:
        r = bench_cluster(args.n, args.assignment, args.cluster, args.repeat or 2, extra)
        print_cluster(r, args.assignment)
        return 0
    print_bench(bench(args.chapters, args.jobs, args.repeat or 3, extra))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
