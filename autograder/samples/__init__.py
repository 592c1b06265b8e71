"""Sample submissions, built from the release notebook at test (or demo) time.

For every assignment there is a module ``samples/chNN.py`` with

* ``ALTERNATIVES``: name -> {function: source}, correct answers written differently from the
  reference (a loop, np.add.at, bincount, ...): each must earn full marks;
* ``MISTAKES``: name -> :class:`Mistake`, classic wrong answers with the test cells they must fail,
  a phrase the feedback must contain and the stable id of the mistake grading must record
  (``judges.Mistake.name``, e.g. ``"trap-overwrite"``);
* ``DEMO_MISTAKE``: the mistake used for the demo student.

A submission is the released notebook with the answer cells replaced (an answer cell's grade_id is
the name of the function it defines). ``python -m autograder.samples --install`` writes three demo
students per assignment (correct, one classic mistake, untouched stub) into
``<grading-dir>/submitted/`` (``make demo``: grading-demo/, never the term's grading/), so
``make demo`` shows the whole flow at once. Nothing here is published to students.
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass, field
from pathlib import Path

from .. import nb
from ..checks import reference
from ..course import GRADING, assignments, release_notebook


@dataclass
class Mistake:
    sources: dict
    fails: set = field(default_factory=set)
    says: str = ""
    id: str = ""  # the id grading records for a failing cell (test_report.csv's mistake column)


def module(assignment: str):
    return importlib.import_module(f"{__name__}.ch{assignment[:2]}")


def reference_sources(assignment: str) -> dict[str, str]:
    """function (answer cell grade_id) -> the reference source, solution markers removed."""
    return reference.sources(assignment)


def given_sources(assignment: str) -> dict[str, str]:
    """The given (locked) code cells a sample answer runs with, e.g. the capstone's model_grads."""
    return reference.given_sources(assignment)


def answer_cell_ids(assignment: str) -> list[str]:
    return list(reference_sources(assignment))


def build(assignment: str, sources: dict[str, str] | None) -> dict:
    """The release notebook with the given answer cells filled in (None: the untouched stub).

    Answer cells not named in ``sources`` get the reference, so a sample isolates one function.
    """
    notebook = nb.read(release_notebook(assignment))
    if sources is None:
        return notebook
    filled = {**reference_sources(assignment), **sources}
    for cell in notebook["cells"]:
        gid = nb.grade_id(cell)
        if gid in filled and nb.is_solution(cell):
            cell["source"] = nb.split_lines(filled[gid].strip("\n"))
    return notebook


def demo_students(assignment: str) -> dict[str, dict]:
    """student id -> notebook: correct, one classic mistake, untouched stub."""
    mod = module(assignment)
    return {
        "demo_correct": build(assignment, {}),
        "demo_mistake": build(assignment, mod.MISTAKES[mod.DEMO_MISTAKE].sources),
        "demo_stub": build(assignment, None),
    }


def install(dest: Path | None = None, only: list[str] | None = None) -> list[Path]:
    """Write the demo students' submissions in nbgrader's layout: <student>/<a>/<a>.ipynb."""
    dest = dest or GRADING / "submitted"
    written = []
    for a in only or assignments():
        for student, notebook in demo_students(a).items():
            path = dest / student / a / f"{a}.ipynb"
            nb.write(notebook, path)
            written.append(path)
    return written


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Write demo submissions into <grading-dir>/submitted/.")
    p.add_argument("--install", action="store_true", required=True)
    p.add_argument("--grading-dir", type=Path, default=GRADING, help="default grading/")
    p.add_argument("assignments", nargs="*")
    args = p.parse_args(argv)
    for path in install(args.grading_dir / "submitted", only=args.assignments or None):
        print("wrote", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
