"""The answer cells of every submission, and the code every student was given (the released
stub of each answer cell, the notebook's other code cells): what similarity is computed on."""

from __future__ import annotations

import json
from pathlib import Path

from .. import nb
from ..course import release_notebook
from . import similarity

MAX_BYTES = 20 * 2**20  # a notebook larger than this is not read (make grade refused it anyway)


def released(assignment: str) -> tuple[list[str], list[str]]:
    """(the answer cells' grade_ids, the code every student received) of the release notebook."""
    notebook = nb.read(release_notebook(assignment))
    ids, given = [], []
    for cell in notebook["cells"]:
        if cell.get("cell_type") != "code":
            continue
        if nb.is_solution(cell) and nb.grade_id(cell):
            ids.append(nb.grade_id(cell))
        if not nb.is_test(cell):
            given.append(nb.source(cell))
    return ids, given


def answer_cells(path: Path, ids: list[str]) -> dict[str, str] | None:
    """grade_id -> source of the notebook's answer cells; None when it cannot be read."""
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_BYTES:
            return None
        notebook = json.loads(path.read_text(encoding="utf-8"))
        cells = notebook["cells"] if isinstance(notebook, dict) else None
        if not isinstance(cells, list):
            return None
    except (OSError, ValueError, KeyError):
        return None
    out = {}
    for cell in cells:
        if isinstance(cell, dict) and nb.is_solution(cell) and nb.grade_id(cell) in ids:
            out.setdefault(nb.grade_id(cell), nb.source(cell))
    return out


def compare(grading_dir: Path, assignment: str, students: list[str]):
    """(pairs most similar first, student -> functions too short to judge, student -> answers)."""
    ids, given = released(assignment)
    texts = {}
    for s in students:
        got = answer_cells(grading_dir / "submitted" / s / assignment / f"{assignment}.ipynb", ids)
        if got is not None:
            texts[s] = got
    prints, short = similarity.fingerprints(texts, similarity.boilerplate(given))
    return similarity.pairs(prints), short, texts
