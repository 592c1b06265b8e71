"""Cell predicates and source helpers: the one place that reads nbgrader's cell metadata.

Every function here tolerates malformed cells (a submission's metadata is not trusted to have the
types nbformat promises): a predicate on a malformed cell is simply False.
"""

from __future__ import annotations

SOLUTION_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")
NBGRADER_KEYS = ("grade", "grade_id", "locked", "points", "schema_version", "solution", "task")


def meta(cell) -> dict:
    """A cell's nbgrader metadata, or {} when it has none (or it is malformed)."""
    m = cell.get("metadata") if isinstance(cell, dict) else None
    nbg = m.get("nbgrader") if isinstance(m, dict) else None
    return nbg if isinstance(nbg, dict) else {}


def grade_id(cell) -> str | None:
    gid = meta(cell).get("grade_id")
    return gid if isinstance(gid, str) and gid else None


def is_solution(cell) -> bool:
    """An answer cell (nbgrader ``solution: true``) of code."""
    return cell.get("cell_type") == "code" and meta(cell).get("solution") is True


def is_test(cell) -> bool:
    """An autograded test cell: graded, not an answer."""
    m = meta(cell)
    return bool(m.get("grade")) and not m.get("solution") and grade_id(cell) is not None


def is_inline(cell) -> bool:
    """A helper cell that ``make release`` fills with coursekit source ({"course": {"inline"}})."""
    m = cell.get("metadata") if isinstance(cell, dict) else None
    course = m.get("course") if isinstance(m, dict) else None
    return isinstance(course, dict) and "inline" in course


def source(cell) -> str:
    src = cell.get("source", "")
    return src if isinstance(src, str) else "".join(src)


def split_lines(text: str) -> list[str]:
    """nbformat's on-disk form: a list of lines, each but the last ending in a newline."""
    text = text.strip("\n")
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + [lines[-1]]


def test_cells(nb: dict) -> dict[str, dict]:
    """grade_id -> cell for every autograded test cell, in notebook order."""
    return {grade_id(c): c for c in nb["cells"] if is_test(c)}


def solution_cells(nb: dict) -> list[dict]:
    """The code cells nbgrader treats as answer cells (in the source: the reference)."""
    return [c for c in nb["cells"] if is_solution(c)]


def points(nb: dict) -> dict[str, float]:
    return {gid: float(meta(c).get("points", 0)) for gid, c in test_cells(nb).items()}


def strip_markers(text: str) -> str:
    """Drop nbgrader's ### BEGIN/END SOLUTION marker lines, keep everything else."""
    keep = [ln for ln in text.splitlines() if ln.strip() not in SOLUTION_MARKERS]
    return "\n".join(keep) + "\n"


def strip_hidden(
    text: str, begin: str = "BEGIN HIDDEN TESTS", end: str = "END HIDDEN TESTS"
) -> str:
    """The source without its hidden-test regions (an unterminated one runs to the end)."""
    keep, inside = [], False
    for line in text.split("\n"):
        if begin in line:
            inside = True
        elif end in line:
            inside = False
        elif not inside:
            keep.append(line)
    return "\n".join(keep)
