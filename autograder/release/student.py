"""The student-facing copy: the website sources and the exercises, nothing secret
(``make student-repo``)."""

from __future__ import annotations

import shutil
from pathlib import Path

from ..course import ROOT

STUDENT_FILES = [
    "book",
    "exercises",
    "coursekit",
    "_config.yml",
    "_toc.yml",
    "requirements.txt",
    ".github",
]

STUDENT_MAKEFILE = """\
# The student copy's front door.
PYTHON ?= python3
VENV := .venv
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
# The chapter pages import coursekit/ from this folder.
export PYTHONPATH := $(CURDIR)

.PHONY: lab book

$(VENV)/.installed: requirements.txt
\t@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
\t$(VENV)/bin/python -m pip install -q -r requirements.txt
\t@touch $@

# Your own copy of the exercises, made once: later updates never overwrite your work.
lab: $(VENV)/.installed
\t@test -d workspace || cp -r exercises workspace
\tjupyter lab --notebook-dir=workspace

book: $(VENV)/.installed
\tjupyter-book build . --builder html -W --keep-going
"""

STUDENT_README = """\
# Embedding tables: the student copy

The course website's sources and the exercise notebooks, with nothing to grade them.

* `make lab`: sets up `.venv` from requirements.txt, copies the exercises into `workspace/` once
  (your work there is never overwritten) and starts JupyterLab.
* `make book`: builds the website into `_build/html`.
* Or use the launch buttons (Binder, Colab, JupyterHub) on each page of the website: a chapter
  opens as its notebook, `book/NN_slug.ipynb` (run its first cell first), an exercise as
  `exercises/NN_slug/NN_slug.ipynb`.

Each notebook starts with a cell that checks your environment. The graded functions need only
numpy; the timing cell uses PyTorch (on Linux, PyPI's default torch is the CUDA build: for the
small CPU build use `pip install torch --index-url https://download.pytorch.org/whl/cpu`).
"""


def student_repo(dest: Path) -> Path:
    """A student-facing copy: the website sources and the exercises, nothing secret."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    skip = shutil.ignore_patterns(
        "__pycache__", "*.pyc", "_build", ".jupyter_cache", ".ipynb_checkpoints"
    )
    for name in STUDENT_FILES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=skip)
        elif src.exists():
            shutil.copy2(src, dest / name)
    (dest / "Makefile").write_text(STUDENT_MAKEFILE, encoding="utf-8")
    (dest / "README.md").write_text(STUDENT_README, encoding="utf-8")
    return dest
