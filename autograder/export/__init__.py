"""Grades from nbgrader's gradebook into the LMS's own grade-import file (Canvas, Moodle).

``python -m autograder.export --lms canvas --roster FILE`` (or ``make export LMS=canvas
ROSTER=FILE``) reads ``grading/gradebook.db`` and the roster the instructor exported from the
LMS, and writes ``grading/export/canvas.csv`` or ``grading/export/moodle.csv``. This package
depends only on :mod:`autograder.course` and nbgrader.
"""

from autograder.export.canvas import export_canvas
from autograder.export.csvio import ExportError, Table, read_table, write_table
from autograder.export.gradebook import Grades, read_grades
from autograder.export.moodle import export_moodle
from autograder.export.roster import read_map

__all__ = [
    "ExportError",
    "Grades",
    "Table",
    "export_canvas",
    "export_moodle",
    "read_grades",
    "read_map",
    "read_table",
    "write_table",
]
