"""Publishing, one way: solutions/ -> exercises/ -> the website; each chapter page's notebook
(book/NN_slug.ipynb); after the deadline, the released solutions; and the student-facing copy.
``python -m autograder.release`` (`make release`).

Imports notebook plumbing (:mod:`autograder.nb`) and coursekit (to inline it), never grading.
The grading path imports :mod:`.history` and so runs this file: nothing here may import coursekit
(the pages' notebooks, :mod:`.pages`, are imported by name), or every Gradescope zip carries it.
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
