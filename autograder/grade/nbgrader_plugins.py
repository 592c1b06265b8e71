"""Plain nbgrader, made leak-free where the course needs it.

``nbgrader generate_feedback`` renders the *autograded* notebook, which holds the hidden tests
(nbgrader restores test cells from the source) and IPython tracebacks that quote them (nbgrader
issues #917 and #1363). nbgrader_config.py puts :class:`HideHiddenTests` into
``GenerateFeedback.preprocessors`` so that plain feedback shows the visible tests, the scores and
the failure messages, and nothing of the hidden tests. (``make grade`` writes its own feedback,
which never contained them.)
"""

from __future__ import annotations

from nbconvert.preprocessors import Preprocessor
from nbgrader.preprocessors import ClearHiddenTests
from traitlets import Bool

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
