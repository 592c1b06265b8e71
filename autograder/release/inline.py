"""The helper cells ``make release`` fills with coursekit source, so that a released notebook runs
anywhere (Colab, Binder, the student copy) without this repository.

A source cell marked ``{"course": {"inline": KIND, ...}}`` gets the source of the modules listed
for KIND in :data:`INLINE`, pasted in that order. A pasted module may import names from the
modules pasted before it (``from coursekit.timing import ...``, ``from ..judges import ...``):
that one statement is dropped, because those names are already defined above it. Any other
import of the course is an error, so a pasted module cannot pull in the reference solutions.

The test helpers (kind "tests": the judges and the chapter's mistake models) are pasted inside a
function that returns only ``expect`` and ``Raises``, so a student's variable called ``expected``
or ``close`` cannot break them. They are tree-shaken (:func:`shake`): of the shared modules
(harness, compare, judges, visible) a notebook gets only the definitions, constants and imports
that its chapter's public module and ``expect`` use, transitively, in source order; so a mistake
model shared by two chapters lives once in judges.py and reaches only the notebooks that use it.
"""

from __future__ import annotations

import ast
import copy
import importlib
import importlib.util
import inspect
import symtable
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
# Kinds whose shared modules are tree-shaken (:func:`shake`): only the definitions the last module
# (the chapter's) and the names handed back use, transitively, are pasted.
SHAKEN = {"tests"}
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


def _dropped(node: ast.stmt, name: str, package: str, pasted: list[str], wrapped: bool) -> bool:
    """Is this top-level statement an import the paste drops (of a module pasted before it; for a
    wrapped kind, ``from __future__``)? Raises ValueError for any other import of the course."""
    if isinstance(node, ast.Import) and any(
        a.name.split(".")[0] in COURSE_PACKAGES for a in node.names
    ):
        raise ValueError(f"{name} imports the course ({ast.unparse(node)}); it cannot be inlined")
    if not isinstance(node, ast.ImportFrom):
        return False
    target = _imported(node, package)
    if wrapped and target == "__future__":
        return True
    if target.split(".")[0] in COURSE_PACKAGES:
        if target not in pasted:
            raise ValueError(f"{name} imports {target}, which is not inlined before it")
        return True
    return False


def split_statements(text: str) -> list[tuple]:
    """A module's top-level statements as (node, text): the text runs from the end of the statement
    before it (its comments and blank lines come with it) to its own end."""
    lines = text.splitlines()
    out, start = [], 0
    for node in ast.parse(text).body:
        out.append((node, "\n".join(lines[start : node.end_lineno])))
        start = node.end_lineno
    return out


def _statements(name: str, pasted: list[str], wrapped: bool = False) -> list[tuple]:
    """:func:`split_statements` of a module, without its imports of already-pasted modules (and,
    for a wrapped kind, ``from __future__``, which is allowed only at the top of a cell). The
    comments above a dropped import stay with the statement after it."""
    module = importlib.import_module(name)
    out, lead = [], ""
    for node, text in split_statements(inspect.getsource(module)):
        if _dropped(node, name, module.__package__ or "", pasted, wrapped):
            own = node.end_lineno - node.lineno + 1
            lead += "".join(ln + "\n" for ln in text.splitlines()[:-own])
            continue
        out.append((node, lead + text))
        lead = ""
    return out


def _binds(node: ast.stmt) -> set[str] | None:
    """The names a definition, an assignment or an import binds; None for any other statement
    (a docstring, a loop, a call), which the paste always keeps."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {
            n.id
            for t in targets
            for n in ast.walk(t)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
    return None


def _uses(text: str) -> set[str]:
    """The global names a top-level statement refers to: at its top level, or inside the
    functions, classes, lambdas and comprehensions it defines (decorators, defaults and
    annotations included: a wrapped paste evaluates annotations)."""

    def walk(table) -> set[str]:
        top = table.get_type() == "module"
        names = {
            s.get_name()
            for s in table.get_symbols()
            if s.is_referenced() and (top or s.is_global())
        }
        return names.union(*(walk(child) for child in table.get_children()))

    return walk(symtable.symtable(text, "<pasted>", "exec"))


def _pruned_import(node, text: str, needed: set[str]) -> str:
    """An import statement's text with only the names ``needed`` (its comments kept)."""
    names = [a for a in node.names if (a.asname or a.name).split(".")[0] in needed]
    if len(names) == len(node.names):
        return text
    before = text.splitlines()[: -(node.end_lineno - node.lineno + 1)]
    pruned = copy.copy(node)
    pruned.names = names
    return "\n".join([*before, ast.unparse(pruned)])


def shake(modules: list[list[tuple]], roots=()) -> list[list[str]]:
    """Tree-shaking: each module's statements (as :func:`_statements` gives them) reduced to
    those the last module needs. The last module is kept whole; in the modules before it, a
    definition, assignment or import is kept only when it binds a name that ``roots``, the last
    module, or a statement kept already refers to (transitively, in any direction: a function may
    use a constant defined below it). Every other statement is kept. Returns the kept texts,
    in source order, per module."""
    stmts = [(i, node, text) for i, mod in enumerate(modules) for node, text in mod]
    last = len(modules) - 1
    keep = [i == last or _binds(node) is None for i, node, _ in stmts]
    needed = set(roots).union(*(_uses(t) for k, (_, _, t) in zip(keep, stmts, strict=True) if k))
    changed = True
    while changed:
        changed = False
        for j, (_, node, text) in enumerate(stmts):
            if not keep[j] and _binds(node) & needed:
                keep[j], changed = True, True
                needed |= _uses(text)
    out: list[list[str]] = [[] for _ in modules]
    for k, (i, node, text) in zip(keep, stmts, strict=True):
        if k:
            imported = isinstance(node, (ast.Import, ast.ImportFrom)) and i != last
            out[i].append(_pruned_import(node, text, needed) if imported else text)
    return out


def inline_cell_source(spec: dict) -> str:
    """The full source of an inlined helper cell, from its {"inline": ...} spec."""
    kind = spec["inline"]
    if kind not in INLINE:
        raise ValueError(f"unknown inline kind {kind!r}")
    names, last = INLINE[kind]
    names = [n.format(chapter=spec.get("chapter", "")) for n in names]
    modules = [_statements(n, names[:i], kind in WRAPPED) for i, n in enumerate(names)]
    if kind in SHAKEN:
        texts = shake(modules, WRAPPED[kind])
    else:
        texts = [[text for _, text in mod] for mod in modules]
    bodies = ["\n".join(t).strip("\n") for t in texts]
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
