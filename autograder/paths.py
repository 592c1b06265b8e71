"""Where things live. Everything is found from this file, so any working directory works."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
EXERCISES = ROOT / "exercises"
GRADING = ROOT / "grading"
BOOK = ROOT / "book"


def source_notebook(assignment: str) -> Path:
    """The nbgrader source notebook of an assignment: solutions/<a>/<a>.ipynb."""
    return SOLUTIONS / assignment / f"{assignment}.ipynb"


def release_notebook(assignment: str) -> Path:
    """The released (student) notebook of an assignment: exercises/<a>/<a>.ipynb."""
    return EXERCISES / assignment / f"{assignment}.ipynb"


def assignments() -> list[str]:
    """Every assignment that has a source notebook, in course order."""
    return sorted(p.name for p in SOLUTIONS.iterdir() if source_notebook(p.name).exists())
