"""What the grader knows about an assignment, from its source and release notebooks (trusted),
and how it recognises a submitted cell: by the *source* notebook's ids, never by what the
submission's metadata says about itself."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from .. import checks, nb
from ..course import release_notebook, source_notebook
from .exchange import encode_cases


@dataclass
class AssignmentInfo:
    name: str
    tests: list  # [(grade_id, points)] in notebook order
    test_ids: dict  # grade_id or cell id of a source test cell -> its grade_id
    inline_ids: set  # cell ids of the inlined helper cells
    answer_ids: list  # grade_ids of the answer cells (= function names)
    release_cells: list  # the release notebook's cells
    visible: dict  # grade_id -> visible source of the test cell (release notebook)
    checks: dict  # grade_id -> Check
    stamp: dict
    given: dict  # what the release gives the student, part by part (nb.given_parts)

    def test_rows(self) -> list[tuple[str, str, float]]:
        """[(grade_id, function, points)]: what a result with zeros everywhere needs."""
        return [(gid, self.checks[gid].function, pts) for gid, pts in self.tests]


@cache
def assignment_info(assignment: str) -> AssignmentInfo:
    src = nb.read(source_notebook(assignment))
    rel = nb.read(release_notebook(assignment))
    tests = nb.test_cells(src)
    pts = nb.points(src)
    registered = checks.for_assignment(assignment)
    missing = set(tests) - set(registered)
    if missing:
        raise RuntimeError(
            f"{assignment}: test cells without a registered Check: {sorted(missing)}"
        )
    return AssignmentInfo(
        name=assignment,
        tests=[(gid, pts[gid]) for gid in tests],
        test_ids={gid: gid for gid in tests}
        | {c["id"]: g for g, c in tests.items() if c.get("id")},
        inline_ids={c.get("id") for c in src["cells"] if nb.is_inline(c)},
        answer_ids=[nb.grade_id(c) for c in nb.solution_cells(src)],
        release_cells=rel["cells"],
        visible={gid: nb.source(c) for gid, c in nb.test_cells(rel).items()},
        checks=registered,
        stamp=nb.release_stamp(assignment),
        given=nb.given_parts(src),
    )


@cache
def cases_for(assignment: str, grade_id: str):
    """(cases, the bytes of their .npz) for one check: built once per worker process."""
    cases = assignment_info(assignment).checks[grade_id].cases()
    return cases, encode_cases(cases)


def test_of(cell: dict, info: AssignmentInfo) -> str | None:
    """The source test cell a submitted cell stands for (by grade_id, else by cell id), or None."""
    gid = nb.grade_id(cell)
    if gid in info.test_ids:
        return info.test_ids[gid]
    cid = cell.get("id")
    return info.test_ids.get(cid) if isinstance(cid, str) else None


def is_inline_cell(cell: dict, info: AssignmentInfo) -> bool:
    cid = cell.get("id")
    return (isinstance(cid, str) and cid in info.inline_ids) or nb.is_inline(cell)


def student_cells(notebook: dict, info: AssignmentInfo) -> list[int]:
    """Indices of the cells the student's kernel runs."""
    return [
        i
        for i, c in enumerate(notebook["cells"])
        if c.get("cell_type") == "code" and test_of(c, info) is None and not is_inline_cell(c, info)
    ]
