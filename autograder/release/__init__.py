"""Publishing, one way: solutions/ -> exercises/ -> the website; after the deadline, the released
solutions; and the student-facing copy. ``python -m autograder.release`` (`make release`).

Imports notebook plumbing (:mod:`autograder.nb`) and coursekit (to inline it), never grading.
"""

from .generate import generate, postprocess
from .inline import INLINE, inline_cell_source
from .solutions import release_solutions
from .student import student_repo

__all__ = [
    "INLINE",
    "generate",
    "inline_cell_source",
    "postprocess",
    "release_solutions",
    "student_repo",
]
