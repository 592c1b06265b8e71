"""Small, dependable notebook plumbing: read, write byte-stably, and build source notebooks.

Source notebooks (solutions/) are nbformat 4.5 with fixed cell ids and no outputs, so that the
release generated from them is byte-stable. :func:`write` always writes the same bytes for the
same content; ``python -m autograder.notebooks normalize FILE...`` re-writes hand-edited files.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

NBGRADER_SCHEMA = 3


def read(path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def dumps(nb: dict) -> str:
    return json.dumps(nb, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


def write(nb: dict, path) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(dumps(nb), encoding="utf-8")


def source(cell: dict) -> str:
    src = cell.get("source", "")
    return src if isinstance(src, str) else "".join(src)


def split_lines(text: str) -> list[str]:
    """nbformat's on-disk form: a list of lines, each but the last ending in a newline."""
    text = text.strip("\n")
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + [lines[-1]]


def _slug(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9-_]+", "-", text).strip("-")[:60] or "cell"


def md(text: str, cell_id: str, locked: bool = True) -> dict:
    """A markdown cell; locked cells are read-only for students (nbgrader restores them)."""
    meta = {}
    if locked:
        meta["nbgrader"] = _nbgrader(cell_id, grade=False, solution=False, locked=True)
    return {
        "cell_type": "markdown",
        "id": _slug(cell_id),
        "metadata": meta,
        "source": split_lines(text),
    }


def code(text: str, cell_id: str, *, kind: str = "plain", points: int = 0, extra_meta=None) -> dict:
    """A code cell. kind: "plain" (ordinary), "solution" (an answer cell), "test" (autograded
    tests worth ``points``), "readonly" (locked code students should not edit)."""
    meta: dict = dict(extra_meta or {})
    if kind == "solution":
        meta["nbgrader"] = _nbgrader(cell_id, grade=False, solution=True, locked=False)
    elif kind == "test":
        meta["nbgrader"] = _nbgrader(
            cell_id, grade=True, solution=False, locked=True, points=points
        )
    elif kind == "readonly":
        meta["nbgrader"] = _nbgrader(cell_id, grade=False, solution=False, locked=True)
    elif kind != "plain":
        raise ValueError(f"unknown cell kind {kind!r}")
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": _slug(cell_id),
        "metadata": meta,
        "outputs": [],
        "source": split_lines(text),
    }


def _nbgrader(grade_id, *, grade, solution, locked, points=None):
    meta = {
        "grade": grade,
        "grade_id": grade_id,
        "locked": locked,
        "schema_version": NBGRADER_SCHEMA,
        "solution": solution,
        "task": False,
    }
    if points is not None:
        meta["points"] = points
    return meta


def notebook(cells: list[dict]) -> dict:
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": {
                "display_name": "Python 3 (ipykernel)",
                "language": "python",
                "name": "python3",
            },
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def strip_outputs(nb: dict) -> dict:
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
        cell.get("metadata", {}).pop("execution", None)
    return nb


def grade_cells(nb: dict) -> dict[str, dict]:
    """grade_id -> cell for every cell with nbgrader metadata."""
    out = {}
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader")
        if meta and meta.get("grade_id"):
            out[meta["grade_id"]] = cell
    return out


def test_cells(nb: dict) -> dict[str, dict]:
    """grade_id -> cell for autograded test cells (graded, not answers)."""
    return {
        gid: c
        for gid, c in grade_cells(nb).items()
        if c["metadata"]["nbgrader"].get("grade") and not c["metadata"]["nbgrader"].get("solution")
    }


def points(nb: dict) -> dict[str, float]:
    return {
        gid: float(c["metadata"]["nbgrader"].get("points", 0)) for gid, c in test_cells(nb).items()
    }


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] != "normalize":
        print("usage: python -m autograder.notebooks normalize NOTEBOOK...", file=sys.stderr)
        return 2
    for path in argv[1:]:
        nb = strip_outputs(read(path))
        nb["nbformat"], nb["nbformat_minor"] = 4, 5
        write(nb, path)
        print("normalized", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
