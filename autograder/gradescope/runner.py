"""What ``run_autograder`` does for one submission: find the notebook, grade it, write results.json.

``run_autograder`` runs it as ``python -m autograder.gradescope.runner`` from the zip's own copy of
the course (results.json's ``extra_data.grader`` says which ``autograder`` package graded). A
notebook of another assignment (:mod:`.identify`) is refused before anything of it runs.

Exit status: 0 graded (or nothing gradable was submitted: the student is told why), 1 grading
itself failed (the kernel did not start, a bug), 3 the kernel cannot be run safely here, so
nothing was run (results.json says so, with a score of 0).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import autograder

from .. import nb
from ..course import ROOT
from ..grade.assignment import assignment_info
from ..grade.results import ERROR, Job, SubmissionResult
from ..grade.settings import Settings
from ..grade.submission import load_submission
from ..grade.worker import grade
from . import identify, isolation, results

CONFIG = "gradescope.json"
EXIT_OK, EXIT_FAILED, EXIT_UNSAFE = 0, 1, 3
SKIP_DIRS = {".ipynb_checkpoints", "__MACOSX"}


def gradescope_root() -> Path:
    return Path(os.environ.get("GRADESCOPE_ROOT") or "/autograder")


def config() -> dict:
    return json.loads((ROOT / CONFIG).read_text(encoding="utf-8"))


def notebooks(folder: Path) -> list[Path]:
    """Every .ipynb under the submission folder, checkpoints and hidden folders left out."""
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        found += [
            Path(dirpath) / f
            for f in sorted(filenames)
            if f.lower().endswith(".ipynb") and not f.startswith(".")  # macOS's ._x.ipynb
        ]
    return found


def find_submission(folder: Path, assignment: str) -> tuple[Path | None, str | None]:
    """(the notebook, None), or (None, a message for the student)."""
    found = notebooks(folder) if folder.is_dir() else []
    if len(found) == 1:
        return found[0], None
    if not found:
        others = sorted(p.name for p in folder.iterdir())[:8] if folder.is_dir() else []
        listed = f" (the submission holds: {', '.join(others)})" if others else ""
        return None, f"no notebook was submitted{listed}: upload your {assignment}.ipynb"
    names = ", ".join(str(p.relative_to(folder)) for p in found[:8])
    return None, f"{len(found)} notebooks were submitted ({names}): upload exactly one .ipynb"


def _summary(result: SubmissionResult, info, how: str) -> str:
    """The text above the tests; ``how`` is empty when nothing of the notebook ran."""
    lines = [f"{info.name}: {result.score:g} / {result.max_score:g} points."]
    if how:
        lines.append(f"Graded against release {nb.stamp_label(info.stamp)}; your notebook is "
                     f"from release {result.release or 'unknown'}.")  # fmt: skip
    if result.stale:
        lines.append("Your notebook comes from another release of this exercise: download the "
                     "current one and copy your answers into it.")  # fmt: skip
    if result.reason:
        lines.append(f"{'Not fully graded' if how else 'Not graded'}: {result.reason}")
    lines += [f"Note: {n}" for n in result.notes]
    if how:
        lines.append(f"Isolation: {how}.")
    return "\n".join(lines)


def document(result: SubmissionResult, info, cfg: dict, how: str, seconds: float) -> dict:
    vis = cfg.get("visibility", "visible")
    tests = [
        results.test_entry(
            n, f"{t.grade_id} ({t.function})", t.score, t.points,
            t.message or "passed: every case, the hidden ones included", vis,
        )
        for n, t in enumerate(result.tests, start=1)
    ]  # fmt: skip
    extra = {
        "assignment": info.name,
        "release": nb.stamp_label(info.stamp),
        "submission_release": result.release,
        "stale": result.stale,
        "status": result.status,
        "isolation": how,
        "grader": autograder.__file__,
    }
    out = _summary(result, info, how)
    return results.document(result.score, out, tests, extra, seconds)


def not_graded(info, why: str, message: str | None = None) -> SubmissionResult:
    """Zeros on every test, each saying why (or ``message``)."""
    job = Job(0, "gradescope", info.name, None)
    message = message or f"not graded: {why}"
    return SubmissionResult.not_graded(job, info.test_rows(), "bad", why, message)


def admit(root: Path, info, cfg: dict) -> tuple[Path | None, SubmissionResult | None]:
    """(the notebook to grade, None), or (None, zeros saying why) for a submission that cannot be
    graded as it stands, nothing of it run: no notebook or several, a broken file, another
    assignment's notebook."""
    path, why = find_submission(root / "submission", info.name)
    if path is None:
        return None, not_graded(info, why)
    notebook, _, why = load_submission(path)
    if notebook is None:
        return None, not_graded(info, why)
    other = identify.wrong_assignment(notebook, cfg.get("assignments", {}), info.name)
    return (None, not_graded(info, *other)) if other else (path, None)


def grade_safely(path: Path, info, iso: isolation.Isolation) -> SubmissionResult:
    """Grade the notebook with private temporary folders, then clean up after the kernel."""
    isolation.activate(iso)
    run_root = Path(tempfile.mkdtemp(prefix="gradescope-run-"))
    grading_dir = Path(tempfile.mkdtemp(prefix="gradescope-graded-"))
    # The kernel's user must reach its own scratch folder inside the run root, nothing more.
    os.chmod(run_root, 0o711 if iso.kind == isolation.UNPRIVILEGED else 0o700)
    settings = Settings(
        run_root=run_root,
        grading_dir=grading_dir,
        sandboxed=iso.kind == isolation.BUBBLEWRAP,
    )
    try:
        return grade(Job(0, "gradescope", info.name, path), settings)
    finally:
        if iso.kind == isolation.UNPRIVILEGED and not isolation.kill_uid(iso.uid):
            print("warning: processes of the kernel's user survived", file=sys.stderr)
        shutil.rmtree(run_root, ignore_errors=True)
        shutil.rmtree(grading_dir, ignore_errors=True)


def _misplaced(root: Path) -> str | None:
    if ROOT != (root / "source").resolve():
        return f"the grader was loaded from {ROOT}, not from {root / 'source'}"
    return None


def run() -> int:
    t0 = time.monotonic()
    root = gradescope_root()
    cfg = config()
    info = assignment_info(cfg["assignment"])
    out = root / "results" / "results.json"
    status, how = EXIT_OK, ""
    isolation.lock_down(root)
    path, result = admit(root, info, cfg)
    if path is not None:
        iso = isolation.choose(root)
        problem = _misplaced(root)
        if problem or not iso.ok:
            why = problem or iso.detail
            result, status = not_graded(info, f"grading could not run safely: {why}"), EXIT_UNSAFE
            result.status = ERROR
        else:
            result, how = grade_safely(path, info, iso), iso.detail
            status = EXIT_FAILED if result.status == ERROR else EXIT_OK
    results.write(out, document(result, info, cfg, how, time.monotonic() - t0))
    print(f"{info.name}: {result.score:g}/{result.max_score:g} ({result.status}) -> {out}")
    if result.reason:
        print(f"reason: {result.reason}")
    if result.trace:
        print(result.trace)
    return status


if __name__ == "__main__":
    raise SystemExit(run())
