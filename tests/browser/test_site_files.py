"""The built website's files: everything it loads is its own (MathJax included, pinned and
checksummed), every internal link resolves, and the plots read on a dark background too.

No browser here (test_site.py opens the pages); these read _build/html as built once per session.
"""

from __future__ import annotations

import hashlib
import html.parser
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from . import harness

VENDOR = harness.ROOT / "book" / "_vendor" / "mathjax"
MATHJAX_VERSION = "3.2.2"
# Elements and attributes through which a page loads something (as opposed to linking to it).
LOADS = {
    ("script", "src"),
    ("img", "src"),
    ("iframe", "src"),
    ("source", "src"),
    ("video", "src"),
    ("audio", "src"),
    ("embed", "src"),
    ("object", "data"),
}
LOADING_RELS = {
    "stylesheet",
    "preload",
    "modulepreload",
    "icon",
    "shortcut",
    "manifest",
    "prefetch",
}


class _Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[tuple[str, str, str]] = []  # (tag, attribute, url)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("id", "name"):
            if a.get(key):
                self.ids.add(a[key])
        for attr in ("href", "src", "data"):
            if a.get(attr) is not None:
                kind = tag
                if tag == "link":
                    rels = set((a.get("rel") or "").lower().split())
                    kind = "link-load" if rels & LOADING_RELS else "link"
                self.links.append((kind, attr, a[attr]))


@pytest.fixture(scope="module")
def parsed(built_site) -> dict[str, _Page]:
    pages = {}
    for rel in harness.page_files(built_site):
        p = _Page()
        p.feed((built_site / rel).read_text(encoding="utf-8"))
        pages[rel] = p
    return pages


def _external(url: str) -> bool:
    return url.startswith(("http://", "https://", "//"))


def test_vendored_mathjax_matches_its_checksums():
    sums = (VENDOR / "SHA256SUMS").read_text(encoding="utf-8").split("\n")
    listed = {}
    for line in filter(None, sums):
        digest, name = line.split(maxsplit=1)
        listed[name.removeprefix("./")] = digest
    on_disk = {p.relative_to(VENDOR).as_posix() for p in VENDOR.rglob("*") if p.is_file()} - {
        "SHA256SUMS"
    }
    assert set(listed) == on_disk, "book/_vendor/mathjax changed: run `make vendor-mathjax`"
    for name, digest in listed.items():
        assert hashlib.sha256((VENDOR / name).read_bytes()).hexdigest() == digest, name
    assert f"mathjax {MATHJAX_VERSION} " in (VENDOR / "VERSION").read_text(encoding="utf-8")
    makefile = (harness.ROOT / "Makefile").read_text(encoding="utf-8")
    assert f"MATHJAX_VERSION := {MATHJAX_VERSION}" in makefile
    fonts = list((VENDOR / "output/chtml/fonts/woff-v2").glob("*.woff"))
    assert len(fonts) >= 20, "MathJax's CHTML fonts must be served by the site too"


def test_pages_with_math_load_the_sites_own_mathjax_once(built_site, parsed):
    shipped = (VENDOR / "tex-chtml-full.js").read_bytes()
    assert (built_site / "_static/mathjax/tex-chtml-full.js").read_bytes() == shipped
    with_math = 0
    for rel, page in parsed.items():
        scripts = [u for tag, _a, u in page.links if tag == "script" and "mathjax" in u.lower()]
        text = (built_site / rel).read_text(encoding="utf-8")
        if 'class="math' in text:
            with_math += 1
            assert len(scripts) == 1, f"{rel}: MathJax scripts {scripts}"
        for u in scripts:
            assert urlsplit(u).path.endswith("_static/mathjax/tex-chtml-full.js"), (rel, u)
    assert with_math, "no page has math?"


def test_no_page_loads_anything_from_another_site(parsed):
    """Scripts, styles, fonts, images and frames all come from the site (links may leave it)."""
    bad = {
        rel: [u for tag, attr, u in page.links if _external(u) and (tag, attr) in LOADS]
        + [u for tag, _a, u in page.links if tag == "link-load" and _external(u)]
        for rel, page in parsed.items()
    }
    bad = {k: v for k, v in bad.items() if v}
    assert not bad, bad


def test_no_stylesheet_loads_anything_from_another_site(built_site):
    """CSS `url(...)`/`@import` to another site (a web font, say) would fail offline."""
    pattern = re.compile(r"""(?:url\(\s*['"]?|@import\s+['"])\s*((?:https?:)?//[^'")\s]+)""")
    bad = {}
    for css in built_site.rglob("*.css"):
        found = pattern.findall(css.read_text(encoding="utf-8", errors="replace"))
        found = [u for u in found if not u.startswith("http://www.w3.org/")]
        if found:
            bad[css.relative_to(built_site).as_posix()] = found
    assert not bad, bad


