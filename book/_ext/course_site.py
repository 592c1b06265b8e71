"""Sphinx extension (loaded from _config.yml's `local_extensions`): keep the website self-contained.

* Every page must load its scripts and styles from the site itself (it must work offline): a
  script or stylesheet with an absolute URL is a build warning, so `-W` fails the build.
* Sphinx 7.4 emits an inline script registered after the builder started (sphinx-thebe's
  `const THEBE_JS_URL = ...`, sphinx-togglebutton's settings) twice, and the second `const`
  is a SyntaxError in every page's console: drop the repeated copies.
* pydata-sphinx-theme logs a console error on a reader's first visit unless it has a default
  colour mode: default to "auto" (follow the reader's system setting).
* A chapter page is a MyST markdown notebook that only runs inside this build; `make release`
  writes a paired notebook next to it (book/NN_slug.ipynb, autograder/release/pages.py) that runs
  anywhere. sphinx-book-theme's launch buttons open it when it exists; its download button offers
  the executed copy of the page: offer the paired notebook instead. A notebook page without one
  is a warning (run `make release`).
* Accessibility (WCAG 2.1 A/AA, as axe-core checks it: `tests/browser/test_axe.py`): the theme's
  and the extensions' markup has a few faults that no upstream release within reach fixes
  (Jupyter Book 1.0.4 pins Sphinx 7, which pins sphinx-book-theme 1.3.0 and pydata-sphinx-theme
  0.17.1). Each is rewritten in the written pages once the build is done (`A11Y_REWRITES`): the
  smallest change that fixes it, so the site looks exactly as before.
"""

from __future__ import annotations

import html
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)

ABSOLUTE = ("http://", "https://", "//")


def _default_mode(app, config) -> None:
    # pydata-sphinx-theme reads it from the template context (`html_context`), not theme options.
    context = dict(config.html_context or {})
    context.setdefault("default_mode", "auto")
    config.html_context = context


def _page_assets(app, pagename, templatename, context, doctree) -> None:
    scripts = context.get("script_files")
    if scripts:
        seen, kept = set(), []
        for js in scripts:
            attrs = getattr(js, "attributes", {})
            key = (getattr(js, "filename", js) or "", tuple(sorted(attrs.items())))
            if key not in seen:
                seen.add(key)
                kept.append(js)
        scripts[:] = kept
    for kind in ("script_files", "css_files"):
        for asset in context.get(kind) or []:
            name = str(getattr(asset, "filename", asset) or "")
            if name.startswith(ABSOLUTE):
                logger.warning(
                    "page %s loads %s from another site; the website must work offline: "
                    "serve it from _static (see `make vendor-mathjax`)",
                    pagename,
                    name,
                    type="course",
                    subtype="external_asset",
                    location=pagename,
                )


def _paired_notebook(app, pagename, templatename, context, doctree) -> None:
    """A warning for a notebook page without its paired notebook (run `make release`)."""
    if context.get("ipynb_source") != pagename + ".ipynb":  # not a markdown notebook page
        return
    paired = Path(app.srcdir, pagename + ".ipynb")
    if not paired.is_file():
        logger.warning(
            "page %s has no paired notebook %s: the launch buttons would open the .md file, "
            "which Colab cannot open; run `make release`",
            pagename,
            paired.relative_to(app.srcdir).as_posix(),
            type="course",
            subtype="paired_notebook",
            location=pagename,
        )


def _serve_paired_notebooks(app, exception) -> None:
    """Put each paired notebook where the download button points (_sources/<page>.ipynb), over
    the executed copy sphinx-book-theme left there; at the end of every build, so that an
    incremental build (page unchanged, notebook regenerated) serves the current one too."""
    if exception is not None or app.builder.format != "html":
        return
    sources = Path(app.outdir, "_sources")
    for served in sources.rglob("*.ipynb"):
        rel = served.relative_to(sources)
        paired = Path(app.srcdir, rel)
        if paired.is_file() and paired.with_suffix(".md").is_file():
            shutil.copyfile(paired, served)


