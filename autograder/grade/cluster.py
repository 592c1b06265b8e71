"""``make grade SCHEDULER=ADDRESS``: the same grading, on a Dask distributed cluster.

    python -m autograder.grade --scheduler tls://HOST:PORT [the usual options]

The instructor starts workers on each machine, from the course's root, in the course's
environment (``make worker SCHEDULER=...``, see :mod:`.cluster_worker`). This process (the
client) then

1. refuses plain ``tcp://`` to a public address (the scheduler's port runs code on machines that
   hold the solutions): ``tcp://`` on loopback or a private network only, ``tls://`` anywhere,
   with Dask's certificate settings (``distributed.comm.tls.*``);
2. checks every worker before grading anything: the same course fingerprint (:mod:`.fingerprint`),
   a sandbox that starts (or the explicit opt-out on both sides), one thread per worker;
3. sends each submission's bytes (never a path: no shared filesystem) and gets back the result,
   the graded copy and the feedback page as data; only this process writes files, reports and
   the gradebook, once per submission;
4. lets Dask reschedule the tasks of a lost worker (``distributed.scheduler.allowed-failures``);
   a submission that keeps killing workers becomes a "bad" row with reason KilledWorker, and the
   end of the run says how many submissions were retried, and each worker's throughput.

Exit statuses as for ``make grade``, plus 4: the cluster cannot grade this course (no scheduler,
no worker, a worker that runs another course).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
import uuid
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path

from .address import address_problem
from .feedback import write_outputs
from .fingerprint import differences, fingerprint
from .pool import error_result
from .progress import Progress
from .results import BAD, Job, SubmissionResult
from .sandbox import GIB, Limits, no_sandbox_requested, refusal
from .settings import Settings
from .submission import BadSubmission, read_bytes
from .worker import grade

EXIT_USAGE, EXIT_NO_SANDBOX, EXIT_CLUSTER = 2, 3, 4
RELEASE_EVERY = 32  # completed tasks whose retry counts are asked for in one round trip


class Refused(Exception):
    """The cluster cannot grade: ``code`` is the exit status, the message says why and what to do."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="grade on the Dask cluster at ADDRESS (tcp://HOST:PORT on a private network, or "
        "tls://HOST:PORT); --jobs is then ignored",
    )
    p.add_argument(
        "--wait-workers",
        type=float,
        default=60.0,
        help="with --scheduler: seconds to wait for a first worker (default 60)",
    )


def _connect(address: str, wait: float):
    from distributed import Client

    try:
        client = Client(address, timeout=min(30.0, max(wait, 5.0)))
    except Exception as exc:  # noqa: BLE001 - unreachable, refused, or TLS not configured here
        hint = " (tls://: are Dask's certificate settings set here?)" if "tls" in address else ""
        raise Refused(
            EXIT_CLUSTER, f"cannot reach the scheduler {address}{hint}: {type(exc).__name__}: {exc}"
        ) from None
    try:
        client.wait_for_workers(1, timeout=wait)
    except TimeoutError:
        client.close()
        raise Refused(
            EXIT_CLUSTER,
            f"no worker joined {address} within {wait:g} s: start some with "
            f"`make worker SCHEDULER={address}` on each grading machine",
        ) from None
    return client


def _worker_problem(addr: str, state, sandboxed: bool) -> tuple[int, str] | None:
    if isinstance(state, BaseException):
        return EXIT_CLUSTER, (
            f"worker {addr} cannot run the grader ({type(state).__name__}: {state}): start it "
            "from the course's root, in the course's environment (make worker)"
        )
    where = f"worker {addr} ({state['host']}, pid {state['pid']})"
    diff = differences(fingerprint(), state["fingerprint"])
    if diff:
        return EXIT_CLUSTER, (
            f"{where} runs another course: {'; '.join(diff)}. Start every worker from a "
            "checkout of the same release, in an environment made from the same requirements.txt."
        )
    if state["nthreads"] != 1:
        return EXIT_CLUSTER, f"{where} has {state['nthreads']} threads: start it with --nthreads 1"
    if sandboxed and not state["sandbox"]:
        return EXIT_NO_SANDBOX, f"{where}:\n" + refusal(state["why"])
    return None


def check_workers(client, sandboxed: bool) -> dict[str, dict]:
    """Every connected worker's state; Refused naming the first worker that cannot grade."""
    from .cluster_worker import worker_state

    states = client.run(worker_state, on_error="return")
    for addr in sorted(states):
        problem = _worker_problem(addr, states[addr], sandboxed)
        if problem:
            raise Refused(*problem)
    return states


