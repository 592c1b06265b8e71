"""Read and write notebooks byte-stably.

Source notebooks (solutions/) are nbformat 4.5 with fixed cell ids and no outputs, so that the
release generated from them is byte-stable. :func:`write` always writes the same bytes for the
same content; ``python -m autograder.nb normalize FILE...`` re-writes a notebook edited in
JupyterLab (outputs and execution counts stripped, keys sorted).
"""

from __future__ import annotations

import json
from pathlib import Path


def read(path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def dumps(nb: dict) -> str:
    return json.dumps(nb, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


def write(nb: dict, path) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(dumps(nb), encoding="utf-8")


def strip_outputs(nb: dict) -> dict:
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
        cell.get("metadata", {}).pop("execution", None)
    return nb
