"""axe-core, the accessibility engine, run on pages of the built site in Debian's chromium.

axe-core is the npm package `axe-core@4.14.1`, fetched once with `npm pack` into `.cache/npm/`
(gitignored) and checked against its pinned SHA-256 every time it is used; its `axe.min.js` is
injected into each page as an inline script (no request leaves the local server).

Rules: every rule tagged `wcag2a`, `wcag2aa`, `wcag21a` or `wcag21aa` (WCAG 2.1 levels A and
AA), none disabled, the whole document. By hand:

    python -m tests.browser.axe [--site _build/html] [--json FILE] [--pages book/04_bags.html]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import hashlib
import json
import os
import subprocess
import tarfile
import time
from pathlib import Path

from . import harness

AXE_VERSION = "4.14.1"
# sha256 of https://registry.npmjs.org/axe-core/-/axe-core-4.14.1.tgz (npm's own sha512
# integrity for it, FHfa+lmN...udVGtQ==, was checked when this was pinned).
AXE_TGZ_SHA256 = "e6b0ce02b84d892e2e33e403485e7f3d6c29e2be6df65daf44d89ba564139745"
CACHE = harness.ROOT / ".cache" / "npm"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
MODES = ("light", "dark")
FAILING = ("critical", "serious")

# After load: MathJax typeset, fonts ready, the colour mode's transitions over, then axe.
RUN_JS = """async (tags) => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  await document.fonts.ready;
  // A change of colour mode starts CSS transitions (the search field's background, say): let
  // them end, or axe measures the contrast of colours half-way between the two modes.
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  await Promise.all(document.getAnimations().filter(a => a instanceof CSSTransition)
                    .map(a => a.finished.catch(() => null)));
  const result = await axe.run(document, {runOnly: {type: 'tag', values: tags},
                                          resultTypes: ['violations']});
  return {theme: document.documentElement.dataset.theme || '',
          violations: result.violations.map(v => ({
            id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.map(n => ({target: n.target.join(' '), impact: n.impact,
                                      summary: n.failureSummary,
                                      html: n.html.slice(0, 200)}))}))};
}"""


def tarball() -> Path:
    """The pinned axe-core tarball in the cache (fetched with `npm pack` when missing),
    its checksum checked; an AssertionError that says what to do otherwise."""
    tgz = CACHE / f"axe-core-{AXE_VERSION}.tgz"
    if not tgz.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        cmd = ["npm", "pack", "--silent", f"axe-core@{AXE_VERSION}", "--pack-destination", CACHE]
        try:
            subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.SubprocessError) as e:
            raise AssertionError(
                f"could not fetch axe-core {AXE_VERSION} with npm ({e}); install Debian's npm "
                f"(`apt-get install npm`) or put axe-core-{AXE_VERSION}.tgz into {CACHE}"
            ) from e
    digest = hashlib.sha256(tgz.read_bytes()).hexdigest()
    if digest != AXE_TGZ_SHA256:
        raise AssertionError(
            f"{tgz} has sha256 {digest}, not the pinned {AXE_TGZ_SHA256}: delete it and rerun"
        )
    return tgz


def axe_source() -> str:
    with tarfile.open(tarball(), "r:gz") as tar:
        member = tar.extractfile("package/axe.min.js")
        assert member is not None, "axe-core's tarball has no package/axe.min.js"
        return member.read().decode("utf-8")


async def _block_all_but(context, base: str, blocked: list[str]) -> None:
    """harness.block_all_but, for Playwright's async API."""

    async def route(r):
        url = r.request.url
        if url.startswith((base, "data:", "blob:")):
            await r.continue_()
        else:
            blocked.append(url)
            await r.abort("blockedbyclient")

    await context.route("**/*", route)


