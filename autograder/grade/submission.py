"""Reading a submitted notebook: anything malformed is the submission's fault (zeros, and the
reason in words), never a crash of the grader."""

from __future__ import annotations

import json
from pathlib import Path

MAX_NOTEBOOK_BYTES = 20 * 1024**2  # a larger submission is refused (zeros, with the reason)


class BadSubmission(Exception):
    """The notebook cannot be graded; the message says why, for the student."""


def well_formed(cell) -> bool:
    """The parts of a cell the grader reads have the types nbformat promises."""
    if not isinstance(cell, dict) or not isinstance(cell.get("cell_type"), str):
        return False
    meta = cell.get("metadata", {})
    if not isinstance(meta, dict) or not isinstance(meta.get("nbgrader", {}), dict):
        return False
    if not isinstance(cell.get("id", ""), str):
        return False
    src = cell.get("source", "")
    return isinstance(src, str) or (isinstance(src, list) and all(isinstance(s, str) for s in src))


def _missing(path: Path | None) -> str:
    others = []
    if path is not None and path.parent.is_dir():
        others = sorted(p.name for p in path.parent.glob("*.ipynb"))
    hint = f" (found {', '.join(others[:5])}: the notebook must keep its name)" if others else ""
    return f"no notebook was submitted{hint}"


def read_bytes(path: Path | None) -> bytes:
    """The submitted file's bytes: a plain file under the size limit."""
    if path is None or not (path.exists() or path.is_symlink()):
        raise BadSubmission(_missing(path))
    if path.is_symlink() or not path.is_file():
        raise BadSubmission("the submitted notebook is not a plain file")
    size = path.stat().st_size
    if size > MAX_NOTEBOOK_BYTES:
        limit = MAX_NOTEBOOK_BYTES // 1024**2
        raise BadSubmission(
            f"the notebook is too large ({size / 1024**2:.0f} MB; the limit is {limit} MB)"
        )
    return path.read_bytes()


def parse(raw: bytes) -> dict:
    """The notebook in ``raw``, checked to be one the grader can read."""
    try:
        nb = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadSubmission(
            f"the notebook is not valid JSON ({str(exc)[:120]}): was it saved completely?"
        ) from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise BadSubmission("the file is not a Jupyter notebook (no list of cells)")
    if not isinstance(nb.get("metadata", {}), dict):
        raise BadSubmission("the notebook's metadata is malformed")
    for n, cell in enumerate(nb["cells"], start=1):
        if not well_formed(cell):
            raise BadSubmission(
                f"cell {n} of the notebook is malformed (was the file edited by hand?)"
            )
    return nb


def load_submission(path: Path | None) -> tuple[dict | None, bytes | None, str | None]:
    """(notebook, raw bytes, None) or (None, None, why it cannot be graded)."""
    try:
        raw = read_bytes(path)
        return parse(raw), raw, None
    except BadSubmission as exc:
        return None, None, str(exc)