@dataclass(frozen=True)
class Rewrite:
    """One fix of the generated HTML: `pattern` (a regex) is replaced by `replace` (a string or a
    function of the match) on every written page. A fixed page no longer matches, so running
    the rewrites again changes nothing."""

    why: str
    pattern: re.Pattern
    replace: object


def _text(fragment: str) -> str:
    """The plain text of an HTML fragment, escaped for an attribute value."""
    return html.escape(html.unescape(re.sub(r"<[^>]+>", "", fragment)).strip(), quote=True)


def _name_summary(m: re.Match) -> str:
    return f'{m["link"]}<details{m["open"] or ""}><summary aria-label="Sections of {_text(m["title"])}">'


A11Y_REWRITES = [
    Rewrite(
        # pydata-sphinx-theme's toctree.py puts an icon-only <summary> after each sidebar entry
        # that has sub-pages: name it after the entry it opens.
        "the sidebar's chevron toggles have no accessible name (axe: summary-name)",
        re.compile(
            r'(?P<link><a class="[^"]*reference internal[^"]*" href="[^"]*">(?P<title>(?:(?!</a>).)*)</a>)'
            r'<details(?P<open> open="open")?><summary>'
        ),
        _name_summary,
    ),
    Rewrite(
        # The search field shows "Search Ctrl+K" but is named "Search": let its text name it.
        "the search field's name is not its visible text (axe: label-content-name-mismatch)",
        re.compile(
            r'(<button class="btn search-button-field[^"]*" title="Search") aria-label="Search"'
        ),
        r"\1",
    ),
    Rewrite(
        # The colour-mode button is named "Color mode", but each of its icons has a title
        # ("Light", "Dark", "System Settings"), which Font Awesome turns into the <title> of the
        # SVG it draws, and that counts as the button's text. The button's own tooltip says
        # "Color mode": drop the icons' titles.
        "the colour-mode button's icon titles count as its text (axe: label-content-name-mismatch)",
        re.compile(r'(<i class="theme-switch [^"]*" data-mode="[a-z]+") +title="[^"]*"'),
        r"\1",
    ),
    Rewrite(
        # myst-nb names every hide-input toggle "Toggle hidden content" although it shows
        # "Show code cell source": let the visible text name it.
        "the code-cell toggles' name is not their visible text (axe: label-content-name-mismatch)",
        re.compile(r'<summary aria-label="Toggle hidden content">'),
        "<summary>",
    ),
    Rewrite(
        # docutils writes the bibliography as <div role="list"> of entries with the deprecated
        # role "doc-biblioentry", so the list has no list items: make them list items.
        "the bibliography list holds no list items (axe: aria-required-children, "
        "aria-deprecated-role)",
        re.compile(r'(<div class="citation" id="[^"]*") role="doc-biblioentry"'),
        r'\1 role="listitem"',
    ),
]


def rewrite_page(text: str) -> tuple[str, dict[str, int]]:
    """The page with every rewrite applied, and how many times each one applied."""
    counts = {}
    for fix in A11Y_REWRITES:
        text, n = fix.pattern.subn(fix.replace, text)
        counts[fix.why] = n
    return text, counts


def _rewrite_pages(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    for page in out.rglob("*.html"):
        if {"_static", "_sources"} & set(page.relative_to(out).parts):
            continue
        text = page.read_text(encoding="utf-8")
        fixed, _counts = rewrite_page(text)
        if fixed != text:
            page.write_text(fixed, encoding="utf-8")


def setup(app):
    app.connect("config-inited", _default_mode)
    # After the other extensions have added their per-page assets.
    app.connect("html-page-context", _page_assets, priority=900)
    app.connect("html-page-context", _paired_notebook, priority=900)
    app.connect("build-finished", _rewrite_pages)
    app.connect("build-finished", _serve_paired_notebooks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
