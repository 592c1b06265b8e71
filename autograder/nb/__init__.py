"""Notebook plumbing, each piece once: reading and writing, cell predicates, the nbgrader runner,
the release stamp. It imports nothing of the course but :mod:`autograder.course`.

    from autograder import nb
    nb.read(path); nb.grade_id(cell); nb.is_test(cell); nb.test_cells(notebook); nb.run_nbgrader(...)
"""

from .cells import (
    NBGRADER_KEYS,
    grade_id,
    is_inline,
    is_solution,
    is_test,
    meta,
    points,
    solution_cells,
    source,
    split_lines,
    strip_hidden,
    strip_markers,
    test_cells,
)
from .io import dumps, read, strip_outputs, write
from .runner import NbgraderError, run_nbgrader, temporary_course_config
from .stamp import given_parts, release_stamp, source_sha256, stamp_label

__all__ = [
    "NBGRADER_KEYS",
    "NbgraderError",
    "dumps",
    "given_parts",
    "grade_id",
    "is_inline",
    "is_solution",
    "is_test",
    "meta",
    "points",
    "read",
    "release_stamp",
    "run_nbgrader",
    "solution_cells",
    "source",
    "source_sha256",
    "split_lines",
    "stamp_label",
    "strip_hidden",
    "strip_markers",
    "strip_outputs",
    "temporary_course_config",
    "test_cells",
    "write",
]
