"""The helper cells ``make release`` fills with coursekit source, so that a released notebook runs
anywhere (Colab, Binder, the student copy) without this repository.

A source cell marked ``{"course": {"inline": KIND, ...}}`` gets the source of the modules listed
for KIND in :data:`INLINE`, pasted in that order. A pasted module may import names from the
modules pasted before it (``from coursekit.timing import ...``, ``from ..judges import ...``):
that one statement is dropped, because those names are already defined above it. Any other
import of the course is an error, so a pasted module cannot pull in the reference solutions.

The test helpers (kind "tests": the judges and the chapter's mistake models) are pasted inside a
function that returns only ``expect`` and ``Raises``, so a student's variable called ``expected``
or ``close`` cannot break them.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
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
    "tests": (
        [
            "autograder.checks.harness",
            "autograder.checks.compare",
            "autograder.checks.judges",
            "autograder.checks.visible",
            "autograder.checks.public.ch{chapter}",
        ],
        "print(\n"
        '    "Test helpers ready. Each test cell calls expect(your_function, inputs, expected):\\n"\n'
        '    "your function runs on copies of the inputs, and a wrong result gets a message that\\n"\n'
        '    "names the mistake it looks like (help(expect) says more)."\n'
        ")",
    ),
}
# Kinds pasted inside a function; the names it hands back to the notebook.
WRAPPED = {"tests": ("expect", "Raises")}
COURSE_PACKAGES = ("coursekit", "autograder")
# Kinds whose pasted code imports torch at the top: the cell runs it only outside nbgrader.
GUARDED = {"realdata"}
GUARD = 'import os\n\nif os.environ.get("NBGRADER_EXECUTION"):\n    print("skipped while grading")\n    result = None\nelse:\n'

HEADS = {
    "tests": (
        "# Test helpers (generated from autograder/checks/ by `make release`): the judges and\n"
        "# mistake models the test cells use, the same ones that grade you. No solution and no\n"
        "# hidden test is in here."
    ),
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


def _imported(node: ast.ImportFrom, package: str) -> str:
    """The absolute module name of a ``from ... import`` (relative ones resolved)."""
    relative = "." * node.level + (node.module or "")
    return importlib.util.resolve_name(relative, package) if node.level else node.module or ""


def _module_source(name: str, pasted: list[str], wrapped: bool = False) -> str:
    """A module's source with its imports of already-pasted modules removed (and, for a wrapped
    kind, its ``from __future__`` import, which is allowed only at the top of a cell)."""
    module = importlib.import_module(name)
    text = inspect.getsource(module)
    lines = text.splitlines()
    drop = set()
    for node in ast.parse(text).body:
        if isinstance(node, ast.Import) and any(
            a.name.split(".")[0] in COURSE_PACKAGES for a in node.names
        ):
            raise ValueError(
                f"{name} imports the course ({ast.unparse(node)}); it cannot be inlined"
            )
        if not isinstance(node, ast.ImportFrom):
            continue
        target = _imported(node, module.__package__ or "")
        if wrapped and target == "__future__":
            drop.update(range(node.lineno - 1, node.end_lineno))
        elif target.split(".")[0] in COURSE_PACKAGES:
            if target not in pasted:
                raise ValueError(f"{name} imports {target}, which is not inlined before it")
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
        bodies.append(_module_source(name, pasted, kind in WRAPPED))
        pasted.append(name)
    files = " and ".join(n.replace(".", "/") + ".py" for n in names)
    head = HEADS[kind].format(files=files)
    if kind in WRAPPED:
        exported = ", ".join(WRAPPED[kind])
        body = (
            f"def _{kind}_helpers():\n"
            + textwrap.indent("\n\n\n".join(bodies), "    ")
            + f"\n\n    return {exported}\n\n\n{exported} = _{kind}_helpers()\n"
            + f"del _{kind}_helpers\n{last}\n"
        )
        return head + "\n" + body
    body = "\n\n\n".join(bodies) + "\n\n\n" + last + "\n"
    if kind in GUARDED:
        body = GUARD + textwrap.indent(body, "    ")
    return head + "\n" + body
