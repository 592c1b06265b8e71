"""Plain nbgrader, made leak-free, quiet and in agreement with ``make grade``.

* ``nbgrader generate_feedback`` renders the *autograded* notebook, which holds the hidden tests
  (nbgrader restores test cells from the source) and IPython tracebacks that quote them
  (nbgrader issues #917 and #1363). nbgrader_config.py puts :class:`HideHiddenTests` into
  ``GenerateFeedback.preprocessors``, and its exporter is :class:`CourseFeedbackExporter`: the
  course's own page (:mod:`.feedback`), the same one ``make grade`` writes, from the scores in the
  gradebook and the visible tests of the release. Nothing of the hidden tests is in it.
* ``nbgrader autograde`` warned "Attribute 'checksum' for cell ... has changed!" for every test
  cell of every honest submission: nbgrader records a test cell's checksum *before* it removes
  the hidden tests and compares it with the released cell, which has none (nbgrader issue #1961).
  :class:`OverwriteReleasedCells` recognises the released form and stays quiet for it; an edited
  test cell still warns, and is restored either way.
* :class:`ExplainSkips` says why a command skipped a submission or feedback that exists already.
"""

from __future__ import annotations

import logging

from nbconvert.exporters import Exporter
from nbconvert.preprocessors import Preprocessor
from nbgrader.api import MissingEntry
from nbgrader.preprocessors import ClearHiddenTests, OverwriteCells
from traitlets import Bool, default

from ..nb import strip_hidden


class HideHiddenTests(ClearHiddenTests):
    """Remove hidden-test regions from every code cell and reduce tracebacks to one line."""

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type == "code":
            cell.source = strip_hidden(
                cell.source, self.begin_test_delimeter, self.end_test_delimeter
            )
            for out in cell.get("outputs", []):
                if out.get("output_type") == "error":
                    out["traceback"] = [f"{out.get('ename', 'Error')}: {out.get('evalue', '')}"]
        return cell, resources


class RequireCourseChecks(Preprocessor):
    """Plain ``nbgrader autograde`` refuses to grade when the hidden tests cannot load the checks.

    Hidden test cells import ``autograder.checks.chNN``. In an environment where that import
    fails (the course not on the kernel's path), every hidden test would fail and nbgrader would
    record zeros as if every student had failed, and exit 0. This preprocessor runs before the
    notebook is executed, tries the same import in the same interpreter and environment the kernel
    gets, and raises otherwise: nbgrader then records nothing for the submission and exits
    non-zero with this message.
    """

    enabled = Bool(True)  # nbconvert's preprocessors are off unless enabled

    def preprocess(self, nb, resources):
        import os
        import subprocess
        import sys

        name = resources.get("nbgrader", {}).get("assignment") or ""
        module = f"autograder.checks.ch{name[:2]}" if name[:2].isdigit() else "autograder.checks"
        code = f"import {module}"
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ)
        )
        if proc.returncode != 0:
            raise RuntimeError(
                f"the hidden tests cannot load the course's checks ({module}): "
                f"{proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else 'import failed'}. "
                "Nothing was recorded. Run nbgrader from the course's root (its nbgrader_config.py "
                "puts the course on the kernels' path), or `make grade`."
            )
        return nb, resources


class OverwriteReleasedCells(OverwriteCells):
    """nbgrader's OverwriteCells, without the false alarm for a test cell in its released form."""

    def preprocess_cell(self, cell, resources, cell_index):
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid is not None and cell.cell_type == "code":
            try:
                src = self.gradebook.find_source_cell(gid, self.notebook_id, self.assignment_id)
            except MissingEntry:
                src = None
            hidden = ClearHiddenTests(parent=self)
            released = src is not None and strip_hidden(
                src.source, hidden.begin_test_delimeter, hidden.end_test_delimeter
            )
            if src is not None and src.locked and cell.source == released:
                cell.source = src.source  # what nbgrader restores anyway: the cell with its tests
        return super().preprocess_cell(cell, resources, cell_index)


class CourseFeedbackExporter(Exporter):
    """``nbgrader generate_feedback`` writes the course's feedback page (:mod:`.feedback`)."""

    output_mimetype = "text/html"

    @default("file_extension")
    def _file_extension_default(self):
        return ".html"

    def from_notebook_node(self, nb, resources=None, **kw):
        from .feedback import autograded_page

        nb_copy, resources = super().from_notebook_node(nb, resources, **kw)
        info = resources["nbgrader"]
        folder = resources.get("metadata", {}).get("path", "")
        page = autograded_page(info["assignment"], info["student"], nb_copy, folder, info)
        return page, resources


SKIPPED = {
    "AutogradeApp": (
        "already autograded (by `make grade` or an earlier `nbgrader autograde`) and not "
        "resubmitted since: nbgrader regrades a submission only when its timestamp.txt is newer "
        "than the graded copy's. `--force` regrades every submission with plain nbgrader (no "
        "sandbox), replacing the graded copies and the scores in the gradebook."
    ),
    "GenerateFeedbackApp": (
        "its feedback exists already. `--force` writes it again from the gradebook (the "
        "course's page, the same one `make grade` writes)."
    ),
}


class ExplainSkips(logging.Filter):
    """Adds the why and the way out to nbgrader's "Skipping existing assignment" line, as a
    warning (nbgrader logs it as information only, and exits 0 having done nothing)."""

    def __init__(self, app: str):
        super().__init__()
        self.why = SKIPPED[app]

    def filter(self, record):
        msg = str(record.msg)
        if msg.startswith("Skipping existing assignment") and self.why not in msg:
            record.msg = f"{msg}: {self.why}"
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True

    @classmethod
    def install(cls) -> None:
        """On the loggers of nbgrader's autograde and generate_feedback, once per process."""
        for app in SKIPPED:
            log = logging.getLogger(app)
            if not any(isinstance(f, cls) for f in log.filters):
                log.addFilter(cls(app))
