"""The shared timing helper: the byte and flop counts, the calibration and the model, the sweep
at tiny sizes, the guard under nbgrader, and the inlined cells standalone. No speed asserts."""

import ast
import importlib
import math
import os
import subprocess
import sys
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

from autograder import nb as notebooks
from autograder import release  # noqa: E402
from autograder.course import assignments, source_notebook  # noqa: E402
from coursekit import timing as T  # noqa: E402

CHAPTERS = [f"{n:02d}" for n in (*range(1, 8), 9)]  # the capstone (08) has no timing
TINY = {
    "01": dict(n_tokens=8, d=4, vocab=(10, 20)),
    "02": dict(n_tokens=8, d=4, vocab=(10, 20)),
    "03": dict(V=16, d=4, positions=(4, 8)),
    "04": dict(n_bags=4, bag_len=3, d=4, vocab=(10, 20)),
    "05": dict(n_tokens=8, d=4, vocab=(10, 20)),
    "06": dict(n_tokens=8, V=16, widths=(2, 4)),
    "07": dict(n_tokens=8, models=(("a", 10, 2), ("b", 20, 3)), calibrate_at="b"),
    "09": dict(n_tokens=8, d=4, vocab=(10, 20)),
}


def test_gather_counts_its_traffic_not_the_table():
    c = T.gather_cost(512, 65_536, 64)
    assert c.operand == 65_536 * 64 * 4  # the cap: the whole table, 16 MiB
    assert c.moved == 512 * 64 * 4 + 512 * 64 * 4 + 512 * 8 == 266_240  # about 256 KiB
    assert (c.flops, c.calls, c.shape) == (0, 1, ())


def test_matmul_counts_both_operands_the_result_and_2mkn_flops():
    c = T.matmul_cost(512, 65_536, 64)
    assert c.flops == 2 * 512 * 65_536 * 64 == 4_294_967_296
    assert c.moved == 4 * (512 * 65_536 + 65_536 * 64 + 512 * 64) == 151_126_016
    assert c.operand == c.moved and c.shape == (512, 65_536, 64)
    assert c.fresh == 4 * 512 * 64  # the result is new memory each call
    assert T.matmul_cost(2, 3, 4, operand=7).operand == 7


def test_scatter_add_counts_the_zero_table_and_the_rows():
    c = T.scatter_add_cost(512, 1_000, 64)
    # zeros(V, d) written; N rows of g read; N target rows read and written; N int64 ids
    assert c.moved == 4 * 1_000 * 64 + 4 * 512 * 64 + 8 * 512 * 64 + 8 * 512 == 653_312
    assert (c.operand, c.flops, c.calls, c.shape) == (256_000, 512 * 64, 2, ())


def test_chapter_methods_declare_their_costs_from_the_shapes():
    from coursekit.bench_ch01 import ch01_methods
    from coursekit.bench_ch02 import ch02_methods
    from coursekit.bench_ch04 import bag_sizes, ch04_methods
    from coursekit.bench_ch05 import ch05_methods

    gather, build, product = ch01_methods(n_tokens=10, d=3)
    assert gather.cost(100) == T.gather_cost(10, 100, 3)
    assert build.cost(100).moved == 20 * 10 * 100 and build.cost(100).operand == 4 * 10 * 100
    assert product.cost(100).shape == (10, 100, 3) and product.cost(100).flops == 6_000
    backward, one_hot, _ = ch02_methods(n_tokens=10, d=3)
    assert one_hot.cost(100).shape == (100, 10, 3)  # S^T G: (V x N) @ (N x d)
    assert backward.cost(100).calls == 1
    bag, unfused, dense, sparse = ch04_methods(B=4, L=5, d=3)
    assert bag_sizes(4, 5) == [1, 8, 6, 4]  # 1 to 2L - 1, the same on every machine
    N = 19
    assert bag.cost(100).moved == 4 * N * 3 + 8 * N + 4 * 4 * 3 + 8 * 4
    assert unfused.cost(100).calls == 4 and unfused.cost(100).fresh == 4 * N * 3 + 8 * 4 * 3
    assert dense.cost(1_000).moved - dense.cost(100).moved == 4 * 900 * 3  # the zero table
    assert sparse.cost(1_000).moved == sparse.cost(100).moved  # N rows, whatever V is
    assert dense.cost(100).moved - sparse.cost(100).moved == 4 * 100 * 3 + 4 * N * 3
    logits = ch05_methods(n_tokens=10, d=3)[1]
    assert logits.cost(100).shape == (10, 3, 100)  # H @ E.T: (N x d) @ (d x V)


