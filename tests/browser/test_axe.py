"""Accessibility: axe-core's WCAG 2.1 A and AA rules on every page of the built site, in light
and in dark mode, in Debian's chromium with every request but the local server's blocked.

axe-core is the pinned npm release (tests/browser/axe.py: `npm pack`, SHA-256 checked), injected
into each page after it has loaded and MathJax has typeset it. All of axe's rules tagged
wcag2a, wcag2aa, wcag21a and wcag21aa run (none disabled, the whole document), colour contrast
included: a critical or serious violation fails, listed by page, mode, rule and element. The
fixes of the theme's markup are in book/_ext/course_site.py (`A11Y_REWRITES`).
"""

from __future__ import annotations

import json
import tarfile
import time

import pytest

from . import axe, harness
from .collect import redirect_target

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def axe_results(built_site) -> dict:
    harness.chromium_path()  # fails loudly, with the install command, when it is missing
    start = time.perf_counter()
    results = axe.check_site(built_site)
    summary = axe.counts(results)
    print(
        f"\naxe-core {axe.AXE_VERSION}: {len(results)} page views in "
        f"{time.perf_counter() - start:.0f} s; violating elements by impact: {summary['impact']}"
    )
    return results


@pytest.mark.parametrize("mode", axe.MODES)
def test_no_critical_or_serious_violation(axe_results, mode):
    found = [line for line in axe.failures(axe_results) if f" [{mode}] " in line]
    assert not found, f"{len(found)} critical or serious violations:\n" + "\n".join(found)


def test_every_page_is_checked_in_both_modes(axe_results, built_site):
    """Each page really was in that colour mode when axe ran, and nothing left the server."""
    pages = [p for p in harness.page_files(built_site) if redirect_target(built_site / p) is None]
    assert len(pages) >= 20
    assert set(axe_results) == {(p, m) for p in pages for m in axe.MODES}
    wrong = {k: v["theme"] for k, v in axe_results.items() if v["theme"] != k[1]}
    assert not wrong, f"pages not in the colour mode they were checked in: {wrong}"
    blocked = {k: v["blocked"] for k, v in axe_results.items() if v["blocked"]}
    assert not blocked, f"requests to other sites: {blocked}"


BAD_PAGE = """<!DOCTYPE html><html lang="en"><head><title>t</title></head><body><main>
<h1>A page with three classic faults</h1>
<details><summary><i class="icon"></i></summary><p>hidden</p></details>
<button aria-label="Menu">Search</button>
<p style="color: #aaa; background: #fff">grey on white</p>
</main></body></html>
"""


def test_axe_finds_the_faults_it_must_find(tmp_path):
    """The harness can fail: an unnamed <summary>, a button whose name is not its text and
    low-contrast text are reported (by the same rules that the site's fixes address)."""
    (tmp_path / "bad.html").write_text(BAD_PAGE, encoding="utf-8")
    results = axe.check_site(tmp_path, ["bad.html"], modes=("light",))
    rules = {v["id"] for v in results[("bad.html", "light")]["violations"]}
    assert {"summary-name", "label-content-name-mismatch", "color-contrast"} <= rules, rules
    assert axe.failures(results)


def test_axe_core_is_the_pinned_release():
    """The tarball in the cache is npm's axe-core 4.14.1, byte for byte (its sha256)."""
    with tarfile.open(axe.tarball(), "r:gz") as tar:
        package = json.load(tar.extractfile("package/package.json"))
    assert package["name"] == "axe-core" and package["version"] == axe.AXE_VERSION
