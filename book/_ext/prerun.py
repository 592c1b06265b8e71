"""Execute the book's pages two at a time into Jupyter Book's execution cache, before the build.

`jupyter-book build` (myst-nb, ``execute_notebooks: cache``) executes the pages one after another
while Sphinx reads them. This script runs the same notebooks beforehand, ``--jobs`` at a time,
exactly as myst-nb would (the same reader, the same working folder, the same timeout) and stores
each executed notebook in ``_build/.jupyter_cache``; the build then finds every page in the cache
and executes nothing. A page whose code changed since is simply executed again by the build, and a
page that fails here is left out of the cache, so the build runs it itself and reports the error.

Cells that time something (a chapter's timing cell, a hand-timed loop, the two-process exchange)
run alone: every cell holds a shared lock while it runs, a timing cell an exclusive one, and a
timing cell that waits keeps new cells from starting (a writer-preferring lock), so no figure on
the site is measured while another page computes.

Usage: python book/_ext/prerun.py [--jobs N] [--root DIR]
"""

from __future__ import annotations

import argparse
import fcntl
import os
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import yaml

# A cell that measures time: it runs with the machine to itself.
TIMED = re.compile(
    r"coursekit\.bench_ch\d+ import (?:timing|roofline)|perf_counter|sharding\.run\("
)


# What myst-nb records for a MyST markdown notebook (myst_nb.core.read.create_nb_reader).
READ_DATA = {"type": "plugin", "name": "myst_nb_md"}


def pages(root: Path) -> list[Path]:
    """The toc's pages that are notebooks (MyST markdown with a kernelspec), not excluded."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    config = yaml.safe_load((root / "_config.yml").read_text())
    excluded = config.get("execute", {}).get("exclude_patterns", [])
    files = []

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                files.append(node["file"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    files.append(toc["root"])
    walk(toc.get("parts", toc.get("chapters", [])))
    out = []
    for name in files:
        path = root / f"{name}.md"
        if not path.exists() or any(Path(name + ".md").match(p) for p in excluded):
            continue
        from myst_nb.core.read import is_myst_markdown_notebook

        if is_myst_markdown_notebook(path.read_text()):
            out.append(path)
    return out


def read(path: Path):
    """The notebook myst-nb makes of the page (the cache matches on code cells and kernelspec)."""
    from myst_nb.core.read import read_myst_markdown_notebook
    from myst_parser.config.main import MdParserConfig

    config = yaml.safe_load((path.parents[1] / "_config.yml").read_text())
    extensions = config.get("parse", {}).get("myst_enable_extensions", [])
    md = MdParserConfig(enable_extensions=set(extensions))
    return read_myst_markdown_notebook(path.read_text(), config=md, add_source_map=True, path=path)


class _Lock:
    """A writer-preferring shared/exclusive lock between processes, on two files."""

    def __init__(self, folder: Path):
        folder.mkdir(parents=True, exist_ok=True)
        self.turn = os.open(folder / "prerun.turn.lock", os.O_CREAT | os.O_RDWR)
        self.main = os.open(folder / "prerun.main.lock", os.O_CREAT | os.O_RDWR)

    def acquire(self, exclusive: bool) -> None:
        fcntl.flock(self.turn, fcntl.LOCK_EX)
        fcntl.flock(self.main, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        if not exclusive:
            fcntl.flock(self.turn, fcntl.LOCK_UN)

    def release(self, exclusive: bool) -> None:
        fcntl.flock(self.main, fcntl.LOCK_UN)
        if exclusive:
            fcntl.flock(self.turn, fcntl.LOCK_UN)


def execute(path: str, lock_dir: str, timeout: int):
    """Run one page (in a worker process); returns (path, notebook or None, seconds, error)."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    lock = _Lock(Path(lock_dir))

    class Client(NotebookClient):
        async def async_execute_cell(self, cell, cell_index, *args, **kwargs):
            exclusive = cell.cell_type == "code" and bool(TIMED.search(cell.source))
            lock.acquire(exclusive)
            try:
                return await super().async_execute_cell(cell, cell_index, *args, **kwargs)
            finally:
                lock.release(exclusive)

    nb = read(Path(path))
    meta = nb.metadata.get("execution", {})
    client = Client(
        nb,
        timeout=meta.get("timeout", timeout),
        allow_errors=meta.get("allow_errors", False),
        record_timing=False,  # the cache hashes cell metadata too: leave it as myst-nb would
        resources={"metadata": {"path": str(Path(path).parent)}},
    )
    start = time.perf_counter()
    try:
        client.execute(cwd=str(Path(path).parent))
    except (CellExecutionError, CellTimeoutError) as err:
        return path, None, time.perf_counter() - start, f"{type(err).__name__}: {str(err)[-2000:]}"
    return path, nb, time.perf_counter() - start, None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2])
    args = parser.parse_args(argv)
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    root = args.root.resolve()
    config = yaml.safe_load((root / "_config.yml").read_text())
    if config.get("execute", {}).get("execute_notebooks") != "cache":
        print("prerun: execute_notebooks is not 'cache'; nothing to do")
        return 0
    timeout = int(config["execute"].get("timeout", 30))
    cache_dir = root / "_build" / ".jupyter_cache"
    cache = get_cache(str(cache_dir))
    todo = []
    for path in pages(root):
        try:
            cache.match_cache_notebook(read(path))
        except KeyError:
            todo.append(path)
    if not todo:
        print("prerun: every page is in the execution cache")
        return 0
    # Longest pages first, so that the last page to finish is a short one.
    todo.sort(key=lambda p: -p.stat().st_size)
    print(f"prerun: executing {len(todo)} pages, {args.jobs} at a time", flush=True)
    os.environ["COURSE_TIMED_ALONE"] = "1"  # the kernels inherit it: coursekit.timing.fair_threads
    start, failed = time.perf_counter(), 0
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(execute, str(p), str(cache_dir), timeout) for p in todo]
        for future in as_completed(futures):
            path, nb, seconds, error = future.result()
            name = Path(path).relative_to(root)
            if error:
                failed += 1
                print(
                    f"prerun: {name} failed after {seconds:.1f} s (the build will run it and "
                    f"report it): {error.splitlines()[-1] if error.splitlines() else error}",
                    flush=True,
                )
                continue
            record = cache.add_nb_to_project(path, read_data=READ_DATA)
            cache.cache_notebook_bundle(
                CacheBundleIn(nb, record.uri, data={"execution_seconds": seconds}),
                check_validity=False,
                overwrite=True,
            )
            print(f"prerun: {name} executed in {seconds:.1f} s", flush=True)
    print(
        f"prerun: {len(todo) - failed} of {len(todo)} pages cached in "
        f"{time.perf_counter() - start:.1f} s",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
