"""After the deadline: ``nbgrader generate_solution`` into grading/released_solutions/, made into
notebooks students can run anywhere (helper cells inlined as in the exercise, hidden-test calls
into autograder/ and solution markers removed)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from .. import nb
from ..course import GRADING, assignments
from .generate import generate_into, postprocess


def _runnable(notebook: dict, assignment: str) -> dict:
    notebook = postprocess(notebook, assignment)
    for cell in notebook["cells"]:
        text = nb.strip_markers(nb.strip_hidden(nb.source(cell))).rstrip("\n")
        cell["source"] = nb.split_lines(text)
    return notebook


def release_solutions(only: list[str] | None = None, grading: Path = GRADING) -> Path:
    out = grading / "released_solutions"
    with tempfile.TemporaryDirectory(prefix="solutions-") as tmp:
        db = Path(tmp) / "gradebook.db"  # generate_solution needs the assignment in a gradebook
        for a in only or assignments():
            generate_into(Path(tmp) / "release", a, db)
            nb.run_nbgrader(
                ["generate_solution", a, "--force", "--log-level=WARN", f"--db=sqlite:///{db}",
                 f"--CourseDirectory.solution_directory={out}"]
            )  # fmt: skip
            for path in sorted((out / a).glob("*.ipynb")):
                nb.write(_runnable(nb.read(path), a), path)
    return out
