"""The reference solutions, loaded from the one place they exist: the source notebooks.

Each assignment's reference is the code in the autograded answer cells of
``solutions/<a>/<a>.ipynb`` (the cells nbgrader marks ``solution: true``). We execute exactly
those cells, in order, in a fresh namespace, and hand out the functions they define. There is no
second copy to drift from the notebook.
"""

from __future__ import annotations

import json
import types
from functools import cache

from .paths import source_notebook


def solution_cells(nb: dict) -> list[dict]:
    """The code cells nbgrader treats as answer cells (they hold the reference)."""
    return [
        cell
        for cell in nb["cells"]
        if cell["cell_type"] == "code"
        and cell.get("metadata", {}).get("nbgrader", {}).get("solution")
    ]


def cell_source(cell: dict) -> str:
    src = cell["source"]
    return src if isinstance(src, str) else "".join(src)


def strip_markers(source: str) -> str:
    """Drop nbgrader's ### BEGIN/END SOLUTION marker lines, keep everything else."""
    keep = []
    for line in source.splitlines():
        if line.strip() in ("### BEGIN SOLUTION", "### END SOLUTION"):
            continue
        keep.append(line)
    return "\n".join(keep) + "\n"


@cache
def load(assignment: str) -> types.SimpleNamespace:
    """Execute the answer cells of an assignment's source notebook; return what they define."""
    path = source_notebook(assignment)
    nb = json.loads(path.read_text(encoding="utf-8"))
    namespace: dict = {"__name__": f"reference_{assignment}"}
    for cell in solution_cells(nb):
        code = compile(strip_markers(cell_source(cell)), f"{path.name}:{cell.get('id')}", "exec")
        exec(code, namespace)  # noqa: S102 - our own reference code, never a submission
    public = {k: v for k, v in namespace.items() if not k.startswith("_")}
    return types.SimpleNamespace(**public)


def function(assignment: str, name: str):
    """One reference function, e.g. ``function("01_one_hot_lookup", "embedding_forward")``."""
    ref = load(assignment)
    try:
        return getattr(ref, name)
    except AttributeError:
        raise LookupError(f"the source notebook of {assignment} defines no {name!r}") from None
