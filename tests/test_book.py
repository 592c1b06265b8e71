"""The website: it builds with warnings as errors, and nothing secret reaches it."""

import html

import pytest

from autograder.paths import assignments

from .test_release import PUBLIC_TOO, SECRET_MARKERS, secret_lines

TEXT_SUFFIXES = {".html", ".txt", ".md", ".ipynb", ".py", ".js", ".json", ".ipynb.txt"}


def _site_texts(site):
    for path in site.rglob("*"):
        if path.is_file() and (path.suffix in TEXT_SUFFIXES or path.name.endswith(".txt")):
            yield path, path.read_text(encoding="utf-8", errors="replace")


def test_every_chapter_and_exercise_page_is_built(built_site):
    assert (built_site / "index.html").exists()
    for a in assignments():
        assert (built_site / "book" / f"{a}.html").exists(), f"chapter page for {a} missing"
        assert (built_site / "exercises" / a / f"{a}.html").exists(), f"exercise page for {a} missing"


def test_no_solution_or_hidden_test_line_reaches_the_site(built_site):
    """HTML, _sources and downloadable notebooks hold no line of a solution or hidden test."""
    secrets = {line: a for line, a in secret_lines().items() if line not in PUBLIC_TOO}
    assert secrets, "expected solution lines to look for"
    checked = 0
    for path, text in _site_texts(built_site):
        if path.parts[-2:] and "_static" in path.parts:
            continue  # theme assets
        checked += 1
        unescaped = html.unescape(text)
        for marker in SECRET_MARKERS:
            assert marker not in unescaped, f"{marker} in {path}"
        for line, a in secrets.items():
            assert line not in unescaped, f"a line of the {a} solution is in {path}: {line!r}"
    assert checked > 10


@pytest.mark.parametrize("assignment", assignments())
def test_exercise_page_offers_the_notebook_download(built_site, assignment):
    page = (built_site / "exercises" / assignment / f"{assignment}.html").read_text(encoding="utf-8")
    assert f"{assignment}.ipynb" in page, "the download button should offer the .ipynb"
