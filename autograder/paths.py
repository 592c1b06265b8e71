"""Deprecated location: see autograder/course.py."""

from .course import BOOK, EXERCISES, GRADING, ROOT, SOLUTIONS, assignments, release_notebook, source_notebook  # noqa: F401
