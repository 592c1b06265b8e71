"""The graded copy of a submission: ``<grading>/autograded/<student>/<a>/<a>.ipynb``.

The submission as it ran, with outputs capped in characters (a single 60 MB line would pass
nbgrader's line cap), and every test cell replaced by its *released* form (visible tests only: the
source with hidden tests never enters it) with the verdict as its output. Deleted test cells come
back. It stays well under 10 MB whatever the submission printed.
"""

from __future__ import annotations

import copy
import json

from .. import nb
from .assignment import test_of

MAX_SOURCE_CHARS = 100_000  # per cell of the graded copy
MAX_OUTPUT_CHARS = 2_000_000  # all outputs of the graded copy together
MAX_GRADED_BYTES = 9 * 1024**2  # the graded copy is shrunk further if it ever exceeds this


def trim(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n# [grader: {len(text) - limit:,} more characters cut off]\n"


def _small_metadata(meta) -> dict:
    """A cell's metadata, unless it is not a dict or is suspiciously large."""
    if not isinstance(meta, dict):
        return {}
    try:
        return meta if len(json.dumps(meta)) <= 20_000 else {}
    except (TypeError, ValueError):
        return {}


def _verdict_output(test) -> dict:
    if test.passed:
        text = f"passed: {test.score:g}/{test.points:g} points\n"
        return {"output_type": "stream", "name": "stdout", "text": text}
    msg = test.message or "failed"
    return {
        "output_type": "error",
        "ename": "AssertionError",
        "evalue": msg,
        "traceback": [f"AssertionError: {msg}"],
    }


class _Copy:
    """Builds the graded copy cell by cell, with one output budget for the whole notebook."""

    def __init__(self, info, cell_results: dict, tests: list):
        self.info, self.cell_results = info, cell_results
        self.by_gid = {t.grade_id: t for t in tests}
        self.release_tests = {
            nb.grade_id(c): c for c in info.release_cells if c["cell_type"] == "code"
        }
        self.budget = MAX_OUTPUT_CHARS
        self.cells: list = []
        self.placed: dict = {}

    def test_cell(self, gid: str) -> dict:
        cell = copy.deepcopy(self.release_tests[gid])
        cell["outputs"] = [_verdict_output(self.by_gid[gid])]
        cell["execution_count"] = None
        return cell

    def outputs(self, i: int) -> list:
        res, outs = self.cell_results.get(i), []
        for out in res.outputs if res is not None else []:
            n = len(json.dumps(out))
            if n > self.budget:
                text = "[grader: output removed, the notebook printed too much]\n"
                outs.append({"output_type": "stream", "name": "stderr", "text": text})
                break
            self.budget -= n
            outs.append(out)
        return outs

    def student_cell(self, i: int, cell: dict) -> dict:
        kind = cell.get("cell_type")
        c = {
            "cell_type": kind if kind in ("code", "markdown", "raw") else "raw",
            "metadata": _small_metadata(cell.get("metadata")),
            "source": trim(nb.source(cell), MAX_SOURCE_CHARS),
        }
        if isinstance(cell.get("id"), str):
            c["id"] = cell["id"][:64]
        if c["cell_type"] == "code":
            res = self.cell_results.get(i)
            c["outputs"] = self.outputs(i)
            c["execution_count"] = res.execution_count if res is not None else None
        return c

    def add(self, i: int, cell: dict) -> None:
        gid = test_of(cell, self.info)
        if gid is None:
            self.cells.append(self.student_cell(i, cell))
        elif gid not in self.placed and gid in self.release_tests:
            self.placed[gid] = len(self.cells)
            self.cells.append(self.test_cell(gid))

    def restore_deleted(self) -> None:
        """Deleted test cells come back, after the cell that precedes them in the release."""
        rel_keys = [
            {k for k in (nb.grade_id(rc), rc.get("id")) if k} for rc in self.info.release_cells
        ]
        for gid, _pts in self.info.tests:
            if gid in self.placed or gid not in self.release_tests:
                continue
            idx = next(i for i, keys in enumerate(rel_keys) if gid in keys)
            before = set().union(*rel_keys[:idx]) if idx else set()
            pos = len(self.cells)
            for j in range(len(self.cells) - 1, -1, -1):
                if {nb.grade_id(self.cells[j]), self.cells[j].get("id")} & before:
                    pos = j + 1
                    break
            self.cells.insert(pos, self.test_cell(gid))
            self.placed[gid] = pos


def _size(notebook: dict) -> int:
    return len(nb.dumps(notebook).encode())


def _shrink(graded: dict, info) -> None:
    """Keep the grading, drop the bulk: first outputs and long sources, then all but answers."""
    cells = graded["cells"]
    if _size(graded) > MAX_GRADED_BYTES:
        for c in cells:
            if test_of(c, info):
                continue
            c["source"] = trim(c["source"], 5_000)
            nbg = nb.meta(c)
            c["metadata"] = (
                {"nbgrader": {k: v for k, v in nbg.items() if k in nb.NBGRADER_KEYS}} if nbg else {}
            )
            if c["cell_type"] == "code":
                c["outputs"] = []
    if _size(graded) > MAX_GRADED_BYTES:
        keep = set(info.answer_ids)
        graded["cells"] = [c for c in cells if test_of(c, info) or nb.grade_id(c) in keep]


def graded_notebook(notebook: dict, info, cell_results: dict, tests: list) -> dict:
    """The graded copy: student cells as they ran, test cells in their released form + verdict."""
    builder = _Copy(info, cell_results, tests)
    for i, cell in enumerate(notebook["cells"]):
        builder.add(i, cell)
    builder.restore_deleted()
    meta = notebook.get("metadata") or {}
    graded = {
        "cells": builder.cells,
        "metadata": {
            k: v for k, v in meta.items() if k in ("kernelspec", "language_info", "course")
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    _shrink(graded, info)
    return graded
