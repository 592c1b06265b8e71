"""Publishing, one way: solutions/ -> exercises/ -> the website; each chapter page's notebook
(book/NN_slug.ipynb); after the deadline, the released solutions; and the student-facing copy.
``python -m autograder.release`` (`make release`).

Imports notebook plumbing (:mod:`autograder.nb`) and coursekit (to inline it), never grading.
"""

from .generate import generate, postprocess
from .inline import INLINE, inline_cell_source
from .pages import page_notebook, write_pages
from .solutions import release_solutions
from .student import student_repo

__all__ = [
    "INLINE",
    "generate",
    "inline_cell_source",
    "page_notebook",
    "postprocess",
    "release_solutions",
    "student_repo",
    "write_pages",
]
