"""What the browser tests and `make screenshots` share: Debian's chromium, a local server for the
built site, and a browser context in which every request to anything but that server is blocked.

Playwright drives Debian's /usr/bin/chromium, never a browser Playwright downloads itself
(`.ci/run` installs the package when it is missing). A missing browser is an error, not a skip.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
INSTALL_HINT = (
    f"{CHROMIUM} is missing. The browser tests drive Debian's chromium package, never a browser "
    "downloaded by Playwright: install it with `apt-get update && apt-get install -y chromium` "
    "(`.ci/run` does this when it runs as root)."
)


def chromium_path() -> str:
    """The browser's path, or an AssertionError that says how to install it (never a skip)."""
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        raise AssertionError(INSTALL_HINT)
    return CHROMIUM


def chromium_version() -> str:
    out = subprocess.run([chromium_path(), "--version"], capture_output=True, text=True, timeout=60)
    return out.stdout.strip() or out.stderr.strip()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        pass


@contextlib.contextmanager
def serve(site: Path) -> Iterator[str]:
    """Serve `site` over http on 127.0.0.1 at a free port, in a thread; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="site-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def launch(playwright):
    """Debian's chromium, headless, with nothing that phones home."""
    return playwright.chromium.launch(
        executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS
    )


def block_all_but(context, base: str, blocked: list[str]) -> None:
    """Abort every request that does not go to `base`; the URLs of those aborted go in `blocked`."""

    def route(r):
        url = r.request.url
        if url.startswith(base) or url.startswith("data:") or url.startswith("blob:"):
            r.continue_()
        else:
            blocked.append(url)
            r.abort("blockedbyclient")

    context.route("**/*", route)


def page_files(site: Path) -> list[str]:
    """Every HTML page of the built site, as paths relative to it (POSIX), sorted."""
    return sorted(
        p.relative_to(site).as_posix()
        for p in site.rglob("*.html")
        if "_static" not in p.relative_to(site).parts
        and "_sources" not in p.relative_to(site).parts
    )


def have_apt() -> bool:
    return shutil.which("apt-get") is not None


ROOT = Path(__file__).resolve().parents[2]


def toc_entries(root: Path = ROOT) -> list[dict]:
    """The pages _toc.yml lists, in order: {"file", "html", "part", "kind"}.

    kind: "root", "chapter" (a chapter of the "Chapters" part), "exercise" (a section under a
    chapter, from exercises/), or "page" (anything else).
    """
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    out = [{"file": toc["root"], "part": "", "kind": "root"}]

    def walk(entries, part, depth):
        for e in entries or []:
            if "file" not in e:
                continue
            f = e["file"]
            if f.startswith("exercises/"):
                kind = "exercise"
            elif part == "Chapters" and depth == 0:
                kind = "chapter"
            else:
                kind = "page"
            out.append({"file": f, "part": part, "kind": kind})
            walk(e.get("sections"), part, depth + 1)

    for p in toc.get("parts", []):
        walk(p.get("chapters"), p.get("caption", ""), 0)
    walk(toc.get("chapters"), "", 0)
    for e in out:
        stem = e["file"].rsplit(".", 1)[0] if e["file"].endswith((".md", ".ipynb")) else e["file"]
        e["file"] = stem
        e["html"] = stem + ".html"
    return out
