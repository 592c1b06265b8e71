"""book/_ext/prerun.py: the site's pages executed two at a time into Jupyter Book's cache."""

import multiprocessing
import re
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import prerun  # noqa: E402


def test_every_page_with_a_timing_cell_is_found_and_its_timing_cells_run_alone():
    pages = {p.name for p in prerun.pages(ROOT)}
    assert {"01_one_hot_lookup.md", "07_choosing_d.md", "pytorch_primer.md"} <= pages
    assert "intro.md" not in pages  # plain markdown, nothing to execute
    for page in (ROOT / "book").glob("0*.md"):
        nb = prerun.read(page)
        code = [c.source for c in nb.cells if c.cell_type == "code"]
        timing = [
            s
            for s in code
            if re.search(r"^from coursekit\.bench_ch\d+ import timing|perf_counter\(\)", s, re.M)
        ]
        assert timing, f"{page.name} has no timing cell"
        assert all(prerun.TIMED.search(s) for s in timing), page.name
        assert not all(prerun.TIMED.search(s) for s in code), f"{page.name}: every cell alone"


def _hold(lock_dir, exclusive, seconds, log):
    lock = prerun._Lock(Path(lock_dir))
    lock.acquire(exclusive)
    log.put(("start", exclusive, time.monotonic()))
    time.sleep(seconds)
    log.put(("end", exclusive, time.monotonic()))
    lock.release(exclusive)


def test_the_lock_lets_cells_share_but_a_timing_cell_runs_alone(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    log = ctx.Queue()
    readers = [ctx.Process(target=_hold, args=(tmp_path, False, 0.6, log)) for _ in range(2)]
    for r in readers:
        r.start()
    time.sleep(0.3)
    writer = ctx.Process(target=_hold, args=(tmp_path, True, 0.3, log))
    writer.start()
    for p in [*readers, writer]:
        p.join(20)
    events = sorted((log.get(timeout=5) for _ in range(6)), key=lambda e: e[2])
    starts = [e for e in events if e[0] == "start"]
    assert [e[1] for e in starts] == [False, False, True]  # the two shared cells overlapped
    shared_ends = [e[2] for e in events if e[0] == "end" and not e[1]]
    assert starts[2][2] >= max(shared_ends)  # the exclusive one waited for both


def test_the_last_build_found_every_page_in_the_cache():
    log = ROOT / "_build.log"
    if not log.exists() or "prerun:" not in log.read_text():
        pytest.skip("no site build log from tests/run_all.sh")
    text = log.read_text()
    assert "Executing notebook" not in text, "the build executed a page prerun had cached"
    assert len(re.findall(r"Using cached notebook", text)) == len(prerun.pages(ROOT))
