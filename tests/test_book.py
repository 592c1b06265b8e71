"""The website: it builds with warnings as errors, and nothing secret reaches it."""

import pytest

from autograder.course import assignments

from .leaks import find_leaks, secret_pairs


def test_every_chapter_and_exercise_page_is_built(built_site):
    assert (built_site / "index.html").exists()
    for a in assignments():
        assert (built_site / "book" / f"{a}.html").exists(), f"chapter page for {a} missing"
        assert (built_site / "exercises" / a / f"{a}.html").exists(), (
            f"exercise page for {a} missing"
        )


def test_no_solution_or_hidden_test_reaches_the_site(built_site):
    """HTML, _sources and downloadable notebooks hold no run of solution or hidden-test lines."""
    files = [p for p in built_site.rglob("*") if "_static" not in p.parts]
    assert len(files) > 50
    leaks = find_leaks(files)
    assert not leaks, "\n".join(leaks[:10])


def test_the_leak_finder_finds_a_pasted_solution(tmp_path):
    """The check above can fail: a page holding a reference answer is caught."""
    pair = next(iter(secret_pairs()))
    page = tmp_path / "page.html"
    page.write_text("<pre><span>" + pair.replace("\n", "</span>\n   <span>") + "</span></pre>")
    assert find_leaks([page])


def test_the_leak_finder_sees_through_comments_and_spacing(tmp_path):
    """A solution pasted with its comments changed and its spacing altered is caught too."""
    pair = next(p for p in secret_pairs() if "\n" in p and " " in p.split("\n")[0])
    first, second = pair.split("\n")
    page = tmp_path / "page.md"
    page.write_text("    " + first.replace(" ", "   ", 1) + "   # my own note\n" + second + "\n")
    assert find_leaks([page])


@pytest.mark.parametrize("assignment", assignments())
def test_exercise_page_offers_the_notebook_download(built_site, assignment):
    page = (built_site / "exercises" / assignment / f"{assignment}.html").read_text(
        encoding="utf-8"
    )
    assert f"{assignment}.ipynb" in page, "the download button should offer the .ipynb"