def test_prediction_is_the_larger_bound_plus_the_call_overheads():
    cal = {"bandwidth": 1e9, "overhead": 1e-6, "rates": {(2, 3, 4): 1e10}}
    memory = T.Cost(operand=0, moved=4_000, flops=10**9, calls=2)  # not a product: bytes only
    assert T.predict(memory, cal) == pytest.approx(4e-6 + 2e-6)
    compute = T.Cost(operand=0, moved=4_000, flops=10**6, shape=(2, 3, 4))
    assert T.predict(compute, cal) == pytest.approx(1e-4 + 1e-6)  # flops / rate > bytes / bw
    light = T.Cost(operand=0, moved=10**6, flops=10, shape=(2, 3, 4))
    assert T.predict(light, cal) == pytest.approx(1e-3 + 1e-6)  # bytes / bw > flops / rate
    assert T.achieved(compute, 1e-3) == (pytest.approx(1.0), "GFLOP/s")
    assert T.achieved(memory, 4e-6) == (pytest.approx(1.0), "GB/s")


def test_calibration_at_tiny_sizes_is_positive_and_cached():
    import torch

    cpu = torch.device("cpu")
    cal = T.calibrate(cpu, shapes=[(4, 8, 2)], copy_bytes=4096, min_run_time=0.01)
    assert cal["overhead"] > 0 and cal["bandwidth"] > 0 and cal["copy_bytes"] == 4096
    assert set(cal["rates"]) == {(4, 8, 2)} and cal["rates"][(4, 8, 2)] > 0
    again = T.calibrate(cpu, shapes=[(4, 8, 2)], copy_bytes=4096, min_run_time=0.01)
    assert again == cal  # measured once per process


def test_sweep_times_predicts_and_skips_oversized_operands():
    from coursekit.bench_ch01 import ch01_methods

    methods = ch01_methods(n_tokens=16, d=4)
    # at V = 400 the one-hot product needs 4*(16*400 + 400*4 + 16*4) bytes: one more is allowed
    cap = T.matmul_cost(16, 400, 4).operand - 1
    result = T.sweep([50, 400], methods, min_run_time=0.01, max_bytes=cap, repeats=1)
    times, predicted = result["times"], result["predicted"]
    assert result["labels"] == ["gather E[ids]", "build one_hot(ids)", "one_hot(ids) @ E"]
    assert all(t > 0 for t in times["gather E[ids]"])
    assert math.isnan(times["one_hot(ids) @ E"][1]) and predicted["one_hot(ids) @ E"][1] > 0
    assert any("skipped at 400" in n for n in result["notes"])
    assert result["calibration"]["rate_of"]["one_hot(ids) @ E"] == (16, 400, 4)
    assert T.ratios(result, "one_hot(ids) @ E", "gather E[ids]")[0] > 0
    assert T.ratios(result, "one_hot(ids) @ E", "gather E[ids]", "predicted")[1] > 0
    sentence = T.compare_sentence(result, "build one_hot(ids)", "gather E[ids]", "V")
    assert sentence.startswith("build one_hot(ids) / gather E[ids]: predicted ")
    assert ", measured " in sentence and "at V = 400" in sentence
    assert any("not timed at V = 400: one_hot(ids) @ E" in s for s in T.skipped_lines(result, "V"))
    assert "GFLOP/s" in T.achieved_table(result, "V") and "GB/s" in T.calibration_line(result)


def test_run_chapter_re_times_an_implausible_sweep_and_says_so(capsys):
    """With a plausibility test the sweep is redone until it passes, at most ``tries`` in all."""
    from coursekit.bench_ch01 import ch01_methods

    methods, seen = ch01_methods(n_tokens=16, d=4), []
    kw = dict(min_run_time=0.005, repeats=1)

    def passes_second(result):
        seen.append(result)
        return len(seen) >= 2

    result = T.run_chapter([50, 100], methods, "V", "V", "t", plausible=passes_second, **kw)
    assert (result["tries"], result["plausible"], len(seen)) == (2, True, 2)
    never = T.run_chapter(
        [50, 100], methods, "V", "V", "t", plausible=lambda r: False, tries=3, **kw
    )
    assert (never["tries"], never["plausible"]) == (3, False)
    plain = T.run_chapter([50, 100], methods, "V", "V", "t", **kw)
    assert (plain["tries"], plain["plausible"]) == (1, None)
    capsys.readouterr()


