"""ruff: lint and format, as in `make lint`."""

import subprocess
import sys


def test_ruff_check_passes(root):
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "."], cwd=root, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_no_control_character_in_a_text_source(root):
    """A control character in a page or notebook is an escape gone wrong: "\\approx" written from
    a Python string without r"" becomes BEL + "pprox", and MathJax renders it as an error box."""
    import re

    bad = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
    found = []
    for pattern in ("book/*.md", "book/*.ipynb", "book/*.bib", "solutions/*/*.ipynb", "*.md"):
        for path in sorted(root.glob(pattern)):
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if bad.search(line):
                    found.append(f"{path.relative_to(root)}:{n}: {line[:80]!r}")
    assert not found, "\n".join(found)
