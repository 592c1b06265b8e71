"""nbgrader_config.py: plain `nbgrader ...` finds the course's code, and fails loudly when it
cannot, instead of silently dropping the preprocessor that hides the hidden tests."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

LOAD = """
import sys
from traitlets.config.loader import PyFileConfigLoader
cfg = PyFileConfigLoader("nbgrader_config.py", path=sys.argv[1]).load_config()
print([p.__name__ for p in cfg.GenerateFeedback.preprocessors])
print(cfg.CourseDirectory.course_id)
"""


def _load(course: Path, **env) -> subprocess.CompletedProcess:
    # -I: no user site, no PYTHONPATH, and the current folder is not on sys.path: only what the
    # config itself puts there can make `autograder` importable... except the editable install,
    # which is why the broken case below copies the course elsewhere and removes a module.
    return subprocess.run(
        [sys.executable, "-c", LOAD, str(course)],
        cwd="/",
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", **env},
    )


def test_the_config_installs_the_hidden_test_stripping_preprocessor():
    proc = _load(ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "HideHiddenTests" in proc.stdout and "embedding-tables" in proc.stdout


def test_a_moved_preprocessor_makes_loading_the_config_fail(tmp_path):
    course = tmp_path / "course"
    shutil.copytree(
        ROOT / "autograder", course / "autograder", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "nbgrader_config.py", course)
    (course / "autograder" / "grade" / "nbgrader_plugins.py").unlink()
    proc = _load(course)
    assert proc.returncode != 0
    assert "nbgrader_plugins" in proc.stderr


def test_kernels_started_by_nbgrader_see_the_course_on_their_path():
    code = LOAD + "import os; print(os.environ['PYTHONPATH'].split(os.pathsep)[0])\n"
    proc = subprocess.run(
        [sys.executable, "-c", code, str(ROOT)], cwd="/", capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == str(ROOT)


WIRING = """
import sys
from nbgrader.converters import Autograde, GenerateAssignment
from traitlets.config.loader import PyFileConfigLoader
cfg = PyFileConfigLoader("nbgrader_config.py", path=sys.argv[1]).load_config()
names = lambda ps: [p.__name__ for p in ps]
print(names(GenerateAssignment.class_traits()["preprocessors"].default()))
print(names(cfg.GenerateAssignment.preprocessors))
print(cfg.GenerateAssignment.exporter_class.__name__, cfg.GenerateFeedback.exporter_class.__name__)
print(names(Autograde.class_traits()["sanitize_preprocessors"].default()))
print(names(cfg.Autograde.sanitize_preprocessors))
print(cfg.CourseDirectory.ignore)
"""


def test_the_config_makes_plain_nbgrader_the_course_s_release_and_feedback():
    """nbgrader's own steps, in nbgrader's order, then the course's (one code path with make
    release and make grade); the record beside a graded copy is never taken from a student."""
    proc = subprocess.run(
        [sys.executable, "-c", WIRING, str(ROOT)], cwd="/", capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()[-6:]
    release_default, release, exporters, sanitize_default, sanitize, ignore = lines
    assert release == release_default[:-1] + ", 'CourseRelease']"
    assert exporters == "CanonicalNotebookExporter CourseFeedbackExporter"
    assert sanitize == sanitize_default.replace("'OverwriteCells'", "'OverwriteReleasedCells'")
    assert "OverwriteReleasedCells" in sanitize and "'.course_grading.json'" in ignore
