"""Grading one submission, in a long-lived worker process of ``make grade``.

The worker is trusted: it holds the reference (via ``Check.verdict``) and never runs student code
itself. Per submission it

1. reads the notebook (too large or invalid JSON: zeros, and the reason);
2. makes a private scratch folder under the run's root in /tmp and copies only the ``.ipynb``
   there (no stray ``numpy.py`` or ``autograder.py`` comes along);
3. starts a sandboxed kernel (:mod:`.sandbox`) and runs the student's code cells: every code cell
   except the test cells and the inlined helper cells, both recognised by the *source* notebook's
   ids, each with a per-cell timeout, all within a per-notebook budget;
4. for every Check of the assignment, hands the cases to the kernel and judges what comes back
   (:mod:`.exchange`); a check whose outcome never arrives (timeout, dead kernel, missing
   function, ``sys.exit``) fails with the reason;
5. writes the graded copy and the feedback page (:mod:`.feedback`) and returns a
   :class:`~.results.SubmissionResult` to the main process, which alone writes the gradebook.
"""

from __future__ import annotations

import time
import traceback

from .. import nb
from ..release import history
from .assignment import AssignmentInfo, assignment_info
from .feedback import write_outputs
from .results import BAD, ERROR, Job, SubmissionResult, TestResult
from .run import Run
from .sandbox import KernelError
from .settings import Settings
from .submission import load_submission


def _stamp(result: SubmissionResult, notebook: dict, info: AssignmentInfo) -> None:
    """The release the submission was made from; stale only when what it was given changed."""
    stamp = (notebook.get("metadata") or {}).get("course")
    result.release = nb.stamp_label(stamp)
    current = {
        "stamp": info.stamp,
        "given": info.given,
        "functions": info.answer_ids,
        "tests": [gid for gid, _ in info.tests],
    }
    result.stale, note = history.staleness(info.name, stamp, current)
    if note:
        result.notes.append(note)


def _grade_notebook(run: Run, result: SubmissionResult, info: AssignmentInfo) -> None:
    run.start_kernel()
    run.deadline = time.monotonic() + run.settings.notebook_budget
    run.run_cells(record=True)
    for gid, pts in info.tests:
        passed, message, mistake = run.run_check(gid)
        fn = info.checks[gid].function
        score = float(pts) if passed else 0.0
        result.tests.append(TestResult(gid, fn, float(pts), score, passed, message, mistake))
    result.notes = [*result.notes, *run.notes]
    if run.fatal:
        result.status, result.reason = BAD, run.fatal


def grade(job: Job, settings: Settings) -> SubmissionResult:
    """Grade one submission; always returns a result (status graded, bad or error)."""
    t0 = time.monotonic()
    info = assignment_info(job.assignment)
    result = SubmissionResult.start(job, settings.sandboxed)
    notebook, raw, why = load_submission(job.path)
    if notebook is None:
        result.fail(info.test_rows(), BAD, why, f"not graded: {why}")
        result.apply_late(job.penalties)
        write_outputs(settings.grading_dir, job, info, None, {}, result)
        result.seconds = time.monotonic() - t0
        return result
    _stamp(result, notebook, info)
    run = None
    try:
        run = Run(job, settings, info, notebook, raw)
        result.clock("setup", time.monotonic() - t0)
        _grade_notebook(run, result, info)
        result.apply_late(job.penalties)
        t1 = time.monotonic()
        write_outputs(settings.grading_dir, job, info, notebook, run.cell_results, result)
        result.clock("outputs", time.monotonic() - t1)
    except KernelError as exc:
        result.fail(
            info.test_rows(), ERROR, str(exc), "not graded: the grading kernel did not start"
        )
    except Exception as exc:  # noqa: BLE001 - a bug in grading: report it, keep the batch going
        msg = "not graded: the grader failed (your instructor has been told)"
        result.fail(info.test_rows(), ERROR, f"internal error: {type(exc).__name__}: {exc}", msg)
        result.trace = traceback.format_exc(limit=6)
    finally:
        if run is not None:
            t1 = time.monotonic()
            run.close()
            for phase, seconds in run.phases.items():
                result.clock(phase, seconds)
            result.clock("close", time.monotonic() - t1)
    result.seconds = time.monotonic() - t0
    return result
