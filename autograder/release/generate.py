"""Generating exercises/ from solutions/: nbgrader's ``generate_assignment`` against a throwaway
gradebook (solution regions become stubs, hidden tests are removed, checksums recorded), then one
step of ours, :func:`postprocess`: helper cells are inlined (:mod:`.inline`) and the notebook is
stamped with the release it came from."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from .. import nb
from ..course import EXERCISES, assignments
from .inline import inline_cell_source


def postprocess(notebook: dict, assignment: str) -> dict:
    """Fill inlined helper cells and stamp the release (deterministic)."""
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code" and nb.is_inline(cell):
            cell["source"] = nb.split_lines(inline_cell_source(cell["metadata"]["course"]))
            cell["metadata"].setdefault("jupyter", {})["source_hidden"] = True
            tags = cell["metadata"].setdefault("tags", [])
            if "hide-input" not in tags:
                tags.append("hide-input")
    notebook["metadata"]["course"] = nb.release_stamp(assignment)
    return notebook


def generate_into(stage: Path, assignment: str, db: Path) -> Path:
    """nbgrader generate_assignment of one assignment into stage/<a>/, with gradebook db."""
    nb.run_nbgrader(
        [
            "generate_assignment", assignment, "--force", "--log-level=WARN",
            f"--db=sqlite:///{db}", f"--CourseDirectory.release_directory={stage}",
        ]
    )  # fmt: skip
    return stage / assignment


def generate(out_dir: Path = EXERCISES, only: list[str] | None = None) -> list[Path]:
    """Generate the release of each assignment into out_dir/<a>/; returns the notebooks written."""
    written = []
    with tempfile.TemporaryDirectory(prefix="release-") as tmp:
        tmp = Path(tmp)
        for a in only or assignments():
            staged = generate_into(tmp / "release", a, tmp / "gradebook.db")
            dest = out_dir / a
            if dest.exists():
                shutil.rmtree(dest)
            dest.mkdir(parents=True)
            for nb_path in sorted(staged.glob("*.ipynb")):
                nb.write(postprocess(nb.read(nb_path), a), dest / nb_path.name)
                written.append(dest / nb_path.name)
    return written