def _retries(client, keys: list[str]) -> dict[str, int]:
    """How many times each task was on a worker that died (the scheduler's count)."""

    def suspicious(dask_scheduler, keys):  # runs on the scheduler: pickled by value
        return {k: dask_scheduler.tasks[k].suspicious for k in keys if k in dask_scheduler.tasks}

    return client.run_on_scheduler(suspicious, keys=keys)


@dataclass
class Tally:
    """Per-worker counts for the end of the run, and the retries."""

    start: float = field(default_factory=time.monotonic)
    by_worker: dict = field(default_factory=dict)  # address -> [notebooks, busy seconds]
    threads: int = 1
    retried: int = 0
    killed: int = 0

    def add(self, worker: str, seconds: float) -> None:
        row = self.by_worker.setdefault(worker, [0, 0.0])
        row[0] += 1
        row[1] += seconds

    def lines(self, n_jobs: int) -> list[str]:
        wall = max(time.monotonic() - self.start, 1e-9)
        out = [
            f"\ncluster: {sum('://' in a for a in self.by_worker)} worker(s), {n_jobs} "
            f"submission(s) in {wall:.1f} s"
        ]
        out.append(f"  {'worker':<34} {'notebooks':>9} {'busy s':>8} {'notebooks/s':>11}")
        for addr in sorted(self.by_worker):
            n, busy = self.by_worker[addr]
            out.append(f"  {addr:<34} {n:>9} {busy:>8.1f} {n / wall:>11.2f}")
        per_core = n_jobs / wall / max(self.threads, 1)
        out.append(
            f"  {per_core:.2f} notebooks/s per worker core; {self.retried} submission(s) retried "
            f"after a worker was lost; {self.killed} KilledWorker (bad rows)"
        )
        return out


class Session:
    """A connected, checked cluster, ready to grade one batch."""

    def __init__(self, client, states: dict, sandboxed: bool):
        self.client, self.states, self.sandboxed = client, states, sandboxed
        self.tally = Tally(threads=sum(s["nthreads"] for s in states.values()))

    def grade(self, jobs: list[Job], names: list[str], args, grading_dir: Path):
        """(results in job order, number of workers); the plugin is removed afterwards."""
        settings = Settings(
            run_root=Path("/nonexistent"),  # each worker sets its own private folders
            grading_dir=grading_dir,
            limits=Limits(memory_bytes=int(args.memory_gib * GIB)),
            cell_timeout=args.cell_timeout,
            notebook_budget=args.notebook_budget,
            sandboxed=self.sandboxed,
        )
        from .cluster_worker import GraderPlugin

        name = f"course-grader-{uuid.uuid4().hex[:12]}"
        self.client.register_plugin(GraderPlugin(settings, names, fingerprint(), name), name=name)
        try:
            results = Batch(self, settings, name, Progress(len(jobs))).run(jobs)
        except Refused as exc:  # a worker that joined later runs another course
            print(f"error: {exc}", file=sys.stderr)
            raise SystemExit(exc.code) from None
        finally:
            self._close(name)
        print("\n".join(self.tally.lines(len(jobs))))
        return results, len(self.states)

    def _close(self, plugin: str) -> None:
        """Remove the plugin from the workers (it drops their spare kernels) and disconnect."""
        with contextlib.suppress(Exception):  # a lost scheduler: its workers go with it
            self.client.unregister_worker_plugin(plugin)
        with contextlib.suppress(Exception):
            self.client.close()


