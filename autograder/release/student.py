"""The student-facing copy: the website sources and the exercises, nothing secret
(``make student-repo``)."""

from __future__ import annotations

import shutil
from pathlib import Path

from ..course import ROOT
from . import configure

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
{hub_line}
Each notebook starts with a cell that checks your environment. The graded functions need only
numpy; the timing cell uses PyTorch (on Linux, PyPI's default torch is the CUDA build: for the
small CPU build use `pip install torch --index-url https://download.pytorch.org/whl/cpu`).
"""

HUB_LINE = """\
* On your class's JupyterHub ({hub}): [open the exercises there]({hub_link}) (this
  repository, {url}, is cloned into your home the first time, and later updates never overwrite
  your work), or use its Assignments tab if your instructor releases them through nbgrader.
"""


def student_repo(dest: Path, config: Path = configure.CONFIG) -> Path:
    """A student-facing copy: the website sources and the exercises, nothing secret; its
    ``_config.yml`` is ``config`` (the repository's own unless a test gives another)."""
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
    shutil.copy2(config, dest / "_config.yml")
    values = configure.read(config)
    hub_line = ""  # no hub named while _config.yml has the placeholder (make configure sets it)
    if not configure.is_placeholder(values["hub"]):
        link = configure.launch_links(values, "exercises")["jupyterhub"]
        hub_line = HUB_LINE.format(hub=values["hub"], url=values["url"], hub_link=link)
    readme = STUDENT_README.format(hub_line=hub_line)
    (dest / "README.md").write_text(readme, encoding="utf-8")
    return dest
