"""Open pages of the built site in Debian's chromium, network blocked, and record what a reader
meets: console errors, requests, math, images, headings, buttons, the sidebar.

test_site.py visits every page once per test session with it; by hand:
    python -m tests.browser.collect [_build/html]    # prints the findings as JSON
"""

from __future__ import annotations

import json
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urljoin

from . import harness

_REFRESH = re.compile(r'<meta http-equiv="refresh" content="0; url=([^"]+)"', re.IGNORECASE)

# Runs in the page after it has loaded and MathJax (on pages that load it) has typeset it.
PAGE_JS = r"""
async () => {
  const out = {};
  out.mathjax = !!(window.MathJax && MathJax.startup && MathJax.startup.promise);
  out.math_errors = [];
  if (out.mathjax) {
    await MathJax.startup.promise;
    // A TeX error becomes <merror> (noerrors) and an undefined macro red text (noundefined).
    for (const item of MathJax.startup.document.math) {
      const mml = MathJax.startup.toMML(item.root);
      if (mml.includes('<merror') || mml.includes('mathcolor="red"')) out.math_errors.push(item.math);
    }
  }
  await document.fonts.ready;
  const shown = e => e.checkVisibility();
  out.math_sources = document.querySelectorAll('span.math, div.math').length;
  out.mjx_containers = document.querySelectorAll('mjx-container').length;
  // What screen readers read: MathJax's assistive MathML beside each formula.
  out.assistive_mml = document.querySelectorAll('mjx-container mjx-assistive-mml').length;
  // The visible text of the page, without code and typeset math: no TeX may be left in it.
  const main = document.querySelector('main') || document.body;
  const clone = main.cloneNode(true);
  clone.querySelectorAll('pre, code, mjx-container, script, style, .highlight, .onlyprint')
    .forEach(e => e.remove());
  const text = clone.textContent || '';
  out.raw_tex = [];
  for (const token of ['$$', '$\\', '\\(', '\\)', '\\[', '\\]', '\\begin{', '\\frac',
                       '\\math']) {
    const i = text.indexOf(token);
    if (i >= 0) out.raw_tex.push(text.slice(Math.max(0, i - 40), i + 40).replace(/\s+/g, ' '));
  }
  out.title = document.title;
  out.images = [...document.images].map(img => ({
    src: img.getAttribute('src'), alt: (img.getAttribute('alt') || '').trim(),
    complete: img.complete, natural_width: img.naturalWidth, shown: shown(img),
  }));
  // Headings a reader (or a screen reader) meets: the print-only copies are not shown.
  out.headings = [...document.querySelectorAll('h1, h2, h3, h4, h5, h6')].filter(shown)
    .map(h => [Number(h.tagName[1]), h.textContent.replace(/#$/, '').trim().slice(0, 80),
               !!h.closest('article')]);
  out.code_blocks = document.querySelectorAll('div.highlight pre').length;
  out.copy_buttons = document.querySelectorAll('div.highlight button.copybtn').length;
  out.download_links = [...document.querySelectorAll('.dropdown-download-buttons a')]
    .map(a => a.href);
  out.launch_links = [...document.querySelectorAll('.dropdown-launch-buttons a')]
    .map(a => a.href);
  out.sidebar_links = [...document.querySelectorAll('nav.bd-docs-nav a')]
    .map(a => a.href.split('#')[0]);
  out.theme = document.documentElement.dataset.theme || '';
  return out;
}
"""


@dataclass
class PageReport:
    page: str
    status: int = 0
    redirect: str = ""
    console_errors: list = field(default_factory=list)
    page_errors: list = field(default_factory=list)
    blocked: list = field(default_factory=list)
    failed: list = field(default_factory=list)
    seconds: float = 0.0
    data: dict = field(default_factory=dict)


def redirect_target(path: Path) -> str | None:
    """Where a redirect-only page (Jupyter Book's root index.html) forwards to, else None."""
    text = path.read_text(encoding="utf-8", errors="replace")
    m = _REFRESH.search(text)
    return m.group(1) if m and len(text) < 500 else None


def new_context(browser, base: str, blocked: list, **options):
    """A fresh context (a first visit: empty storage) in which only `base` can be reached."""
    options.setdefault("viewport", {"width": 1300, "height": 900})
    context = browser.new_context(**options)
    harness.block_all_but(context, base, blocked)
    return context


def visit(browser, base: str, site: Path, rel: str) -> PageReport:
    """Open one page in a fresh context and record what happened."""
    rep = PageReport(rel)
    start = time.perf_counter()
    context = new_context(browser, base, rep.blocked)
    page = context.new_page()

    def on_console(msg):
        if msg.type == "error":
            rep.console_errors.append(msg.text)

    def on_failed(request):
        rep.failed.append(f"{request.url} ({request.failure})")

    def on_response(response):
        if response.status >= 400:
            rep.failed.append(f"{response.url} (HTTP {response.status})")

    page.on("console", on_console)
    page.on("pageerror", lambda e: rep.page_errors.append(str(e)))
    page.on("requestfailed", on_failed)
    page.on("response", on_response)
    try:
        response = page.goto(base + rel, wait_until="load")
        rep.status = response.status if response else 0
        target = redirect_target(site / rel)
        if target is not None:
            page.wait_for_url(urljoin(base + rel, target), wait_until="load")
            rep.redirect = page.url[len(base) :]
        rep.data = page.evaluate(PAGE_JS)
        page.wait_for_load_state("networkidle")
        # Images again, now that everything has loaded.
        rep.data["images"] = page.evaluate(
            "() => [...document.images].map(i => ({src: i.getAttribute('src'),"
            " alt: (i.getAttribute('alt') || '').trim(), complete: i.complete,"
            " natural_width: i.naturalWidth, shown: i.checkVisibility()}))"
        )
    finally:
        context.close()
    # A blocked request shows up as a failed one too: report it once, as blocked.
    rep.failed = [f for f in rep.failed if not f.startswith(tuple(rep.blocked))]
    rep.blocked = [u for u in rep.blocked if u]
    rep.seconds = round(time.perf_counter() - start, 2)
    return rep


def search(browser, base: str, term: str) -> dict:
    """Type nothing: open the theme's search page for `term` and read the results it lists."""
    blocked: list[str] = []
    context = new_context(browser, base, blocked)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(f"{base}search.html?q={term}", wait_until="load")
        page.wait_for_function(
            "() => { const s = document.querySelector('#search-results .search-summary');"
            " return s && /found|did not match/i.test(s.textContent); }",
            timeout=30_000,
        )
        found = page.evaluate(
            "() => ({summary: document.querySelector('#search-results .search-summary')"
            ".textContent.trim(), results: [...document.querySelectorAll("
            "'#search-results ul.search li a')].map(a => a.href.split('?')[0].split('#')[0])})"
        )
    finally:
        context.close()
    found["errors"] = errors
    found["blocked"] = blocked
    found["results"] = sorted({r[len(base) :] for r in found["results"] if r.startswith(base)})
    return found


def visit_all(site: Path, pages: list[str] | None = None) -> dict[str, PageReport]:
    """Every page (default: all of the site), each in a fresh context."""
    from playwright.sync_api import sync_playwright

    pages = pages if pages is not None else harness.page_files(site)
    with harness.serve(site) as base, sync_playwright() as pw:
        browser = harness.launch(pw)
        try:
            return {rel: visit(browser, base, site, rel) for rel in pages}
        finally:
            browser.close()


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    site = Path(argv[0] if argv else "_build/html").resolve()
    print(json.dumps({k: asdict(v) for k, v in visit_all(site).items()}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