class Batch:
    """Submissions in flight: a window of tasks, results written as they come back."""

    def __init__(self, session: Session, settings: Settings, plugin: str, progress: Progress):
        self.s, self.settings, self.plugin, self.progress = session, settings, plugin, progress
        self.results: dict[int, SubmissionResult] = {}
        self.inflight: dict[str, Job] = {}
        self.done: list = []  # completed futures, released RELEASE_EVERY at a time
        threads = sum(st["nthreads"] for st in session.states.values())
        self.window = max(8, 4 * threads)  # bounds what the scheduler holds, not the speed

    def run(self, jobs: list[Job]) -> list[SubmissionResult]:
        from distributed import as_completed

        from .cluster_worker import CourseMismatch

        todo, self.ac = deque(jobs), as_completed()
        try:
            self._fill(todo)
            for fut in self.ac:
                self._collect(fut, self.inflight.pop(fut.key))
                self.done.append(fut)
                if len(self.done) >= RELEASE_EVERY:
                    self._release()
                self._fill(todo)
            self._release()
        except CourseMismatch as exc:
            raise Refused(EXIT_CLUSTER, f"{exc}; nothing was recorded") from None
        except Exception as exc:  # noqa: BLE001 - the scheduler (or the way to it) was lost
            self._lost(exc, todo)
        return [self.results[j.index] for j in jobs]

    def _lost(self, exc: Exception, todo: deque) -> None:
        """What was graded is kept; every other submission is an error row (nothing recorded
        for it; the run exits 1 and names them), never a traceback."""
        why = f"not graded: the connection to the scheduler was lost ({type(exc).__name__}: {exc})"
        print(f"\nerror: {why}", file=sys.stderr)
        for job in [*self.inflight.values(), *todo]:
            if job.index not in self.results:
                self._record(error_result(job, why), "?")
        self.inflight.clear()
        todo.clear()

    def _fill(self, todo: deque) -> None:
        from .cluster_worker import grade_remote

        while todo and len(self.inflight) < self.window:
            job = todo.popleft()
            try:
                raw = read_bytes(job.path)
            except BadSubmission:  # missing, not a plain file, too large: no kernel needed
                self._record(grade(job, self.settings), "client")
                continue
            key = f"grade-{job.index}-{uuid.uuid4().hex[:8]}"
            more = len(todo) >= self.s.tally.threads  # else the last ones: no spare after it
            fut = self.s.client.submit(
                grade_remote, replace(job, path=None), raw, self.plugin, more, key=key, pure=False
            )
            self.inflight[key] = job
            self.ac.add(fut)

    def _record(self, result: SubmissionResult, worker: str) -> None:
        if result.index in self.results:  # never twice (a task's result arrives once)
            raise RuntimeError(f"{result.student}/{result.assignment} came back twice")
        self.results[result.index] = result
        self.s.tally.add(worker, result.seconds)
        self.progress.step(result)

    def _collect(self, fut, job: Job) -> None:
        from distributed import KilledWorker

        from .cluster_worker import CourseMismatch

        try:
            remote = fut.result()
        except KilledWorker as exc:
            self.s.tally.killed += 1
            self._record(killed_result(job, exc, self.settings), "lost")
        except CourseMismatch:
            raise
        except Exception as exc:  # noqa: BLE001 - a grader bug or a lost scheduler: say so
            self._record(error_result(job, f"internal error: {type(exc).__name__}: {exc}"), "?")
        else:
            write_files(self.settings.grading_dir, job, remote)
            self._record(remote.result, remote.worker)

    def _release(self) -> None:
        if not self.done:
            return
        counts = _retries(self.s.client, [f.key for f in self.done])
        self.s.tally.retried += sum(1 for n in counts.values() if n > 0)
        for fut in self.done:
            fut.release()
        self.done = []


def killed_result(job: Job, exc, settings: Settings) -> SubmissionResult:
    """A submission that kept killing workers: a bad row (zeros) with the reason, and feedback."""
    from .assignment import assignment_info

    info = assignment_info(job.assignment)
    n = getattr(exc, "allowed_failures", 0) + 1
    reason = (
        f"KilledWorker: {n} grading worker(s) died while grading this submission "
        "(Dask's allowed-failures); it was not graded"
    )
    result = SubmissionResult.start(job, settings.sandboxed)
    result.fail(info.test_rows(), BAD, reason, f"not graded: {reason}")
    write_outputs(settings.grading_dir, job, info, None, {}, result)
    return result


def write_files(grading_dir: Path, job: Job, remote) -> None:
    """What the worker's grade() wrote in its private folder, written here, at the same paths."""
    if remote.feedback is None:  # grading failed before any output (as with the local pool)
        return
    a = job.assignment
    graded = grading_dir / "autograded" / job.student / a / f"{a}.ipynb"
    feedback = grading_dir / "feedback" / job.student / a / f"{a}.html"
    if remote.graded is None:
        graded.unlink(missing_ok=True)
    else:
        graded.parent.mkdir(parents=True, exist_ok=True)
        graded.write_bytes(remote.graded)
    feedback.parent.mkdir(parents=True, exist_ok=True)
    feedback.write_bytes(remote.feedback)


def open_session(args) -> Session:
    """Check the address, connect, check every worker; Refused says why not."""
    problem = address_problem(args.scheduler)
    if problem:
        raise Refused(EXIT_USAGE, f"error: {problem}")
    sandboxed = not (args.no_sandbox or no_sandbox_requested())
    if not sandboxed:
        print(
            "WARNING: grading WITHOUT the sandbox on every worker, as asked: student code can read "
            "and write the workers' files. Reports and feedback say so.",
            file=sys.stderr,
        )
    print("note: --jobs is ignored with --scheduler: the cluster's workers set the parallelism")
    client = _connect(args.scheduler, args.wait_workers)
    try:
        states = check_workers(client, sandboxed)
    except Refused:
        client.close()
        raise
    threads = sum(s["nthreads"] for s in states.values())
    print(
        f"cluster {args.scheduler}: {len(states)} worker(s), {threads} thread(s), same course "
        f"({fingerprint()['course'][:12]}); sandbox: {'bubblewrap' if sandboxed else 'NONE'}",
        file=sys.stderr,
    )
    return Session(client, states, sandboxed)
