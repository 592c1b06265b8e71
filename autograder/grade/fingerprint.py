"""The course a grader runs, as one fingerprint: what must be equal for two machines to give the
same verdict on the same notebook.

It covers everything that decides a verdict: the source notebooks (``solutions/<a>/<a>.ipynb``:
test cells, points, the reference answers), the checks (``autograder/checks/``: the framework,
the chapters' cases, the harness shipped into the kernel), the kernel exchange
(``autograder/grade/exchange.py``), and the versions of numpy and Python. ``make grade`` on a
cluster compares every worker's fingerprint with its own before grading anything.
"""

from __future__ import annotations

import hashlib
import platform
from functools import cache
from pathlib import Path

from ..course import ROOT, SOLUTIONS, assignments, source_notebook

VERDICT_CODE = ("autograder/checks", "autograder/grade/exchange.py")


def verdict_files() -> list[Path]:
    """Every file whose content can change a verdict, in a stable order."""
    files = [source_notebook(a) for a in assignments()]
    for rel in VERDICT_CODE:
        path = ROOT / rel
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return files


@cache
def fingerprint() -> dict[str, str]:
    """{"course": sha256 of the verdict files (names and contents), "numpy": ..., "python": ...}."""
    import numpy

    h = hashlib.sha256()
    for path in verdict_files():
        rel = path.relative_to(ROOT).as_posix()
        h.update(f"{rel}\0{path.stat().st_size}\0".encode())
        h.update(path.read_bytes())
    return {
        "course": h.hexdigest(),
        "assignments": " ".join(p.name for p in sorted(SOLUTIONS.iterdir()) if p.is_dir()),
        "numpy": numpy.__version__,
        "python": platform.python_version(),
    }


def differences(mine: dict[str, str], theirs: dict[str, str]) -> list[str]:
    """What differs between two fingerprints, in words (empty: the same course)."""
    out = []
    for key, what in (
        ("course", "course files (solutions/, autograder/checks/, exchange.py)"),
        ("assignments", "assignments"),
        ("numpy", "numpy"),
        ("python", "Python"),
    ):
        a, b = mine.get(key), theirs.get(key)
        if a != b:
            short = (lambda s: (s or "?")[:12]) if key == "course" else (lambda s: s or "?")
            out.append(f"{what}: {short(b)} there, {short(a)} here")
    return out
