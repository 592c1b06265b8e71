"""The release stamp: which course release and which source notebook a released notebook came
from (``metadata.course`` of every notebook in exercises/), and what that release *gave* the
student.

The stamp hashes the whole source notebook, so any edit makes a new release. Whether a
submission from an older release is stale is decided by :func:`given_parts` instead: a hash per
part of the notebook that the student works with, namely each answer cell outside its solution
region (signature, docstring, given helpers), each test cell's visible tests, and each given code
cell. Comments, formatting, a test cell's docstring, the ``label=`` of its calls and the hidden
tests are left out: editing those changes nothing the student's answers depend on.
"""

from __future__ import annotations

import ast
import hashlib

from ..course import COURSE_RELEASE, source_notebook
from .cells import SOLUTION_MARKERS, grade_id, is_inline, is_solution, is_test, source, strip_hidden


def source_sha256(assignment: str) -> str:
    """The sha256 of an assignment's source notebook (the whole hex digest)."""
    return hashlib.sha256(source_notebook(assignment).read_bytes()).hexdigest()


def release_stamp(assignment: str) -> dict:
    """The stamp a notebook released from the current source carries."""
    return {"release": COURSE_RELEASE, "source_sha256": source_sha256(assignment)[:12]}


def stamp_label(stamp) -> str:
    """How reports name a stamp: ``2026.11+1a2b3c4d5e6f``; "unknown" when there is none."""
    if not isinstance(stamp, dict):
        return "unknown"
    return f"{str(stamp.get('release'))[:20]}+{str(stamp.get('source_sha256'))[:16]}"


def _without_solution(text: str) -> str:
    """An answer cell as the student got it, less the stub: the solution regions removed."""
    keep, inside = [], False
    for line in text.split("\n"):
        if line.strip() == SOLUTION_MARKERS[0]:
            inside = True
        elif line.strip() == SOLUTION_MARKERS[1]:
            inside = False
        elif not inside:
            keep.append(line)
    return "\n".join(keep)


class _Cosmetic(ast.NodeTransformer):
    """Drops what does not change a cell's meaning: ``label=`` arguments (test cells) and
    whitespace inside docstrings."""

    def __init__(self, drop_labels: bool):
        self.drop_labels = drop_labels

    def visit_Call(self, node):
        self.generic_visit(node)
        if self.drop_labels:
            node.keywords = [k for k in node.keywords if k.arg != "label"]
        return node

    def generic_visit(self, node):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and _is_docstring(body[0]):
            body[0].value.value = " ".join(body[0].value.value.split())
        return super().generic_visit(node)


def _is_docstring(stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _meaning(text: str, test: bool = False) -> str:
    """A canonical form of a cell's code: its syntax tree, comments and layout ignored (for a
    test cell also its docstring and labels); cells that are not Python: whitespace-collapsed."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return " ".join(text.split())
    if test and tree.body and _is_docstring(tree.body[0]):
        tree.body = tree.body[1:]
    return _dump(_Cosmetic(drop_labels=test).visit(tree))


def _dump(node) -> str:
    """``ast.dump`` without the fields a newer Python adds empty (``type_params``, ...), so that
    the hash is the same on every Python that parses the cell alike."""
    if isinstance(node, ast.AST):
        fields = (
            f"{name}={_dump(value)}"
            for name, value in ast.iter_fields(node)
            if value is not None and value != []
        )
        return f"{type(node).__name__}({', '.join(fields)})"
    if isinstance(node, list):
        return "[" + ", ".join(_dump(item) for item in node) + "]"
    return repr(node)


def given_parts(notebook: dict) -> dict[str, str]:
    """What a release gives the student, part by part (from the *source* notebook):
    ``answer:<function>``, ``test:<grade_id>`` and ``given:<grade_id or cell id>`` -> a short
    hash of its meaning. Helper cells (filled from the course's modules) are left out."""
    parts = {}
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "code" or is_inline(cell):
            continue
        if is_solution(cell):
            key, text = f"answer:{grade_id(cell)}", _meaning(_without_solution(source(cell)))
        elif is_test(cell):
            key, text = f"test:{grade_id(cell)}", _meaning(strip_hidden(source(cell)), test=True)
        else:
            key, text = f"given:{grade_id(cell) or cell.get('id')}", _meaning(source(cell))
        parts[key] = hashlib.sha256(text.encode()).hexdigest()[:12]
    return parts
