"""Hidden checks, one module per chapter (ch01.py, ch02.py, ...).

Hidden test cells call them: ``from autograder.checks import ch01; ch01.forward_values(f)``.
``make grade`` finds the Check behind each test cell with :func:`for_assignment`.
"""

from __future__ import annotations

import importlib

from .framework import Check, registry


def module_for(assignment: str):
    """checks/chNN.py for assignment "NN_slug"."""
    return importlib.import_module(f"{__name__}.ch{assignment[:2]}")


def for_assignment(assignment: str) -> dict[str, Check]:
    """grade_id -> Check for every hidden check of an assignment."""
    return registry(module_for(assignment))
