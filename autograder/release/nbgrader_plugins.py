"""The course's step of nbgrader's ``generate_assignment``, configured in nbgrader_config.py.

:class:`CourseRelease` runs after nbgrader's own preprocessors (so the checksums nbgrader records
are those of nbgrader's cells, as before) and does what ``make release`` needs beyond nbgrader:
the helper cells get their self-contained source (a released notebook imports nothing of the
course) and the notebook is stamped. :class:`CanonicalNotebookExporter` writes the result in
:func:`autograder.nb.dumps`'s canonical form, so the bytes do not depend on which nbformat wrote
them. With both in the config there is one code path: ``make release`` runs plain nbgrader.
"""

from __future__ import annotations

import json
import os

from nbconvert.exporters import NotebookExporter
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

from .. import nb
from .generate import postprocess


class CourseRelease(Preprocessor):
    """Inline the helper cells and stamp the release (after nbgrader's own preprocessors)."""

    enabled = Bool(True)  # nbconvert's preprocessors are off unless enabled

    def preprocess(self, notebook, resources):
        meta = resources.get("metadata") or {}
        source = os.path.join(meta.get("path", ""), meta.get("name", "") + ".ipynb")
        assignment = resources["nbgrader"]["assignment"]
        postprocess(notebook, assignment, source if os.path.isfile(source) else None)
        return notebook, resources


class CanonicalNotebookExporter(NotebookExporter):
    """nbconvert's notebook exporter, its output re-serialised by :func:`autograder.nb.dumps`."""

    def from_notebook_node(self, notebook, resources=None, **kw):
        output, resources = super().from_notebook_node(notebook, resources, **kw)
        return nb.dumps(json.loads(output)), resources
