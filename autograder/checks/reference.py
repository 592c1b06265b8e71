"""The reference solutions, loaded from the one place they exist: the source notebooks.

Each assignment's reference is the code in the autograded answer cells of
``solutions/<a>/<a>.ipynb`` (the cells nbgrader marks ``solution: true``). We execute exactly
those cells, in order, in a fresh namespace, and hand out the functions they define. There is no
second copy to drift from the notebook.
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


@cache
def load(assignment: str) -> types.SimpleNamespace:
    """Execute the answer cells of an assignment's source notebook; return what they define."""
    path = source_notebook(assignment)
    namespace: dict = {"__name__": f"reference_{assignment}"}
    for gid, text in sources(assignment).items():
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
