"""The worker side of ``make grade SCHEDULER=...``: what runs inside a Dask worker process.

A worker is started by the instructor, in the course's environment, from the course's root::

    .venv/bin/dask worker tls://HOST:PORT --nthreads 1 --preload autograder.grade.cluster_worker

(``make worker SCHEDULER=...`` runs exactly that). The preload (:func:`dask_setup`) fails closed:
a worker whose sandbox cannot start refuses to serve, unless it was opted out explicitly with
``COURSE_GRADE_NO_SANDBOX=1`` (``make worker NO_SANDBOX=1``); and even then the client grades on
it only when the client itself was given ``--no-sandbox``.

For a batch, the client registers a :class:`GraderPlugin` (the batch's settings and the client's
course fingerprint). Its per-worker state lives here: a private folder under /tmp, the spare
kernel, and ONE long-lived grading thread that starts every kernel (bubblewrap's
``--die-with-parent`` follows the thread that started the kernel, and the spare kernel is not
thread-safe). Each task (:func:`grade_remote`) receives a submission's bytes and returns a
:class:`Remote`: the result, the graded copy and the feedback page as data. Nothing is written
outside the worker's private folder, and that folder is removed after each submission.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import shutil
import socket
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from distributed import WorkerPlugin, get_worker

from . import kernels
from .address import address_problem
from .fingerprint import differences, fingerprint
from .pool import warm
from .results import Job, SubmissionResult
from .sandbox import no_sandbox_requested, probe, refusal
from .settings import Settings
from .worker import grade

PREFIX = "course-grade-dask-"  # /tmp/course-grade-dask-<pid>-XXXX: one worker's private folder


def sweep() -> None:
    """Remove the private folders of workers that died without tearing down (killed, out of
    memory): they hold copies of student notebooks."""
    for d in Path("/tmp").glob(f"{PREFIX}*-*"):
        pid = d.name[len(PREFIX) :].split("-")[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists() and d.owner() == _me():
            shutil.rmtree(d, ignore_errors=True)


def _me() -> str:
    import pwd

    return pwd.getpwuid(os.geteuid()).pw_name


class CourseMismatch(RuntimeError):
    """This worker runs another course (or another numpy or Python) than the client."""


@dataclass
class Remote:
    """What a worker sends back for one submission: the client writes the files."""

    result: SubmissionResult
    graded: bytes | None  # autograded/<student>/<a>/<a>.ipynb (None: remove any old one)
    feedback: bytes | None  # feedback/<student>/<a>/<a>.html (None: nothing was written)
    worker: str  # the worker's address


def worker_state(dask_worker=None) -> dict:
    """What the client checks before grading (run on every worker with ``Client.run``)."""
    ok, why = probe()
    return {
        "fingerprint": fingerprint(),
        "sandbox": ok,
        "why": why,
        "opted_out": no_sandbox_requested(),
        "nthreads": dask_worker.state.nthreads if dask_worker is not None else 1,
        "host": socket.gethostname(),
        "pid": os.getpid(),
    }


def dask_setup(worker) -> None:
    """``--preload autograder.grade.cluster_worker``: refuse to serve without the sandbox."""
    problem = address_problem(worker.scheduler.address)
    if problem:
        raise SystemExit(f"error: {problem}")
    ok, why = probe()
    if not ok and not no_sandbox_requested():
        raise SystemExit(
            refusal(why).replace("nothing was graded", "this worker will not serve")
            + "\n  For a worker: make worker NO_SANDBOX=1 (COURSE_GRADE_NO_SANDBOX=1); the client "
            "must be given --no-sandbox too."
        )
    if worker.state.nthreads != 1:
        raise SystemExit("error: start grading workers with --nthreads 1 (use --nworkers N)")


class GraderPlugin(WorkerPlugin):
    """One batch's state on one worker; registered by the client, removed after the batch."""

    def __init__(self, settings: Settings, names: list[str], expected: dict, name: str):
        self.settings, self.names, self.expected, self.name = settings, names, expected, name
        self.refused: str | None = None
        self.root: Path | None = None
        self.thread: cf.ThreadPoolExecutor | None = None

    def setup(self, worker) -> None:
        self.address = worker.address
        diff = differences(self.expected, fingerprint())
        if diff:  # a worker that joined after the client's check
            self.refused = f"worker {worker.address} runs another course: {'; '.join(diff)}"
            return
        sweep()
        self.root = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir="/tmp"))
        os.chmod(self.root, 0o700)
        self.settings = replace(self.settings, run_root=self.root, grading_dir=self.root)
        os.environ.pop("JPY_PARENT_PID", None)
        self.thread = cf.ThreadPoolExecutor(1, thread_name_prefix="course-grader")
        self.thread.submit(self._warm)

    def _warm(self) -> None:
        kernels.launch_spare(self.settings)  # boots while the references load
        warm(self.names)

    def teardown(self, worker) -> None:  # noqa: ARG002
        if self.thread is not None:
            self.thread.submit(kernels.drop_spare).result(timeout=60)
            self.thread.shutdown(wait=True)
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)

    def grade(self, job: Job, raw: bytes, more: bool = True) -> Remote:
        if self.refused:
            raise CourseMismatch(self.refused)
        return self.thread.submit(self._grade_here, job, raw, more).result()

    def _grade_here(self, job: Job, raw: bytes, more: bool) -> Remote:
        """On the grading thread: grade in a private folder, read the two files back."""
        out = Path(tempfile.mkdtemp(prefix="out-", dir=self.root))
        a = job.assignment
        try:
            path = out / "submitted" / job.student / a / f"{a}.ipynb"
            path.parent.mkdir(parents=True)
            path.write_bytes(raw)
            result = grade(replace(job, path=path), replace(self.settings, grading_dir=out))
            graded = _read(out / "autograded" / job.student / a / f"{a}.ipynb")
            feedback = _read(out / "feedback" / job.student / a / f"{a}.html")
        finally:
            shutil.rmtree(out, ignore_errors=True)
        if more and not kernels.has_spare():  # the next submission's kernel boots now
            kernels.launch_spare(self.settings)
        return Remote(result, graded, feedback, self.address)


def _read(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() else None


def grade_remote(job: Job, raw: bytes, plugin_name: str, more: bool = True) -> Remote:
    """The Dask task: grade one submission's bytes with this worker's grader plugin; ``more``:
    other submissions are likely to follow on this worker (launch a spare kernel after it)."""
    worker = get_worker()
    plugin = worker.plugins.get(plugin_name)
    if plugin is None:
        raise RuntimeError(f"worker {worker.address} has no grader plugin {plugin_name}")
    return plugin.grade(job, raw, more)
