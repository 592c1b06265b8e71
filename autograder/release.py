"""`make release`: regenerate exercises/ from solutions/ (and the other one-way publishing steps).

    python -m autograder.release                 # every assignment -> exercises/
    python -m autograder.release --out DIR       # into DIR instead (tests compare it with exercises/)
    python -m autograder.release --solutions     # after the deadline: grading/released_solutions/
    python -m autograder.release --student-repo DIR   # book + exercises, nothing secret

Generation is nbgrader's `generate_assignment` (solution regions become stubs, hidden tests are
removed, checksums recorded) run against a throwaway gradebook, followed by one step of ours:
cells marked ``{"course": {"inline": ...}}`` in the source are filled with the source of the
helper they name (the environment check, the chapter's timing code), so a released notebook runs
anywhere without this repository, and the notebook is stamped with the release it came from.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from . import notebooks
from .paths import EXERCISES, GRADING, ROOT, assignments, source_notebook

COURSE_RELEASE = "2026.11"


def _inline_source(module_name: str) -> str:
    import importlib

    mod = importlib.import_module(module_name)
    text = inspect.getsource(mod)
    # The chapter benchmark modules import the shared helpers, which are pasted above them.
    lines = [ln for ln in text.splitlines() if not ln.startswith("from coursekit.")]
    return "\n".join(lines).strip("\n")


def inline_cell_source(spec: dict) -> str:
    """The full source of an inlined helper cell, from its {"inline": ...} spec."""
    kind = spec["inline"]
    if kind == "envcheck":
        body = _inline_source("coursekit.envcheck")
        head = "# Environment check (generated from coursekit/envcheck.py by `make release`)."
        return f"{head}\n{body}\n\n\ncheck_environment()\n"
    if kind == "timing":
        chapter = spec["chapter"]
        core = _inline_source("coursekit.timing")
        bench = _inline_source(f"coursekit.bench_ch{chapter}")
        head = (
            f"# Timing on your machine (generated from coursekit/timing.py and "
            f"coursekit/bench_ch{chapter}.py by `make release`).\n"
            "# It uses your GPU when torch sees one (CUDA, or MPS on Apple), else the CPU,\n"
            "# and does nothing while nbgrader grades."
        )
        return f"{head}\n{core}\n\n\n{bench}\n\n\nresult = timing()\n"
    raise ValueError(f"unknown inline kind {kind!r}")


def postprocess(nb: dict, source_path: Path) -> dict:
    """Fill inlined helper cells and stamp the release (deterministic)."""
    for cell in nb["cells"]:
        spec = cell.get("metadata", {}).get("course")
        if cell["cell_type"] == "code" and spec and "inline" in spec:
            cell["source"] = notebooks.split_lines(inline_cell_source(spec))
            cell["metadata"].setdefault("jupyter", {})["source_hidden"] = True
            tags = cell["metadata"].setdefault("tags", [])
            if "hide-input" not in tags:
                tags.append("hide-input")
    digest = hashlib.sha256(source_path.read_bytes()).hexdigest()[:12]
    nb["metadata"]["course"] = {"release": COURSE_RELEASE, "source_sha256": digest}
    return nb


def release_stamp(assignment: str) -> dict:
    """The stamp a notebook released from the current source would carry."""
    digest = hashlib.sha256(source_notebook(assignment).read_bytes()).hexdigest()[:12]
    return {"release": COURSE_RELEASE, "source_sha256": digest}


def _nbgrader(*args: str, cwd: Path = ROOT) -> None:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")


def generate(out_dir: Path = EXERCISES, only: list[str] | None = None) -> list[Path]:
    """Generate the release of each assignment into out_dir/<a>/; returns the notebooks written."""
    written = []
    with tempfile.TemporaryDirectory(prefix="release-") as tmp:
        tmp = Path(tmp)
        for a in only or assignments():
            stage = tmp / "release"
            _nbgrader(
                "generate_assignment",
                a,
                "--force",
                "--log-level=WARN",
                f"--db=sqlite:///{tmp / 'gradebook.db'}",
                f"--CourseDirectory.release_directory={stage}",
            )
            dest = out_dir / a
            if dest.exists():
                shutil.rmtree(dest)
            dest.mkdir(parents=True)
            for nb_path in sorted((stage / a).glob("*.ipynb")):
                nb = postprocess(notebooks.read(nb_path), source_notebook(a))
                notebooks.write(nb, dest / nb_path.name)
                written.append(dest / nb_path.name)
    return written


def release_solutions(only: list[str] | None = None) -> Path:
    """nbgrader generate_solution for each assignment, into grading/released_solutions/."""
    from .grading_book import prepare

    # generate_solution needs the assignment in the gradebook (a fresh clone has none yet)
    prepare(GRADING, only or assignments())
    from .grading_nbgrader import strip_hidden

    out = GRADING / "released_solutions"
    for a in only or assignments():
        _nbgrader("generate_solution", a, "--force", "--log-level=WARN")
        # Make the released solution a notebook students can run anywhere: helper cells inlined
        # (as in the exercise), hidden-test calls into autograder/ and solution markers removed.
        for path in sorted((out / a).glob("*.ipynb")):
            nb = postprocess(notebooks.read(path), source_notebook(a))
            for cell in nb["cells"]:
                text = strip_hidden(notebooks.source(cell))
                text = "\n".join(
                    ln
                    for ln in text.split("\n")
                    if ln.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION")
                )
                cell["source"] = notebooks.split_lines(text)
            notebooks.write(nb, path)
    return out


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
* Or use the launch buttons (Binder, Colab, JupyterHub) on each exercise page of the website.

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


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("assignments", nargs="*", help="default: every assignment in solutions/")
    p.add_argument("--out", type=Path, default=EXERCISES)
    p.add_argument(
        "--solutions", action="store_true", help="release solutions (after the deadline)"
    )
    p.add_argument("--student-repo", type=Path, help="write the student-facing copy here")
    args = p.parse_args(argv)
    if args.solutions:
        print("solutions released into", release_solutions(args.assignments or None))
        return 0
    if args.student_repo:
        print("student-facing copy written to", student_repo(args.student_repo.resolve()))
        return 0
    for path in generate(args.out.resolve(), args.assignments or None):
        print("released", path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
