"""The reference solutions, loaded from the one place they exist: the source notebooks.

Each assignment's reference is the code in the autograded answer cells of
``solutions/<a>/<a>.ipynb`` (the cells nbgrader marks ``solution: true``), with the given code
they call (locked code cells that are neither answers nor tests, e.g. the capstone's
``model_grads``). We execute exactly those cells, in notebook order, in a fresh namespace, and hand
out the functions they define. There is no second copy to drift from the notebook.
"""

from __future__ import annotations

import types
from functools import cache

from .. import nb
from ..course import source_notebook


def sources(assignment: str) -> dict[str, str]:
    """function (answer cell grade_id) -> the reference source, solution markers removed."""
    notebook = nb.read(source_notebook(assignment))
    return {nb.grade_id(c): nb.strip_markers(nb.source(c)) for c in nb.solution_cells(notebook)}


def is_given(cell) -> bool:
    """Given code: a locked code cell that is neither an answer, a test nor an inlined helper.
    A student's notebook runs it as it is; so do the reference and the sample answers."""
    m = nb.meta(cell)
    return (
        cell.get("cell_type") == "code"
        and m.get("locked") is True
        and not m.get("grade")
        and not m.get("solution")
        and not nb.is_inline(cell)
    )


def given_sources(assignment: str) -> dict[str, str]:
    """grade_id -> the source of each given code cell, in notebook order."""
    notebook = nb.read(source_notebook(assignment))
    return {nb.grade_id(c) or "": nb.source(c) for c in notebook["cells"] if is_given(c)}


@cache
def load(assignment: str) -> types.SimpleNamespace:
    """Execute the given and answer cells of an assignment's source notebook; return what they
    define."""
    path = source_notebook(assignment)
    namespace: dict = {"__name__": f"reference_{assignment}"}
    for gid, text in {**given_sources(assignment), **sources(assignment)}.items():
        code = compile(text, f"{path.name}:{gid}", "exec")
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
