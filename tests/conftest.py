"""Shared fixtures: the repository root, a PATH with the venv's tools first, the built site."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
os.environ["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
SITE = ROOT / "_build" / "html"


@pytest.fixture(autouse=True)
def _environment_unchanged():
    """A test that changes PYTHONPATH in this process (loading nbgrader_config.py does) leaks it
    into every later test's subprocesses, which then import the course from the checkout: a
    Gradescope venv or a bare Python would pass for the wrong reason. Restore it, and fail."""
    before = os.environ.get("PYTHONPATH")
    yield
    after = os.environ.get("PYTHONPATH")
    if after != before:
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before
        pytest.fail(f"the test changed PYTHONPATH from {before!r} to {after!r} (use monkeypatch)")


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def built_site() -> Path:
    """The website, built once per test session with warnings as errors (`make book`'s command).

    Set COURSE_SKIP_BUILD=1 to reuse an existing _build/html while iterating on site tests.
    """
    if not (os.environ.get("COURSE_SKIP_BUILD") and (SITE / "index.html").exists()):
        # `make book`: the pages executed two at a time into the cache, then the build.
        subprocess.run([sys.executable, "book/_ext/prerun.py"], cwd=ROOT, check=False)
        proc = subprocess.run(
            ["jupyter-book", "build", ".", "--builder", "html", "-W", "--keep-going"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        log = proc.stdout + proc.stderr
        assert proc.returncode == 0, "the website build failed:\n" + log[-6000:]
    return SITE


def pytest_collection_modifyitems(items):
    """`pytest -m ch03` runs one chapter's tests: a test belongs to chapter NN when its file is
    test_chNN_*.py or one of its parameters names assignment NN_... (fairness, release, grading).
    A test of the built website (one that needs `built_site`) is not a chapter's: the whole site
    is built for it (minutes), which `make test` does once."""
    import re

    for item in items:
        chapters = set(re.findall(r"test_ch(\d\d)_", item.nodeid.split("::")[0]))
        if "built_site" not in getattr(item, "fixturenames", ()):
            chapters |= set(re.findall(r"(?<![0-9])(0[1-9])_[a-z]", item.nodeid.partition("[")[2]))
        for nn in chapters:
            item.add_marker(getattr(pytest.mark, f"ch{nn}"))
