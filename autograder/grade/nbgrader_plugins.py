"""Plain nbgrader, made leak-free where the course needs it.

``nbgrader generate_feedback`` renders the *autograded* notebook, which holds the hidden tests
(nbgrader restores test cells from the source) and IPython tracebacks that quote them (nbgrader
issues #917 and #1363). nbgrader_config.py puts :class:`HideHiddenTests` into
``GenerateFeedback.preprocessors`` so that plain feedback shows the visible tests, the scores and
the failure messages, and nothing of the hidden tests. (``make grade`` writes its own feedback,
which never contained them.)
"""

from __future__ import annotations

from nbgrader.preprocessors import ClearHiddenTests

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
