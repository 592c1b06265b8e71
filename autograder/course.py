"""The course's facts, in one place: where things live, its id and its release number.

Everything is found from this file, so any working directory works. This module imports nothing
of the course: it sits at the bottom of the import graph, under every package of autograder/.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
EXERCISES = ROOT / "exercises"
GRADING = ROOT / "grading"
BOOK = ROOT / "book"

COURSE_ID = "embedding-tables"  # nbgrader's course_id (nbgrader_config.py reads it from here)
COURSE_RELEASE = "2026.11"  # stamped into every released notebook


def source_notebook(assignment: str) -> Path:
    """The nbgrader source notebook of an assignment: solutions/<a>/<a>.ipynb."""
    return SOLUTIONS / assignment / f"{assignment}.ipynb"


def release_notebook(assignment: str) -> Path:
    """The released (student) notebook of an assignment: exercises/<a>/<a>.ipynb."""
    return EXERCISES / assignment / f"{assignment}.ipynb"


def assignments() -> list[str]:
    """Every assignment that has a source notebook, in course order."""
    return sorted(p.name for p in SOLUTIONS.iterdir() if source_notebook(p.name).exists())