def test_ch07_calls_a_gather_far_off_its_prediction_disturbed():
    from coursekit.bench_ch07 import GATHER_OFF_MAX, gather_off

    g = "gather E[ids]"
    quiet = {"times": {g: [2e-6, 3e-6, math.nan]}, "predicted": {g: [1e-6, 2e-6, 1e-6]}}
    busy = {"times": {g: [1e-4, 3e-4, math.nan]}, "predicted": {g: [1e-6, 2e-6, 1e-6]}}
    assert gather_off(quiet) == 2.0 and gather_off(quiet) <= GATHER_OFF_MAX
    assert gather_off(busy) == 150.0 and gather_off(busy) > GATHER_OFF_MAX


def _synthetic(times, predicted, cost, device="cpu"):
    cal = {"bandwidth": 1e10, "overhead": 1e-5, "copy_bytes": 2**26, "rates": {(1, 2, 3): 1e11}}
    cal["rate_of"] = {"m": (1, 2, 3)} if cost.shape else {}
    return {
        "xs": [1],
        "labels": ["m"],
        "times": {"m": [times]},
        "predicted": {"m": [predicted]},
        "costs": {"m": [cost]},
        "calibration": cal,
        "device": device,
    }


def test_the_miss_reason_names_the_effect():
    small = T.Cost(operand=0, moved=2**18)
    assert T.miss_kind(_synthetic(1e-6, 4e-5, small), "m", 0) == "cache"
    assert "caches" in T.miss_reason(_synthetic(1e-6, 4e-5, small), "m", 0)
    launch = T.Cost(operand=0, moved=2**10, calls=3)
    assert T.miss_kind(_synthetic(1e-4, 3e-5, launch, "cuda"), "m", 0) == "overhead"
    assert "launches" in T.miss_reason(_synthetic(1e-4, 3e-5, launch, "cuda"), "m", 0)
    product = T.Cost(operand=0, moved=10, flops=10**9, shape=(9, 9, 9))
    assert T.miss_kind(_synthetic(1.0, 1e-2, product), "m", 0) == "rate"
    assert "against the calibrated" in T.miss_reason(_synthetic(1.0, 1e-2, product), "m", 0)
    assert "noise" not in T.miss_reason(_synthetic(1.0, 1e-2, product), "m", 0)
    allocating = T.Cost(operand=0, moved=2**26, fresh=2**25)
    assert "new memory" in T.miss_reason(_synthetic(1.0, 1e-2, allocating), "m", 0)


def test_the_verdict_counts_the_sizes_within_2x_and_names_the_misses():
    cal = {"bandwidth": 1e10, "overhead": 1e-6, "copy_bytes": 2**26, "rates": {}, "rate_of": {}}
    cost = T.Cost(operand=0, moved=2**20)
    result = {
        "xs": [10, 20, 30],
        "labels": ["fast", "slow"],
        "times": {"fast": [1e-4, 1e-4, 1e-5], "slow": [1e-2, 1e-2, 1e-2]},
        "predicted": {"fast": [1e-4, 1e-4, 1e-4], "slow": [1e-2, 1e-2, 1e-2]},
        "costs": {"fast": [cost] * 3, "slow": [cost] * 3},
        "calibration": cal,
        "device": "cpu",
    }
    text = T.verdict(result, "slow", "fast", "V")
    assert text.startswith("The predicted ratio is within 2x of the measured one at 2 of the 3")
    assert "At V = 30 it is off by 10" in text and "fast ran faster than predicted" in text
    assert "at 1 of the 2 sizes with V ≥ 20." in T.verdict(result, "slow", "fast", "V", since=20)
    result["times"]["fast"][2] = 1e-4
    assert "at every one of the 3 sizes." in T.verdict(result, "slow", "fast", "V")


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_chapter_timing_runs_end_to_end_at_tiny_sizes(chapter, capsys):
    timing = importlib.import_module(f"coursekit.bench_ch{chapter}").timing
    result = timing(sizes=TINY[chapter], min_run_time=0.005)
    out = capsys.readouterr().out
    assert len(result["xs"]) == 2 and "Calibration on " in out and "meas/pred" in out
    assert "predicted " in out or "not predicted" in out


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_timing_does_nothing_under_nbgrader(chapter, monkeypatch, capsys):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert importlib.import_module(f"coursekit.bench_ch{chapter}").timing() is None
    assert "skipped" in capsys.readouterr().out


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_bench_modules_import_coursekit_only_through_one_timing_line(chapter):
    """`make release` pastes timing.py and then the bench module, dropping `from coursekit.`
    lines: one such line, from coursekit.timing only, and names that timing.py defines."""
    path = Path(T.__file__).with_name(f"bench_ch{chapter}.py")
    lines = [ln for ln in path.read_text().splitlines() if "coursekit" in ln and "import" in ln]
    assert len(lines) == 1 and lines[0].startswith("from coursekit.timing import ")
    names = ast.parse(lines[0].split("#")[0]).body[0].names
    assert all(hasattr(T, n.name) for n in names)


