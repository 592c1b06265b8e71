"""The helper cells ``make release`` fills with coursekit source, so that a released notebook runs
anywhere (Colab, Binder, the student copy) without this repository.

A source cell marked ``{"course": {"inline": KIND, ...}}`` gets the source of the modules listed
for KIND in :data:`INLINE`, pasted in that order. A pasted module may import names from the
modules pasted before it (``from coursekit.timing import ...``): that one statement is dropped,
because those names are already defined above it. Any other import of the course is an error.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap

# kind -> (the modules pasted, in order; the line that ends the cell). "{chapter}" is the
# two-digit chapter number from the cell's spec.
INLINE = {
    "envcheck": (["coursekit.envcheck"], "check_environment()"),
    "timing": (["coursekit.timing", "coursekit.bench_ch{chapter}"], "result = timing()"),
    "gradcheck": (
        ["coursekit.gradcheck"],
        'print("gradient-check helpers: rel_error, numerical_grad, cmp")',
    ),
    "realdata": (["coursekit.realdata", "coursekit.capstone"], "result = compare(train_step_)"),
}
# Kinds whose pasted code imports torch at the top: the cell runs it only outside nbgrader.
GUARDED = {"realdata"}
GUARD = 'import os\n\nif os.environ.get("NBGRADER_EXECUTION"):\n    print("skipped while grading")\n    result = None\nelse:\n'

HEADS = {
    "envcheck": "# Environment check (generated from coursekit/envcheck.py by `make release`).",
    "gradcheck": "# Gradient-check helpers (generated from {files} by `make release`).",
    "realdata": (
        "# The real-data run (generated from {files} by `make release`).\n"
        "# It loads the web2 words, needs torch, and does nothing while nbgrader grades."
    ),
    "timing": (
        "# Timing on your machine (generated from {files} by `make release`).\n"
        "# It uses your GPU when torch sees one (CUDA, or MPS on Apple), else the CPU,\n"
        "# and does nothing while nbgrader grades."
    ),
}


def _module_source(name: str, pasted: list[str]) -> str:
    """A module's source with its imports of already-pasted modules removed."""
    text = inspect.getsource(importlib.import_module(name))
    lines = text.splitlines()
    drop = set()
    for node in ast.parse(text).body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "coursekit":
            if node.module not in pasted:
                raise ValueError(f"{name} imports {node.module}, which is not inlined before it")
            drop.update(range(node.lineno - 1, node.end_lineno))
    return "\n".join(ln for i, ln in enumerate(lines) if i not in drop).strip("\n")


def inline_cell_source(spec: dict) -> str:
    """The full source of an inlined helper cell, from its {"inline": ...} spec."""
    kind = spec["inline"]
    if kind not in INLINE:
        raise ValueError(f"unknown inline kind {kind!r}")
    names, last = INLINE[kind]
    names = [n.format(chapter=spec.get("chapter", "")) for n in names]
    bodies, pasted = [], []
    for name in names:
        bodies.append(_module_source(name, pasted))
        pasted.append(name)
    files = " and ".join(n.replace(".", "/") + ".py" for n in names)
    head = HEADS[kind].format(files=files)
    body = "\n\n\n".join(bodies) + "\n\n\n" + last + "\n"
    if kind in GUARDED:
        body = GUARD + textwrap.indent(body, "    ")
    return head + "\n" + body
