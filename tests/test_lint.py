"""ruff: lint and format, as in `make lint`."""

import subprocess
import sys


def test_ruff_check_passes(root):
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "."], cwd=root, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