def test_timing_helper_imports_only_the_standard_library_at_the_top():
    tree = ast.parse(Path(T.__file__).read_text())
    top = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    modules = {a.name for n in top if isinstance(n, ast.Import) for a in n.names}
    modules |= {n.module for n in top if isinstance(n, ast.ImportFrom)}
    assert modules <= set(sys.stdlib_module_names) | {"collections.abc"}


def _inlined_timing_sources():
    for a in assignments():
        nb = notebooks.read(source_notebook(a))
        for cell in nb["cells"]:
            spec = cell.get("metadata", {}).get("course", {})
            if spec.get("inline") == "timing":
                yield pytest.param(release.inline_cell_source(spec), id=a)


def run_cell_under_nbgrader(tmp_path, source: str):
    """Run an inlined cell's source as a script with NBGRADER_EXECUTION set; the script fails if
    the cell imported torch, and prints "ok <result>" at the end."""
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
    return proc


@pytest.mark.parametrize("source", list(_inlined_timing_sources()))
def test_inlined_timing_cell_does_nothing_under_nbgrader_without_importing_torch(source, tmp_path):
    """The released timing cell is standalone and returns at once while nbgrader grades."""
    proc = run_cell_under_nbgrader(tmp_path, source)
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


def test_inlined_timing_cells_run_standalone_at_tiny_sizes(tmp_path):
    """Each released timing cell, with its last line set to tiny sizes, runs in a fresh process
    from its own source alone (one process for all chapters: torch is imported once)."""
    cells = {}
    for a in assignments():
        for cell in notebooks.read(source_notebook(a))["cells"]:
            spec = cell.get("metadata", {}).get("course", {})
            if spec.get("inline") == "timing":
                source = release.inline_cell_source(spec)
                assert source.rstrip().endswith("result = timing()")
                tiny = f"result = timing(sizes={TINY[spec['chapter']]!r}, min_run_time=0.005)"
                cells[spec["chapter"]] = source.rstrip()[: -len("result = timing()")] + tiny
    assert sorted(cells) == CHAPTERS
    script = tmp_path / "cells.py"
    script.write_text(
        "import matplotlib\nmatplotlib.use('Agg')\nimport sys\n"
        f"for ch, src in {cells!r}.items():\n"
        "    ns = {}\n"
        "    exec(compile(src, f'cell_{ch}', 'exec'), ns)\n"
        "    assert len(ns['result']['xs']) == 2, ch\n"
        "    assert not any(m.startswith('coursekit') for m in sys.modules), ch\n"
        "print('all ran')\n"
    )
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "all ran" in proc.stdout and "Calibration on " in proc.stdout


def test_a_miss_at_the_calibration_shape_is_called_noise_not_another_rate():
    """Timed at the very shape it was calibrated on, 'another rate' would say nothing."""
    same = T.Cost(operand=0, moved=10, flops=10**9, shape=(1, 2, 3))  # rate_of "m" is (1, 2, 3)
    result = _synthetic(1.0, 1e-2, same)
    assert T.miss_kind(result, "m", 0) == "noise"
    reason = T.miss_reason(result, "m", 0)
    assert "noise" in reason and "min_run_time" in reason and "another rate" not in reason
    other = T.Cost(operand=0, moved=10, flops=10**9, shape=(9, 9, 9))
    assert T.miss_kind(_synthetic(1.0, 1e-2, other), "m", 0) == "rate"
