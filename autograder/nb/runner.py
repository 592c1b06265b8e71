"""The one wrapper around the ``nbgrader`` command line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ..course import ROOT


class NbgraderError(RuntimeError):
    """An nbgrader command exited non-zero; the message holds the tail of its output."""


def run_nbgrader(
    args: list[str], cwd: Path = ROOT, check: bool = True
) -> subprocess.CompletedProcess:
    """Run ``python -m nbgrader ARGS`` with this interpreter's tools first on PATH (nbgrader
    shells out to ``alembic`` when it creates a gradebook)."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args], cwd=cwd, env=env, capture_output=True, text=True
    )
    if check and proc.returncode != 0:
        raise NbgraderError(
            f"nbgrader {' '.join(args)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
        )
    return proc


def temporary_course_config(course: Path) -> str:
    """The nbgrader_config.py of a temporary course at ``course``: this course's settings, with
    the course root and the gradebook moved there (benchmarks and tests grade in such copies)."""
    db = "sqlite:///" + str(course / "grading" / "gradebook.db")
    return (
        "c = get_config()  # noqa: F821\n"
        f"load_subconfig({str(ROOT / 'nbgrader_config.py')!r})  # noqa: F821\n"
        f"c.CourseDirectory.root = {str(course)!r}\n"
        f"c.CourseDirectory.db_url = {db!r}\n"
    )
