"""Generating exercises/ from solutions/: nbgrader's own ``generate_assignment``, nothing after it.

nbgrader_config.py adds the course's step to nbgrader's preprocessors for ``GenerateAssignment``
(:mod:`.nbgrader_plugins`): after nbgrader's own (solution regions become stubs, hidden tests are
removed, checksums recorded), :func:`postprocess` inlines the helper cells (:mod:`.inline`) and
stamps the notebook with the release it came from; the course's exporter writes it in the
canonical form of :mod:`autograder.nb.io`. So plain ``nbgrader generate_assignment A --force``
from the repository root writes exactly what ``make release`` writes: ``make release`` *is* that
command, run against a throwaway gradebook so that the course's grading/gradebook.db is untouched.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

from .. import nb
from ..course import COURSE_RELEASE, EXERCISES, assignments
from .inline import inline_cell_source


def postprocess(notebook: dict, assignment: str, source: Path | None = None) -> dict:
    """Fill inlined helper cells and stamp the release (deterministic). ``source``: the source
    notebook the release is made from (default solutions/<a>/<a>.ipynb); the stamp hashes it."""
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code" and nb.is_inline(cell):
            cell["source"] = inline_cell_source(cell["metadata"]["course"]).strip("\n")
            cell["metadata"].setdefault("jupyter", {})["source_hidden"] = True
            tags = cell["metadata"].setdefault("tags", [])
            if "hide-input" not in tags:
                tags.append("hide-input")
    if source is None:
        notebook["metadata"]["course"] = nb.release_stamp(assignment)
    else:
        digest = hashlib.sha256(Path(source).read_bytes()).hexdigest()
        notebook["metadata"]["course"] = {"release": COURSE_RELEASE, "source_sha256": digest[:12]}
    return notebook


def generate_into(out_dir: Path, assignment: str, db: Path) -> Path:
    """``nbgrader generate_assignment ASSIGNMENT --force`` with gradebook ``db``, released into
    out_dir/<a>/ (ASSIGNMENT may be ``*``: every assignment, one nbgrader start)."""
    args = [
        "generate_assignment",
        assignment,
        "--force",
        "--log-level=WARN",
        f"--db=sqlite:///{db}",
    ]
    if Path(out_dir).resolve() != EXERCISES.resolve():
        args.append(f"--CourseDirectory.release_directory={out_dir}")
    nb.run_nbgrader(args)
    return Path(out_dir) / assignment


def generate(out_dir: Path = EXERCISES, only: list[str] | None = None) -> list[Path]:
    """Generate the release of each assignment into out_dir/<a>/; returns the notebooks written."""
    names = only or assignments()
    with tempfile.TemporaryDirectory(prefix="release-") as tmp:
        db = Path(tmp) / "gradebook.db"
        for pattern in names if only else ["*"]:
            generate_into(out_dir, pattern, db)
    return [p for a in names for p in sorted((Path(out_dir) / a).glob("*.ipynb"))]
