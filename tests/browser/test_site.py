"""The website as a reader meets it: every page opened in Debian's chromium, served from
_build/html on 127.0.0.1 with every other request blocked (the site must work offline).

The site is built once per test session (the `built_site` fixture, warnings are errors); every
page is then opened once, in a fresh browser context, and the tests below read the findings.
A missing /usr/bin/chromium is a failure, never a skip (`.ci/run` installs it).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest

from . import collect, harness

pytestmark = pytest.mark.slow

SEARCH_TERMS = ["tying", "EmbeddingBag"]


@pytest.fixture(scope="module")
def browser_site(built_site):
    """(base URL, browser, site): the built site on a local port and Debian's chromium."""
    harness.chromium_path()  # fails loudly, with the install command, when it is missing
    from playwright.sync_api import sync_playwright

    with harness.serve(built_site) as base, sync_playwright() as pw:
        browser = harness.launch(pw)
        try:
            yield base, browser, built_site
        finally:
            browser.close()


@pytest.fixture(scope="module")
def visited(browser_site) -> dict[str, collect.PageReport]:
    base, browser, site = browser_site
    reports = {rel: collect.visit(browser, base, site, rel) for rel in harness.page_files(site)}
    print("\npages checked in the browser:")
    for rel, rep in reports.items():
        d = rep.data
        print(
            f"  {rel}{' -> ' + rep.redirect if rep.redirect else ''}: {rep.seconds} s, "
            f"{d.get('mjx_containers', 0)} formulas, {len(d.get('images', []))} images, "
            f"{d.get('code_blocks', 0)} code blocks"
        )
    return reports


def _problems(visited, check) -> dict[str, object]:
    out = {}
    for rel, rep in visited.items():
        found = check(rep)
        if found:
            out[rel] = found
    return out


def _toc():
    return harness.toc_entries()


def test_debian_chromium_is_the_browser():
    path = harness.chromium_path()
    assert path == "/usr/bin/chromium"
    assert "Chromium" in harness.chromium_version()


def test_every_page_opens(visited, built_site):
    assert set(visited) == set(harness.page_files(built_site))
    assert len(visited) >= 5
    for entry in _toc():
        assert entry["html"] in visited, f"{entry['file']} is in _toc.yml but was not built"
    bad = _problems(visited, lambda r: r.status != 200 and f"HTTP {r.status}")
    assert not bad, bad


def test_nothing_is_fetched_from_another_site(visited):
    """With the network blocked, no page even tries to load anything from elsewhere."""
    bad = _problems(visited, lambda r: r.blocked)
    assert not bad, f"requests to other sites (blocked): {bad}"


def test_every_local_request_succeeds(visited):
    bad = _problems(visited, lambda r: r.failed)
    assert not bad, f"failed requests: {bad}"


def test_no_console_errors(visited):
    bad = _problems(visited, lambda r: r.console_errors + r.page_errors)
    assert not bad, f"console errors: {bad}"


def test_math_is_typeset(visited):
    """MathJax (served by the site) typesets every formula, each with the MathML a screen
    reader reads; no raw TeX is left in the text."""
    bad = {}
    for rel, rep in visited.items():
        d = rep.data
        if d["math_sources"]:
            if not d["mathjax"]:
                bad[rel] = "the page has math but MathJax did not load"
            elif d["mjx_containers"] < d["math_sources"]:
                bad[rel] = f"{d['mjx_containers']} of {d['math_sources']} formulas typeset"
            elif d["assistive_mml"] < d["mjx_containers"]:
                bad[rel] = f"{d['assistive_mml']} of {d['mjx_containers']} formulas readable"
        if d["math_errors"]:
            bad[rel] = f"TeX errors or undefined macros in: {d['math_errors']}"
        if d["raw_tex"]:
            bad[rel] = f"raw TeX in the visible text: {d['raw_tex']}"
    assert not bad, bad
    assert any(r.data["mjx_containers"] for r in visited.values()), "no page has math?"


def test_every_image_loads_and_has_alt_text(visited):
    """Figures from executed cells need `mystnb: image: alt:`; the theme's logos have alt text."""

    def check(rep):
        return [
            f"{i['src']}: " + ("does not load" if not i["natural_width"] else "no alt text")
            for i in rep.data["images"]
            if not i["natural_width"] or not i["alt"]
        ]

    bad = _problems(visited, check)
    assert not bad, bad


def test_headings_are_in_order(visited):
    """One visible H1 per page, and no level skipped on the way down."""

    def check(rep):
        heads = rep.data["headings"]
        found = []
        h1 = [h for h in heads if h[0] == 1]
        if len(h1) != 1:
            found.append(f"{len(h1)} visible H1: {[h[1] for h in h1]}")
        level = 0
        for lvl, text, _in_article in heads:
            if lvl > level + 1:
                found.append(f"H{lvl} {text!r} follows H{level}")
            level = lvl
        return found

    bad = _problems(visited, check)
    assert not bad, bad


def test_code_cells_have_copy_buttons(visited):
    bad = _problems(
        visited,
        lambda r: (
            r.data["copy_buttons"] != r.data["code_blocks"]
            and f"{r.data['copy_buttons']} copy buttons for {r.data['code_blocks']} code blocks"
        ),
    )
    assert not bad, bad
    assert any(r.data["code_blocks"] for r in visited.values())


@pytest.mark.parametrize(
    "entry", [e for e in _toc() if e["kind"] == "exercise"], ids=lambda e: e["file"]
)
def test_exercise_page_offers_download_and_launch_buttons(visited, built_site, entry):
    rep = visited.get(entry["html"])
    assert rep is not None, f"{entry['html']} was not built"
    downloads = rep.data["download_links"]
    notebook = [u for u in downloads if urlsplit(u).path.endswith(".ipynb")]
    assert notebook, f"no .ipynb download on {entry['html']}: {downloads}"
    path = urlsplit(notebook[0]).path.lstrip("/")
    assert (built_site / path).is_file(), f"the download {path} is not in the site"
    assert Path(path).name == Path(entry["file"]).name + ".ipynb"
    launch = " ".join(rep.data["launch_links"])
    for service in ("mybinder.org", "colab.research.google.com", "/hub/user-redirect/git-pull"):
        assert service in launch, f"no {service} launch button on {entry['html']}: {launch}"
    assert entry["file"] + ".ipynb" in launch, "the launch buttons should open this notebook"


def test_sidebar_reaches_every_chapter_and_exercise(visited):
    """The navigation sidebar of the first page links every page of _toc.yml."""
    rep = visited["index.html"]
    assert rep.redirect, "index.html should forward to the first page"
    paths = {urlsplit(u).path.lstrip("/") for u in rep.data["sidebar_links"]}
    missing = [e["html"] for e in _toc() if e["html"] not in paths]
    assert not missing, f"not reachable from the sidebar: {missing}"
    kinds = {e["kind"] for e in _toc()}
    assert {"chapter", "exercise"} <= kinds


@pytest.mark.parametrize("term", SEARCH_TERMS)
def test_site_search_finds(browser_site, term):
    """The site's own search (search.html, against the real search index) finds the term in a
    chapter or exercise page."""
    base, browser, _site = browser_site
    found = collect.search(browser, base, term)
    assert not found["errors"] and not found["blocked"], found
    chapters = {e["html"] for e in _toc() if e["kind"] in ("chapter", "exercise")}
    hits = [r for r in found["results"] if r in chapters]
    assert hits, f"searching {term!r}: {found['summary']!r}, results {found['results']}"
