"""What a student is told when the grading kernel refused an import.

Every grading kernel (``make grade``'s, the cluster's, Gradescope's, plain nbgrader's) refuses
torch, jax and tensorflow before the notebook's first cell (:func:`~autograder.checks.harness.
block_frameworks`): the graded functions use only numpy and the standard library, and
Gradescope's environment has none of them. A cell that imports one stops there, so the functions
it defines after the import do not exist, and a test of them fails with a NameError that alone
would not teach. The cell's refusal becomes a note at the top of the feedback, and is repeated
under each test that fails with a NameError.
"""

from __future__ import annotations

from ..checks.harness import NOT_WHEN_GRADED

IMPORT_ERRORS = ("ModuleNotFoundError", "ImportError")


def refusal(where: str, ename, evalue) -> str | None:
    """The note for a cell (``where``: how the student finds it, "cell 5 (embedding_forward)")
    that raised ``ename: evalue``; None unless the kernel refused an import."""
    text = str(evalue or "")
    if str(ename) not in IMPORT_ERRORS or NOT_WHEN_GRADED not in text:
        return None
    return f"your {where} imports {text.split(' ', 1)[0]}: {text}"


def with_hint(message: str, refusals: list[str], name_error: bool) -> str:
    """A failing test's message, with the first refusal added when the test failed with a
    NameError (``name_error``: a name that the refused cell would have defined)."""
    if not refusals or not name_error:
        return message
    return (
        f"{message}\n({refusals[0]}. That cell stopped at the import: nothing it defines from "
        "there on exists.)"
    )


def notebook_refusals(notebook: dict, is_test, label) -> list[str]:
    """The refusals recorded in an executed notebook's error outputs (plain nbgrader's
    autograded copy), in cell order; ``is_test(cell)``: a test cell (skipped),
    ``label(i, cell)``: how the student finds cell i."""
    notes = []
    for i, cell in enumerate(notebook.get("cells") or []):
        if cell.get("cell_type") != "code" or is_test(cell):
            continue
        for out in cell.get("outputs") or []:
            if out.get("output_type") == "error":
                note = refusal(label(i, cell), out.get("ename"), out.get("evalue"))
                if note and note not in notes:
                    notes.append(note)
    return notes
