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


def _hold(lock_dir, exclusive, trying, holding, go, log):
    lock = prerun._Lock(Path(lock_dir))
    trying.set()
    lock.acquire(exclusive)
    log.put(("start", exclusive, time.monotonic()))
    holding.set()
    go.wait(30)  # hold the lock until the test lets go
    log.put(("end", exclusive, time.monotonic()))
    lock.release(exclusive)


def test_the_lock_lets_cells_share_but_a_timing_cell_runs_alone(tmp_path):
    # Ordered by events, not by sleeps: a loaded machine may start a process late, never out of turn.
    ctx = multiprocessing.get_context("spawn")
    log = ctx.Queue()
    go_readers, go_writer = ctx.Event(), ctx.Event()
    r_trying, r_holding = [ctx.Event() for _ in range(2)], [ctx.Event() for _ in range(2)]
    readers = [
        ctx.Process(
            target=_hold, args=(tmp_path, False, r_trying[i], r_holding[i], go_readers, log)
        )
        for i in range(2)
    ]
    for r in readers:
        r.start()
    # both shared holders inside at once: a lock that made them exclusive would time out here
    assert all(h.wait(60) for h in r_holding), "two shared holders could not hold the lock together"
    w_trying, w_holding = ctx.Event(), ctx.Event()
    writer = ctx.Process(target=_hold, args=(tmp_path, True, w_trying, w_holding, go_writer, log))
    writer.start()
    assert w_trying.wait(60)
    time.sleep(0.5)  # time for a broken lock to let the writer in while the readers hold it
    assert not w_holding.is_set(), "the exclusive holder got in while shared holders held the lock"
    go_readers.set()
    assert w_holding.wait(60), "the exclusive holder never got the lock once the shared ones left"
    go_writer.set()
    for p in [*readers, writer]:
        p.join(30)
    events = sorted((log.get(timeout=5) for _ in range(6)), key=lambda e: e[2])
    starts = [e for e in events if e[0] == "start"]
    assert [e[1] for e in starts] == [False, False, True]
    shared_ends = [e[2] for e in events if e[0] == "end" and not e[1]]
    assert starts[2][2] >= max(shared_ends)  # the exclusive one waited for both


def test_the_last_build_found_every_page_in_the_cache():
    log = ROOT / "_build.log"
    if not log.exists() or "prerun:" not in log.read_text():
        pytest.skip("no site build log from tests/run_all.sh")
    text = re.sub(r"\x1b\[[0-9;]*m", "", log.read_text())  # Sphinx colours its log
    assert "Executing notebook" not in text, "the build executed a page prerun had cached"
    # Every executed page Sphinx read came from the cache: all of them in a fresh checkout (CI),
    # only the changed ones when _build/ is left from an earlier build.
    names = {p.relative_to(ROOT).with_suffix("").as_posix() for p in prerun.pages(ROOT)}
    read = set(re.findall(r"^reading sources\.\.\. \[\s*\d+%\] (\S+)$", text, re.M)) & names
    cached = {
        Path(m).relative_to(ROOT).with_suffix("").as_posix()
        for m in re.findall(r"^(\S+\.md): Using cached notebook", text, re.M)
    }
    assert cached == read, f"read but not from the cache: {sorted(read - cached)}"
    fresh = re.search(r"updating environment: (?:\[[^\]]*\] )?(\d+) added, 0 changed", text)
    if fresh and int(fresh.group(1)) > 0:  # a build from nothing reads every page
        assert read == names, f"pages the fresh build did not read: {sorted(names - read)}"