def test_every_internal_link_resolves(built_site, parsed):
    """Every relative href/src in every page points to a file of the site, and every #anchor
    into a page to an id on it (Sphinx's linkcheck only checks external links)."""
    bad = []
    checked = 0
    for rel, page in parsed.items():
        for _tag, _attr, url in page.links:
            parts = urlsplit(url)
            if parts.scheme or url.startswith("//") or not url.strip():
                continue  # another site, mailto:, javascript:, data: ...
            if not parts.path:  # "#anchor" on the same page
                target_rel = rel
            else:
                target = (built_site / rel).parent / unquote(parts.path)
                target = Path(*target.parts).resolve()
                if target.is_dir():
                    target = target / "index.html"
                if not target.is_file():
                    bad.append(f"{rel}: {url} (no such file)")
                    continue
                try:
                    target_rel = target.relative_to(built_site.resolve()).as_posix()
                except ValueError:
                    bad.append(f"{rel}: {url} (outside the site)")
                    continue
            checked += 1
            frag = unquote(parts.fragment)
            if frag and target_rel in parsed and frag not in parsed[target_rel].ids:
                bad.append(f"{rel}: {url} (no id {frag!r} on {target_rel})")
    assert not bad, "\n".join(bad)
    assert checked > 50


def test_plots_are_opaque_so_they_read_in_dark_mode(built_site):
    """A plot saved with a transparent background puts black text on the dark theme's black:
    every figure image must have an opaque background (matplotlib's default, kept by
    book/matplotlibrc)."""
    import matplotlib.image as mpimg

    bad = []
    images = sorted((built_site / "_images").glob("*.png"))
    for png in images:
        a = mpimg.imread(png)
        if a.ndim == 3 and a.shape[2] == 4:
            alpha = a[..., 3]
            border = [alpha[:3].min(), alpha[-3:].min(), alpha[:, :3].min(), alpha[:, -3:].min()]
            if min(border) < 0.99 or (alpha < 0.99).mean() > 0.01:
                bad.append(png.name)
    assert not bad, f"transparent plots (unreadable in dark mode): {bad}"


def test_pages_workflow_deploys_only_the_built_site():
    """.github/workflows/pages.yml builds with -W and uploads _build/html alone; the copy shown
    on the "Running this course" page is the same file."""
    import yaml

    path = harness.ROOT / ".github" / "workflows" / "pages.yml"
    text = path.read_text(encoding="utf-8")
    wf = yaml.safe_load(text)
    steps = wf["jobs"]["build"]["steps"]
    runs = " ".join(s.get("run", "") for s in steps)
    assert "jupyter-book build . --builder html -W" in runs
    uploads = [s for s in steps if s.get("uses", "").startswith("actions/upload-pages-artifact")]
    assert len(uploads) == 1 and uploads[0]["with"]["path"] == "_build/html"
    deploy = wf["jobs"]["deploy"]["steps"]
    assert any(s.get("uses", "").startswith("actions/deploy-pages") for s in deploy)
    assert wf["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    page = (harness.ROOT / "book" / "running.md").read_text(encoding="utf-8")
    assert "```yaml\n" + text + "```\n" in page, "book/running.md shows an outdated workflow"


# Cited works with no DOI, no URL and no arXiv id anywhere (verified when the links were added).
NO_LINK = {"zipf1949human": "Zipf's 1949 book: no DOI, no online edition by its publisher"}


def _bibliography():
    from pybtex.database import parse_file

    return parse_file(str(harness.ROOT / "book" / "references.bib")).entries


def test_every_reference_links_to_the_work():
    """Each entry of book/references.bib has a DOI, an arXiv id or a URL, unless NO_LINK says
    why it cannot; and no field holds a TeX command that pybtex would print raw (pybtex reads
    braces, accents and escapes such as \\_ and \\&, not commands like \\texttt or \\url)."""
    entries = _bibliography()
    missing = sorted(
        k
        for k, e in entries.items()
        if not {"doi", "eprint", "url"} & {f.lower() for f in e.fields}
    )
    assert missing == sorted(NO_LINK), f"entries without a DOI, arXiv id or URL: {missing}"
    commands = {
        k: [f for f, v in e.fields.items() if re.search(r"\\[A-Za-z]{2,}", v)]
        for k, e in entries.items()
    }
    commands = {k: v for k, v in commands.items() if v}
    assert not commands, f"TeX commands in these fields (pybtex prints them raw): {commands}"


def test_references_page_shows_every_entry_without_raw_tex(built_site):
    """The rendered list: one list item per entry, no backslash in its text, and a link (DOI,
    arXiv or URL) in every entry but those of NO_LINK."""
    text = (built_site / "book" / "references.html").read_text(encoding="utf-8")
    items = re.findall(r'<div class="citation" id="[^"]*" role="listitem">(.*?)</div>', text, re.S)
    assert len(items) == len(_bibliography()), "every entry is a list item (role=listitem)"
    plain = [html.unescape(re.sub(r"<[^>]+>", "", item)) for item in items]
    raw = [p for p in plain if "\\" in p]
    assert not raw, f"raw TeX on the references page: {raw}"
    unlinked = [
        p.split("]", 1)[-1].strip()[:60]
        for p, i in zip(plain, items, strict=True)
        if "<a " not in i
    ]
    assert len(unlinked) == len(NO_LINK), f"entries shown without a link: {unlinked}"
