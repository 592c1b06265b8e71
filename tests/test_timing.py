"""The shared timing helper: runs at tiny sizes, skips under nbgrader, inlines standalone."""

import os
import subprocess
import sys

import matplotlib
import pytest

matplotlib.use("Agg")

from autograder import nb as notebooks
from autograder import release  # noqa: E402
from autograder.course import assignments, source_notebook  # noqa: E402
from coursekit import timing as T  # noqa: E402


def test_sweep_measures_every_method_and_skips_oversized_operands():
    from coursekit.bench_ch01 import ch01_methods

    result = T.sweep(
        [50, 400], ch01_methods(n_tokens=16, d=4), min_run_time=0.01, max_bytes=16 * 400 * 4 - 1
    )
    times = result["times"]
    assert set(times) == {"gather E[ids]", "build one_hot(ids)", "one_hot(ids) @ E"}
    assert all(t > 0 for t in times["gather E[ids]"])
    # at V = 400 the one-hot needs 16*400*4 bytes, one more than allowed: skipped, with a note
    assert times["one_hot(ids) @ E"][1] != times["one_hot(ids) @ E"][1]  # NaN
    assert any("skipped at 400" in n for n in result["notes"])
    ratio = T.ratios(result, "one_hot(ids) @ E", "gather E[ids]")[0]
    assert ratio > 0
    sentence = T.summary(result, "build one_hot(ids)", "gather E[ids]", "V")
    assert sentence.startswith("On ") and "as long as gather E[ids]" in sentence


def test_chapter_1_timing_runs_end_to_end_at_tiny_sizes(capsys):
    from coursekit.bench_ch01 import timing

    result = timing(sizes=dict(n_tokens=8, d=4, vocab=(10, 20)), min_run_time=0.01)
    assert result["xs"] == [10, 20]
    assert "as long as" in capsys.readouterr().out


def _inlined_timing_sources():
    for a in assignments():
        nb = notebooks.read(source_notebook(a))
        for cell in nb["cells"]:
            spec = cell.get("metadata", {}).get("course", {})
            if spec.get("inline") == "timing":
                yield pytest.param(release.inline_cell_source(spec), id=a)


@pytest.mark.parametrize("source", list(_inlined_timing_sources()))
def test_inlined_timing_cell_does_nothing_under_nbgrader_without_importing_torch(source, tmp_path):
    """The released timing cell is standalone and returns at once while nbgrader grades."""
    script = tmp_path / "cell.py"
    script.write_text(
        source
        + "\nimport sys\nassert 'torch' not in sys.modules, 'torch was imported'\nprint('ok', result)\n"
    )
    env = {**os.environ, "NBGRADER_EXECUTION": "autograde", "PYTHONPATH": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "skipped" in proc.stdout and "ok None" in proc.stdout


def test_inlined_environment_cell_runs_standalone(tmp_path):
    script = tmp_path / "cell.py"
    script.write_text(release.inline_cell_source({"inline": "envcheck"}))
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "numpy" in proc.stdout and "torch" in proc.stdout
    assert "Everything needed is here" in proc.stdout
