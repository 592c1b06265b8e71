"""`make screenshots`: every chapter and exercise page of the built site at desktop (1300 px) and
phone (390 px) width, and at desktop width in dark mode, into _build/screenshots/.

Served from _build/html on 127.0.0.1 with every other request blocked, in Debian's chromium,
after MathJax has typeset the page. Not part of `make test`: look at the pictures.

    python -m tests.browser.screenshots [--pages book/01_one_hot_lookup ...] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import harness

VIEWS = {
    "desktop": {"viewport": {"width": 1300, "height": 900}, "color_scheme": "light"},
    "phone": {
        "viewport": {"width": 390, "height": 844},
        "device_scale_factor": 2,
        "is_mobile": True,
        "has_touch": True,
        "color_scheme": "light",
    },
    "dark": {"viewport": {"width": 1300, "height": 900}, "color_scheme": "dark"},
}

WAIT_FOR_MATH = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  await document.fonts.ready;
  return document.documentElement.dataset.theme || '';
}"""


def default_pages() -> list[str]:
    return [e["html"] for e in harness.toc_entries() if e["kind"] in ("chapter", "exercise")]


def take(site: Path, out: Path, pages: list[str], views=VIEWS) -> list[dict]:
    """Screenshot each page in each view; returns one record per picture (with any problems)."""
    from playwright.sync_api import sync_playwright

    records = []
    with harness.serve(site) as base, sync_playwright() as pw:
        browser = harness.launch(pw)
        try:
            for view, options in views.items():
                (out / view).mkdir(parents=True, exist_ok=True)
                for rel in pages:
                    context = browser.new_context(**options)
                    blocked: list[str] = []
                    harness.block_all_but(context, base, blocked)
                    page = context.new_page()
                    errors: list[str] = []
                    page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
                    page.on(
                        "console",
                        lambda m, errors=errors: (
                            errors.append(m.text) if m.type == "error" else None
                        ),
                    )
                    page.goto(base + rel, wait_until="load")
                    theme = page.evaluate(WAIT_FOR_MATH)
                    page.wait_for_load_state("networkidle")
                    path = out / view / (rel.replace("/", "__").removesuffix(".html") + ".png")
                    page.screenshot(path=str(path), full_page=True)
                    height = page.evaluate("() => document.documentElement.scrollHeight")
                    overflow = page.evaluate(
                        "() => document.documentElement.scrollWidth - window.innerWidth"
                    )
                    records.append(
                        {
                            "view": view,
                            "page": rel,
                            "file": str(path),
                            "theme": theme,
                            "height": height,
                            "horizontal_overflow_px": overflow,
                            "errors": errors,
                            "blocked": blocked,
                        }
                    )
                    context.close()
        finally:
            browser.close()
    return records


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--site", type=Path, default=harness.ROOT / "_build" / "html")
    p.add_argument("--out", type=Path, default=harness.ROOT / "_build" / "screenshots")
    p.add_argument("--pages", nargs="*", help="pages as in the site, e.g. book/01_one_hot_lookup")
    p.add_argument("--views", nargs="*", choices=sorted(VIEWS), default=list(VIEWS))
    args = p.parse_args(argv)
    if not (args.site / "index.html").exists():
        print(f"no website in {args.site}: run `make book` first", file=sys.stderr)
        return 1
    pages = [q if q.endswith(".html") else q + ".html" for q in args.pages or default_pages()]
    missing = [q for q in pages if not (args.site / q).exists()]
    pages = [q for q in pages if q not in missing]
    records = take(args.site, args.out, pages, {v: VIEWS[v] for v in args.views})
    bad = 0
    for r in records:
        notes = []
        if r["view"] == "dark" and r["theme"] != "dark":
            notes.append(f"theme is {r['theme']!r}, not dark")
        if r["horizontal_overflow_px"] > 0:
            notes.append(f"{r['horizontal_overflow_px']} px wider than the screen")
        if r["errors"]:
            notes.append(f"console errors: {r['errors']}")
        if r["blocked"]:
            notes.append(f"blocked requests: {r['blocked']}")
        bad += bool(notes)
        print(f"{r['file']}  ({r['height']} px tall){'  ' + '; '.join(notes) if notes else ''}")
    for q in missing:
        print(f"not in the site (yet): {q}")
    print(f"{len(records)} screenshots in {args.out}; {bad} with problems")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
