"""`make grade SCHEDULER=...` on a real Dask cluster on 127.0.0.1: a scheduler and two worker
processes started here with Dask's own commands, as an instructor would.

* the cluster gives exactly what `--jobs 1` gives (report rows, feedback pages, graded copies) on
  the demo submissions of two chapters and a wrong answer of every other chapter, and the
  gradebook holds each submission once;
* a worker killed mid-batch loses nothing and doubles nothing, and the run says it retried;
* a worker started from a different copy of the course is refused, by name, before grading;
* tls:// with a self-signed certificate (Dask's certificate settings) grades the same; a client
  without the certificate cannot connect;
* a scheduler lost mid-batch: what was graded is recorded, the rest are error rows, exit 1;
* plain tcp:// to a public address is refused; a worker whose sandbox cannot start refuses to
  serve; a submission that keeps killing workers becomes a bad row (KilledWorker).
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import nb as notebooks
from autograder import samples
from autograder.course import COURSE_ID, ROOT, assignments, source_notebook
from autograder.grade import gradebook as grading_book
from autograder.grade.cluster_worker import PREFIX, sweep
from autograder.grade.sandbox import probe

pytestmark = pytest.mark.slow

SANDBOXED, WHY_NOT = probe()
# Where bubblewrap cannot run, both sides opt out explicitly (the client and every worker).
OPT_OUT = [] if SANDBOXED else ["--no-sandbox"]
DASK = str(Path(sys.executable).parent / "dask")
FULL = ["01_one_hot_lookup", "02_sparse_backward"]  # every demo student of these two chapters
# and a wrong answer of every other chapter (COURSE_CLUSTER_TWO_CHAPTERS=1: only the two above)
TWO_ONLY = os.environ.get("COURSE_CLUSTER_TWO_CHAPTERS") == "1"
EVERY = [] if TWO_ONLY else [a for a in assignments() if a not in FULL]


def _env(**extra) -> dict:
    env = dict(os.environ, **extra)
    if not SANDBOXED:
        env["COURSE_GRADE_NO_SANDBOX"] = "1"
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(cmd: list[str], log: Path, cwd: Path = ROOT, env: dict | None = None):
    out = log.open("w")
    return subprocess.Popen(cmd, cwd=cwd, env=env or _env(), stdout=out, stderr=subprocess.STDOUT)


def _worker(address: str, log: Path, name: str, cwd: Path = ROOT, env: dict | None = None):
    cmd = [DASK, "worker", address, "--nthreads", "1", "--no-nanny", "--no-dashboard"]
    cmd += ["--name", name, "--preload", "autograder.grade.cluster_worker"]
    return _start(cmd, log, cwd, env)


def _scheduler(port: int, log: Path, env: dict | None = None, protocol: str = "tcp"):
    cmd = [DASK, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"]
    return _start([*cmd, "--protocol", protocol], log, env=env)


def _wait_workers(address: str, n: int, procs, env: dict | None = None, name: str = ""):
    """Until n workers (and one called name) are connected, asked by a client process."""
    code = (
        "import time; from distributed import Client\n"
        f"c = Client({address!r}, timeout=30); c.wait_for_workers({n}, timeout=90)\n"
        "names = lambda: {w['name'] for w in c.scheduler_info()['workers'].values()}\n"
        f"t = time.monotonic() + 90\nwhile {name!r} and {name!r} not in names():\n"
        "    assert time.monotonic() < t; time.sleep(0.2)\n"
        "c.close()"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env or _env(), capture_output=True, text=True
    )
    dead = [p.args for p in procs if p.poll() is not None]
    assert proc.returncode == 0 and not dead, f"workers did not join: {dead}\n{proc.stderr[-2000:]}"


def _stop(*procs) -> None:
    """One after the other, workers before their scheduler (a worker whose scheduler vanished
    first takes long to close)."""
    for p in procs:
        if p.poll() is None:
            p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _grade(grading: Path, submitted: Path, *flags: str, env: dict | None = None):
    cmd = [sys.executable, "-m", "autograder.grade", "--grading-dir", str(grading)]
    cmd += ["--submitted", str(submitted), *OPT_OUT, *flags]
    return subprocess.run(cmd, cwd=ROOT, env=env or _env(), capture_output=True, text=True)


def _report(grading: Path) -> list[tuple]:
    with (grading / "test_report.csv").open(encoding="utf-8") as f:
        return sorted(tuple(row.values()) for row in csv.DictReader(f))


def _merged_streams(raw: bytes) -> dict:
    """A graded copy with consecutive stream outputs joined: how a kernel splits a cell's printing
    into messages depends on timing, on one machine as on a cluster."""
    notebook = json.loads(raw)
    for cell in notebook["cells"]:
        merged = []
        for out in cell.get("outputs", []):
            prev = merged[-1] if merged else None
            if (
                prev
                and out.get("output_type") == prev.get("output_type") == "stream"
                and (out.get("name") == prev.get("name"))
            ):
                prev["text"] = "".join(prev["text"]) + "".join(out["text"])
            else:
                merged.append(out)
        if "outputs" in cell:
            cell["outputs"] = merged
    return notebook


def _outputs(grading: Path) -> dict[str, object]:
    """Every feedback page (bytes) and graded copy (streams joined) the run wrote."""
    out: dict[str, object] = {}
    for p in grading.glob("feedback/*/*/*.html"):
        out[str(p.relative_to(grading))] = p.read_bytes()
    for p in grading.glob("autograded/*/*/*.ipynb"):
        out[str(p.relative_to(grading))] = _merged_streams(p.read_bytes())
    return out


def _gradebook(grading: Path) -> dict[tuple, list[float]]:
    """(student, assignment) -> the scores of every submission the gradebook holds for it."""
    from nbgrader.api import Gradebook

    found: dict[tuple, list[float]] = {}
    with Gradebook(grading_book.db_url(grading), course_id=COURSE_ID) as gb:
        for a in assignments():
            try:
                subs = gb.assignment_submissions(a)
            except Exception:  # noqa: BLE001, S112 - an assignment this batch did not grade
                continue
            for s in subs:
                found.setdefault((s.student.id, a), []).append(s.score)
    return found


def _submissions(dest: Path) -> list[tuple[str, str]]:
    written = []
    for a in assignments():
        mod = samples.module(a)
        students = samples.demo_students(a) if a in FULL else {}
        if a in EVERY:  # a wrong answer of every other chapter
            students = {"demo_mistake": samples.build(a, mod.MISTAKES[mod.DEMO_MISTAKE].sources)}
        for student, notebook in students.items():
            notebooks.write(notebook, dest / student / a / f"{a}.ipynb")
            written.append((student, a))
    return written


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cluster")
    submitted = tmp / "submitted"
    expected = _submissions(submitted)
    return tmp, submitted, expected


@pytest.fixture(scope="module")
def solo(batch):
    """The reference: the same batch graded on this machine with --jobs 1."""
    tmp, submitted, _ = batch
    proc = _grade(tmp / "solo", submitted, "--jobs", "1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return tmp / "solo"


@pytest.fixture(scope="module")
def cluster(batch):
    tmp = batch[0]
    address = f"tcp://127.0.0.1:{_free_port()}"
    sched = _scheduler(int(address.rsplit(":", 1)[1]), tmp / "scheduler.log")
    workers = [_worker(address, tmp / f"worker{i}.log", f"w{i}") for i in range(2)]
    try:
        _wait_workers(address, 2, [sched, *workers])
        yield address, workers
    finally:
        _stop(*workers, sched)


def test_cluster_grades_exactly_like_jobs_1(batch, solo, cluster):
    tmp, submitted, expected = batch
    proc = _grade(tmp / "dask", submitted, "--scheduler", cluster[0])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "note: --jobs is ignored with --scheduler" in proc.stdout
    assert _report(tmp / "dask") == _report(solo)
    assert _outputs(tmp / "dask") == _outputs(solo)  # the same files came back
    book = _gradebook(tmp / "dask")
    assert sorted(book) == sorted(expected) and all(len(v) == 1 for v in book.values())
    assert book == _gradebook(solo)
    # per-worker throughput: both workers graded, and the run says how many were retried
    rows = re.findall(r"tcp://127\.0\.0\.1:\d+\s+(\d+)\s", proc.stdout)
    assert len(rows) == 2 and sum(map(int, rows)) == len(expected), proc.stdout
    assert "0 submission(s) retried" in proc.stdout


def test_a_killed_worker_loses_nothing(batch, cluster, tmp_path):
    _, workers = cluster
    a = FULL[0]
    correct = samples.build(a, {})
    n = 5
    for i in range(n):
        notebooks.write(correct, tmp_path / "submitted" / f"s{i}" / a / f"{a}.ipynb")
    cmd = [sys.executable, "-m", "autograder.grade", "--grading-dir", str(tmp_path / "g")]
    cmd += ["--submitted", str(tmp_path / "submitted"), "--scheduler", cluster[0], *OPT_OUT]
    client = subprocess.Popen(cmd, cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    for line in client.stderr:  # the progress bar: one line per graded submission here
        if re.search(rf"\] 1/{n} ", line):
            workers[0].send_signal(signal.SIGKILL)  # mid-batch: it holds tasks right now
            break
    out, err = client.communicate(timeout=300)
    assert client.returncode == 0, err[-3000:]
    assert workers[0].wait(timeout=10) == -signal.SIGKILL
    left = list(Path("/tmp").glob(f"{PREFIX}{workers[0].pid}-*"))  # a killed worker cannot clean
    sweep()  # what a restarted worker does when it joins
    assert left and not any(d.exists() for d in left)
    book = _gradebook(tmp_path / "g")
    full = sum(notebooks.points(notebooks.read(source_notebook(a))).values())
    assert sorted(book) == sorted((f"s{i}", a) for i in range(n))
    assert all(v == [full] for v in book.values()), book  # each once, each full marks
    retried = int(re.search(r"(\d+) submission\(s\) retried", out).group(1))
    assert 1 <= retried <= 2, out  # one task running, at most one queued on the lost worker


def test_a_worker_with_another_course_is_refused(batch, cluster, tmp_path):
    tmp, submitted, _ = batch
    copy = tmp_path / "course"
    for part in ("autograder", "solutions", "coursekit"):
        shutil.copytree(ROOT / part, copy / part, ignore=shutil.ignore_patterns("__pycache__"))
    with (copy / "autograder" / "checks" / "ch01.py").open("a", encoding="utf-8") as f:
        f.write("\n# another release of the checks\n")
    env = _env(PYTHONPATH=str(copy))
    other = _worker(cluster[0], tmp_path / "other.log", "other", cwd=copy, env=env)
    try:
        _wait_workers(cluster[0], 1, [other], env=env, name="other")
        proc = _grade(tmp_path / "g", submitted, "--scheduler", cluster[0])
    finally:
        _stop(other)
    assert proc.returncode == 4, proc.stderr[-3000:]
    assert f"pid {other.pid}) runs another course" in proc.stderr, proc.stderr[-3000:]
    assert "course files" in proc.stderr
    assert not (tmp_path / "g" / "test_report.csv").exists()  # nothing graded, nothing written


def _certificate(tmp: Path) -> Path:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    pem = tmp / "tls.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
         "-keyout", str(tmp / "key.pem"), "-out", str(pem)],
        check=True, capture_output=True,
    )  # fmt: skip
    pem.write_text(pem.read_text() + (tmp / "key.pem").read_text())  # certificate + key
    return pem


def test_tls_with_a_self_signed_certificate(batch, solo, tmp_path):
    tmp, submitted, _ = batch
    one = tmp_path / "submitted"  # one wrong answer is enough to see the same verdict
    shutil.copytree(submitted / "demo_mistake" / FULL[0], one / "demo_mistake" / FULL[0])
    pem = _certificate(tmp_path)
    tls = {"DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION": "True"}
    tls["DASK_DISTRIBUTED__COMM__TLS__CA_FILE"] = str(pem)
    for who in ("SCHEDULER", "WORKER", "CLIENT"):
        tls[f"DASK_DISTRIBUTED__COMM__TLS__{who}__CERT"] = str(pem)
    env = _env(**tls)
    port = _free_port()
    address = f"tls://127.0.0.1:{port}"
    sched = _scheduler(port, tmp_path / "scheduler.log", env=env, protocol="tls")
    worker = _worker(address, tmp_path / "worker.log", "tls", env=env)
    try:
        _wait_workers(address, 1, [sched, worker], env=env)
        proc = _grade(tmp_path / "g", one, "--scheduler", address, env=env)
        bare = _grade(tmp_path / "bare", one, "--scheduler", address, "--wait-workers", "3")
    finally:
        _stop(worker, sched)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _report(tmp_path / "g") == [
        r for r in _report(solo) if r[:2] == ("demo_mistake", FULL[0])
    ]
    assert bare.returncode == 4 and "cannot reach the scheduler" in bare.stderr, bare.stderr


def test_a_lost_scheduler_keeps_what_was_graded(tmp_path):
    a = FULL[0]
    n = 4
    for i in range(n):
        notebooks.write(samples.build(a, {}), tmp_path / "sub" / f"s{i}" / a / f"{a}.ipynb")
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    sched = _scheduler(port, tmp_path / "scheduler.log")
    worker = _worker(address, tmp_path / "worker.log", "w")
    try:
        _wait_workers(address, 1, [sched, worker])
        cmd = [sys.executable, "-m", "autograder.grade", "--grading-dir", str(tmp_path / "g")]
        cmd += ["--submitted", str(tmp_path / "sub"), "--scheduler", address, "--wait-workers", "5"]
        client = subprocess.Popen([*cmd, *OPT_OUT], cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        for line in client.stderr:
            if re.search(rf"\] 1/{n} ", line):
                sched.send_signal(signal.SIGKILL)
                break
        out, err = client.communicate(timeout=120)
    finally:
        _stop(worker, sched)
    assert client.returncode == 1, err[-3000:]  # some submissions could not be graded
    assert "connection to the scheduler was lost" in err and "Traceback" not in err, err[-3000:]
    book = _gradebook(tmp_path / "g")
    assert 1 <= len(book) < n and all(len(v) == 1 for v in book.values())  # what was graded
    assert "GRADING FAILED for" in out


def test_plain_tcp_to_a_public_address_is_refused(batch, tmp_path):
    proc = _grade(tmp_path / "g", batch[1], "--scheduler", "tcp://8.8.8.8:8786")
    assert proc.returncode == 2, proc.stderr
    assert "public address" in proc.stderr and "tls://" in proc.stderr
    assert not (tmp_path / "g" / "test_report.csv").exists()
    cmd = [DASK, "worker", "tcp://8.8.8.8:8786", "--nthreads", "1", "--no-nanny"]
    cmd += ["--preload", "autograder.grade.cluster_worker"]
    worker = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=120)
    assert worker.returncode != 0 and "public address" in worker.stderr, worker.stderr[-2000:]


def test_a_worker_without_its_sandbox_refuses_to_serve(tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "bwrap").write_text("#!/bin/sh\necho 'bwrap: refused (test)' >&2\nexit 1\n")
    (fake / "bwrap").chmod(0o755)
    env = dict(os.environ, PATH=f"{fake}{os.pathsep}{os.environ['PATH']}")
    env.pop("COURSE_GRADE_NO_SANDBOX", None)
    cmd = [DASK, "worker", f"tcp://127.0.0.1:{_free_port()}", "--nthreads", "1", "--no-nanny"]
    proc = subprocess.run(
        [*cmd, "--preload", "autograder.grade.cluster_worker"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode != 0
    assert "this worker will not serve" in proc.stderr and "refused (test)" in proc.stderr


def test_a_submission_that_keeps_killing_workers_is_a_bad_row(tmp_path):
    from distributed import KilledWorker

    from autograder.grade.cluster import Batch, Session, Tally
    from autograder.grade.progress import Progress
    from autograder.grade.results import BAD, Job
    from autograder.grade.settings import Settings

    class Dead:  # a future whose task killed every worker it ran on
        key = "grade-0"

        def result(self):
            raise KilledWorker("grade-0", type("W", (), {"address": "tcp://x:1"})(), 3)

    session = Session.__new__(Session)
    session.states, session.tally = {"tcp://x:1": {"nthreads": 1}}, Tally()
    settings = Settings(run_root=tmp_path, grading_dir=tmp_path)
    batch = Batch(session, settings, "plugin", Progress(1))
    job = Job(0, "s0", FULL[0], None)
    batch._collect(Dead(), job)
    r = batch.results[0]
    assert r.status == BAD and r.reason.startswith("KilledWorker: 4 grading worker(s) died")
    assert r.score == 0 and session.tally.killed == 1
    page = tmp_path / "feedback" / "s0" / FULL[0] / f"{FULL[0]}.html"
    assert "KilledWorker" in page.read_text(encoding="utf-8")
