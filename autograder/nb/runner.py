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