async def _check_pages(browser, base: str, pages: list[str], source: str, modes, results):
    """One worker: a context of its own (a first visit to the site: the theme follows the
    reader's system setting), each page opened in turn and checked in each colour mode (the
    system setting is switched, and the theme follows it before axe runs again)."""
    blocked: list[str] = []
    context = await browser.new_context(
        viewport={"width": 1300, "height": 900}, color_scheme=modes[0]
    )
    await _block_all_but(context, base, blocked)
    try:
        page = await context.new_page()
        while pages:
            rel = pages.pop(0)
            await page.goto(base + rel, wait_until="load")
            await page.add_script_tag(content=source)
            for mode in modes:
                await page.emulate_media(color_scheme=mode)
                # (a page without the theme has no data-theme: test_axe checks the site's have)
                await page.wait_for_function(
                    f"[undefined, {mode!r}].includes(document.documentElement.dataset.theme)"
                )
                found = await page.evaluate(RUN_JS, TAGS)
                found["blocked"], blocked[:] = list(blocked), []
                results[(rel, mode)] = found
    finally:
        await context.close()


async def _check_site(site: Path, pages: list[str], modes, workers: int) -> dict:
    from playwright.async_api import async_playwright

    source, results, todo = axe_source(), {}, list(pages)
    with harness.serve(site) as base:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(
                executable_path=harness.chromium_path(), headless=True, args=harness.CHROMIUM_ARGS
            )
            try:
                await asyncio.gather(
                    *(
                        _check_pages(browser, base, todo, source, modes, results)
                        for _ in range(workers)
                    )
                )
            finally:
                await browser.close()
    return results


def check_site(site: Path, pages: list[str] | None = None, modes=MODES, workers=None) -> dict:
    """{(page, mode): axe's findings} for every page of the site (a redirect-only page is
    skipped: the page it forwards to is checked), `workers` pages at a time (default: one per
    core, at most 4: each page's renderer is a process of its own)."""
    from .collect import redirect_target

    pages = pages if pages is not None else harness.page_files(site)
    pages = [p for p in pages if redirect_target(site / p) is None]
    workers = workers or max(1, min(4, os.cpu_count() or 1))
    results = asyncio.run(_check_site(site, pages, tuple(modes), workers))
    order = {rel: i for i, rel in enumerate(pages)}
    return dict(sorted(results.items(), key=lambda kv: (modes.index(kv[0][1]), order[kv[0][0]])))


def counts(results: dict) -> dict:
    """Violating nodes per impact, per rule and impact, and per page and mode."""
    by_impact, by_rule, by_page = collections.Counter(), collections.Counter(), {}
    for (rel, mode), out in results.items():
        page = collections.Counter()
        for v in out["violations"]:
            for n in v["nodes"]:
                impact = n["impact"] or v["impact"]
                by_impact[impact] += 1
                by_rule[f"{v['id']} ({impact})"] += 1
                page[impact] += 1
        by_page[f"{rel} [{mode}]"] = dict(page)
    return {"impact": dict(by_impact), "rule": dict(by_rule.most_common()), "page": by_page}


def failures(results: dict) -> list[str]:
    """One line per critical or serious violation: page, mode, rule, element, why."""
    lines = []
    for (rel, mode), out in results.items():
        for v in out["violations"]:
            for n in v["nodes"]:
                if (n["impact"] or v["impact"]) in FAILING:
                    why = (n["summary"] or "").replace("\n", " ")[:240]
                    lines.append(f"{rel} [{mode}] {v['id']} ({n['impact']}): {n['target']}: {why}")
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--site", type=Path, default=harness.ROOT / "_build" / "html")
    p.add_argument("--pages", nargs="*")
    p.add_argument("--json", type=Path, help="write every violation here")
    args = p.parse_args(argv)
    start = time.perf_counter()
    results = check_site(args.site, args.pages)
    seconds = time.perf_counter() - start
    summary = counts(results)
    if args.json:
        args.json.write_text(
            json.dumps(
                {"counts": summary, "results": {f"{k[0]} [{k[1]}]": v for k, v in results.items()}},
                indent=1,
            ),
            encoding="utf-8",
        )
    print(json.dumps(summary, indent=1))
    bad = failures(results)
    print(
        f"{len(bad)} critical or serious violations over {len(results)} page views "
        f"({seconds:.0f} s)"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
