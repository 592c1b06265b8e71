"""``make gradescope-test ASSIGNMENT=A [NOTEBOOK=...]``: the built zip graded here as on Gradescope.

With notebooks, each is graded and its results printed. Without, four samples are: a correct
answer (full marks expected), the assignment's demo classic mistake (fewer points, the mistake
named), the untouched stub (0) and another assignment's correct notebook (0, that assignment
named, nothing run). The exit status is 0 only when every notebook was graded by the extract's own
``autograder`` and every sample scored as expected. See :mod:`.local` for how it is run.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from .. import nb
from ..course import assignments, source_notebook
from . import local


def samples_for(assignment: str) -> list[tuple[str, dict, object]]:
    """(label, notebook, expectation(doc) -> problem or None) for the four samples."""
    from .. import samples

    full = sum(nb.points(nb.read(source_notebook(assignment))).values())
    mod = samples.module(assignment)
    mistake = mod.MISTAKES[mod.DEMO_MISTAKE]
    names = assignments()
    other = names[(names.index(assignment) + 1) % len(names)]

    def correct(doc):
        return None if doc["score"] == full else f"expected {full:g} points"

    def classic(doc):
        failed = [t for t in doc["tests"] if t["score"] < t["max_score"]]
        named = any(mistake.says in t["output"] for t in failed)
        return None if failed and named else f"expected fewer points and {mistake.says!r}"

    def stub(doc):
        return None if doc["score"] == 0 else "expected 0 points"

    def wrong(doc):
        ok = doc["score"] == 0 and other in doc["output"] and "another assignment" in doc["output"]
        return None if ok else f"expected 0 points and a message naming {other}"

    return [
        ("a correct answer", samples.build(assignment, {}), correct),
        (f"the classic mistake {mod.DEMO_MISTAKE!r}", samples.build(assignment, mistake.sources),
         classic),
        ("the untouched stub", samples.build(assignment, None), stub),
        (f"{other}'s notebook (the wrong assignment)", samples.build(other, {}), wrong),
    ]  # fmt: skip


def grade_one(root: Path, venv: Path, label: str, notebook, expect=None) -> bool:
    """Grade one notebook in the prepared root, print its results; True when all is as it must."""
    print(f"\n== {label}")
    name = notebook.name if isinstance(notebook, Path) else "submission.ipynb"
    local.submit(root, notebook, name)
    proc, doc = local.run(root, venv)
    problem = local.misplaced(doc, root)
    if doc is not None:
        print(local.describe(doc))
        problem = problem or (expect(doc) if expect else None)
    if problem:
        print(f"FAILED: {problem}\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return problem is None


def main(assignment: str, zip_path: Path, notebooks: list[Path]) -> int:
    if not zip_path.is_file():
        print(f"error: no {zip_path}: run make gradescope ASSIGNMENT={assignment}", file=sys.stderr)
        return 2
    root = local.extract(zip_path)
    try:
        venv, out = local.setup(root)
        print(out.rstrip())
        print(f"venv: {venv} (from {zip_path.name}'s requirements-grading.txt alone)")
        if notebooks:
            cases = [(str(p), p.resolve(), None) for p in notebooks]
        else:
            cases = samples_for(assignment)
        ok = [grade_one(root, venv, label, n, expect) for label, n, expect in cases]
    except local.LocalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(root, ignore_errors=True)  # it holds the solutions: never left behind
    print(f"\n{sum(ok)} of {len(ok)} notebooks graded as expected by {zip_path}")
    return 0 if all(ok) else 1
