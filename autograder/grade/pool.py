"""The worker pool of ``make grade``: long-lived processes, each with the references loaded and a
spare kernel booting, that grade one submission at a time. A worker that crashes is replaced."""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import multiprocessing.util
import os
import time

from . import kernels
from .assignment import assignment_info, cases_for
from .progress import Progress
from .results import ERROR, Job, SubmissionResult
from .settings import Settings
from .worker import grade

_SETTINGS: Settings | None = None
_TODO = None  # shared count of jobs no worker has started yet


def _more_jobs() -> bool:
    if _TODO is None:
        return False
    with _TODO.get_lock():
        return _TODO.value > 0


def warm(assignments: list[str]) -> None:
    """Load every reference and build every case once, so the first submission is not slower."""
    for a in assignments:
        try:
            info = assignment_info(a)
            for gid, _ in info.tests:
                cases_for(a, gid)
                info.checks[gid].reference()
        except Exception:  # noqa: BLE001, S112 - the same error is reported per submission
            continue


def init_worker(settings: Settings, assignments: list[str], todo=None) -> None:
    """Pool initializer: remember the settings, launch a first kernel, warm the caches."""
    global _SETTINGS, _TODO
    _SETTINGS, _TODO = settings, todo
    os.environ.pop("JPY_PARENT_PID", None)
    multiprocessing.util.Finalize(None, kernels.drop_spare, exitpriority=10)
    if _more_jobs():
        kernels.launch_spare(settings)  # boots while the references load
    kernels.launch_ahead(settings, _more_jobs)
    warm(assignments)


def work(job: Job) -> SubmissionResult:
    if _TODO is not None:
        with _TODO.get_lock():
            _TODO.value -= 1
    result = grade(job, _SETTINGS)
    t0 = time.monotonic()
    if not kernels.has_spare() and _more_jobs():  # none was launched ahead (see kernels)
        kernels.launch_spare(_SETTINGS)
    result.clock("launch", time.monotonic() - t0)  # the next submission's kernel, started
    return result


def error_result(job: Job, reason: str) -> SubmissionResult:
    rows = assignment_info(job.assignment).test_rows()
    return SubmissionResult.not_graded(job, rows, ERROR, reason, "not graded")


def started() -> None:
    """A task that does nothing: submitted once per worker, it makes the pool start them all."""


def _one_pool(todo: list[Job], settings, n_workers, names, progress, results, before) -> None:
    ctx = multiprocessing.get_context("spawn")
    remaining = ctx.Value("i", len(todo))  # workers launch the next kernel only if one is due
    n = min(n_workers, len(todo))
    with cf.ProcessPoolExecutor(
        max_workers=n,
        mp_context=ctx,
        initializer=init_worker,
        initargs=(settings, names, remaining),
    ) as pool:
        for _ in range(n):  # the workers start (imports, references, first kernel) ...
            pool.submit(started)
        before()  # ... while this process does what must precede any student code
        futures = {pool.submit(work, job): job for job in todo}
        for fut in cf.as_completed(futures):
            job = futures[fut]
            try:
                res = fut.result()
            except cf.process.BrokenProcessPool:
                continue  # retried with a fresh pool
            except Exception as exc:  # noqa: BLE001
                res = error_result(job, f"internal error: {type(exc).__name__}: {exc}")
            results[job.index] = res
            progress.step(res)


def run_pool(
    jobs: list[Job],
    settings: Settings,
    n_workers: int,
    names: list[str],
    progress: Progress,
    before=lambda: None,
) -> list[SubmissionResult]:
    """Grade jobs with a pool of long-lived workers; a worker that crashes is replaced.
    ``before()`` runs once the workers are starting and before any job is handed to them (it
    may be called again before a retry's pool: it must do its work once)."""
    results: dict[int, SubmissionResult] = {}
    todo = list(jobs)
    for _attempt in range(3):
        if not todo:
            break
        _one_pool(todo, settings, n_workers, names, progress, results, before)
        todo = [j for j in todo if j.index not in results]
    for job in todo:  # the pool broke three times on these
        res = error_result(job, "the grading worker crashed on this submission three times")
        results[job.index] = res
        progress.step(res)
    return [results[j.index] for j in jobs]
