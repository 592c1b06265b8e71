"""Which assignment an uploaded notebook is, from its cells' grade ids.

Every released notebook's answer and test cells carry nbgrader ``grade_id``s that name them
(``embedding_backward``, ``test_backward_repeated``); a notebook of another assignment carries
that assignment's. The zip holds, in ``gradescope.json``, every assignment's name, title and the
grade ids of its answer and test cells (public: they are in every released notebook), never its
checks or solutions; the runner refuses a notebook that matches another assignment better than
its own and says which one it is and what to upload. No stamp field is read: a notebook made
before this check existed is recognised the same way.

The match is the Jaccard index between the notebook's grade ids and an assignment's, over the
ids some assignment uses (the shared ``header`` or ``submit`` ids of markdown cells count for
none). A notebook that matches no assignment (the student wrote it afresh) is graded as usual.
"""

from __future__ import annotations

from .. import nb

MIN_MATCH = 0.5  # below this, a notebook is nobody's: it is graded, not refused


def graded_ids(notebook: dict) -> list[str]:
    """The grade ids of a notebook's answer and test cells, in notebook order."""
    return [nb.grade_id(c) for c in notebook["cells"] if nb.is_solution(c) or nb.is_test(c)]


def catalogue_entry(notebook: dict, fallback_title: str) -> dict:
    """{"title", "grade_ids"} of a released notebook: its first heading and its graded ids."""
    title = fallback_title
    for cell in notebook["cells"]:
        if cell.get("cell_type") == "markdown":
            first = nb.source(cell).strip().splitlines()[:1]
            if first and first[0].startswith("# "):
                title = first[0][2:].strip()
                break
    return {"title": title, "grade_ids": graded_ids(notebook)}


def _ids(notebook: dict) -> set[str]:
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    ids = (nb.grade_id(c) for c in cells if isinstance(c, dict)) if isinstance(cells, list) else ()
    return {g for g in ids if g}


def matches(notebook: dict, catalogue: dict[str, dict]) -> dict[str, float]:
    """assignment -> how well the notebook's grade ids match its own (0 to 1)."""
    known = set().union(*(set(e["grade_ids"]) for e in catalogue.values()))
    mine = _ids(notebook) & known
    out = {}
    for name, entry in catalogue.items():
        theirs = set(entry["grade_ids"])
        union = mine | theirs
        out[name] = len(mine & theirs) / len(union) if union else 0.0
    return out


def identify(notebook: dict, catalogue: dict[str, dict], expected: str) -> str | None:
    """The other assignment this notebook is, or None (it is ``expected``'s, or nobody's)."""
    scores = matches(notebook, catalogue)
    if not scores:
        return None
    own = scores.get(expected, 0.0)
    best = max(sorted(scores), key=lambda a: (scores[a], a == expected))
    if best == expected or scores[best] < MIN_MATCH or scores[best] <= own:
        return None
    return best


def wrong_assignment(
    notebook: dict, catalogue: dict[str, dict], expected: str
) -> tuple[str, str] | None:
    """(what to tell the student, what each test says) when the notebook is another
    assignment's; None when it is not."""
    other = identify(notebook, catalogue, expected)
    if other is None:
        return None
    title = catalogue[other]["title"]
    wanted = catalogue.get(expected, {}).get("title", expected)
    why = (
        f"this notebook is another assignment: {title} ({other}.ipynb). This assignment is "
        f"{wanted}: upload your {expected}.ipynb here, and {other}.ipynb to its own "
        "assignment. Nothing in this notebook was run"
    )
    return why, f"not graded: this is {other}.ipynb, another assignment's notebook (see above)"
