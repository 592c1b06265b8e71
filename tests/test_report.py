"""`make report` (issue 26): the class report after `make demo`, opened offline in chromium; its
links checked against the built site; similarity flags planted copies, not independent answers.

One `make demo` + `make report` for the module (27 notebooks, about 45 s on 2 cores)."""

from __future__ import annotations

import csv
import importlib
import os
import re
import subprocess
from itertools import combinations
from pathlib import Path

import pytest

from autograder import nb, samples
from autograder.course import ROOT, assignments, release_notebook
from autograder.report import sections, similarity
from autograder.samples.copies import disguise

from .browser import harness

pytestmark = pytest.mark.slow


def _rows(path: Path) -> list[dict]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> tuple[Path, str, str]:
    """(grading folder, make demo's output, make report's output)."""
    folder = tmp_path_factory.mktemp("report") / "grading-demo"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    runs = []
    for target in ("demo", "report"):
        proc = subprocess.run(
            ["make", "-s", target, f"GRADING={folder}"], cwd=ROOT, env=env,
            capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        runs.append(proc.stdout)
    return folder, runs[0], runs[1]


def test_grade_only_prints_where_the_report_will_be(demo):
    folder, grade_out, report_out = demo
    assert f"make report GRADING={folder}" in grade_out
    assert str(folder / "report" / "index.html") in grade_out
    assert f"class report: {folder / 'report' / 'index.html'}" in report_out


def _mistakes_made(folder: Path) -> dict[str, set[str]]:
    made: dict[str, set[str]] = {}
    for r in _rows(folder / "test_report.csv"):
        for m in filter(None, r["mistake"].split(";")):
            made.setdefault(r["assignment"], set()).add(m)
    return made


def test_every_mistake_the_demo_made_is_ranked(demo):
    folder = demo[0]
    ranked: dict[str, list[dict]] = {}
    for r in _rows(folder / "report" / "mistakes.csv"):
        ranked.setdefault(r["assignment"], []).append(r)
    made = _mistakes_made(folder)
    assert set(made) == set(assignments())
    for a, ids in made.items():
        assert ids <= {r["mistake"] for r in ranked[a]}, a
        counts = [int(r["students"]) for r in ranked[a] if not r["mistake"].startswith("(")]
        assert counts == sorted(counts, reverse=True), a
        demo_id = samples.module(a).MISTAKES[samples.module(a).DEMO_MISTAKE].id
        assert demo_id in ids, (a, demo_id)


def test_the_page_opens_offline_with_a_figure_per_assignment(demo):
    folder = demo[0]
    page_url = (folder / "report" / "index.html").as_uri()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = harness.launch(pw)
        try:
            context = browser.new_context(offline=True)
            blocked: list[str] = []
            harness.block_all_but(context, page_url, blocked)
            page = context.new_page()
            page.goto(page_url)
            found = page.evaluate(
                """() => [...document.querySelectorAll('section.assignment')].map(s => ({
                  id: s.id, bars: s.querySelectorAll('svg.hist rect.bar').length,
                  drawn: [...s.querySelectorAll('svg.hist rect.bar')].filter(r => r.getBBox().height > 0).length,
                  mistakes: [...s.querySelectorAll('td code')].map(c => c.textContent)}))"""
            )
        finally:
            browser.close()
    assert not blocked, blocked
    assert [s["id"] for s in found] == assignments()
    made = _mistakes_made(folder)
    for s in found:
        assert s["bars"] >= 2 and s["drawn"] >= 2, s  # three demo students: at least two scores
        assert made[s["id"]] <= set(s["mistakes"]), s["id"]


def test_the_page_says_a_flag_is_not_a_verdict_and_fetches_nothing(demo):
    text = (demo[0] / "report" / "index.html").read_text(encoding="utf-8")
    assert "a reason to look, not a verdict" in text
    assert not re.search(r"<script|<link|src=['\"]?https?:", text)
    header = (demo[0] / "report" / "similarity.csv").read_text(encoding="utf-8").splitlines()[0]
    assert header == "assignment,student_a,student_b,similarity,flagged"


def _links() -> set[str]:
    """Every section a mistake can link to: each answer cell's, each mistake's own."""
    out = set()
    for a in assignments():
        chapter = importlib.import_module(f"autograder.checks.public.ch{a[:2]}")
        for f in samples.answer_cell_ids(a):
            assert sections.section(a, f), f"{a}/{f}: no section teaches it"
            out |= {sections.section(a, f, m.name) for m in chapter.MISTAKES}
            out.add(sections.section(a, f))
    return out


def test_every_mistake_link_names_a_section_of_the_built_site(built_site, demo):
    links = _links() | {
        r["section"] for r in _rows(demo[0] / "report" / "mistakes.csv") if r["section"]
    }
    catalogue = set()
    for a in assignments():
        catalogue |= {
            m.name for m in importlib.import_module(f"autograder.checks.public.ch{a[:2]}").MISTAKES
        }
    assert set(sections.MISTAKES) <= catalogue, set(sections.MISTAKES) - catalogue
    for link in sorted(links):
        page, _, anchor = link.partition("#")
        html = built_site / page
        assert html.is_file(), link
        assert f'id="{anchor}"' in html.read_text(encoding="utf-8"), link


def _given(a: str) -> list[int]:
    rel = nb.read(release_notebook(a))
    return similarity.boilerplate([nb.source(c) for c in rel["cells"] if not nb.is_test(c)])


def _alternatives() -> list[tuple[str, str, dict[str, str]]]:
    """(assignment, function, name -> answer) from the reference and the samples' alternatives."""
    out = []
    for a in assignments():
        alts = samples.module(a).ALTERNATIVES
        for f, ref in samples.reference_sources(a).items():
            texts = {"reference": ref, **{n: alt[f] for n, alt in alts.items() if f in alt}}
            out.append((a, f, texts))
    return out


@pytest.fixture(scope="module")
def measured():
    """similarity of every pair of independent answers and of every answer with its planted copy."""
    indep, copies, short, variant_pairs = [], [], [], []
    for a, f, texts in _alternatives():
        given = _given(a)
        prints, sh = similarity.fingerprints({k: {f: v} for k, v in texts.items()}, given)
        short += [(a, f, k) for k in sh]
        variants = getattr(samples.module(a), "VARIANTS", {})
        for x, y in combinations(sorted(prints), 2):
            pair = (similarity.similarity(prints[x], prints[y])[0], a, f, x, y)
            edited = variants.get(x) == y or variants.get(y) == x
            (variant_pairs if edited else indep).append(pair)
        for i, x in enumerate(sorted(prints)):
            cp, _ = similarity.fingerprints({"copy": {f: disguise(texts[x], i)}}, given)
            copies.append((similarity.similarity(prints[x], cp["copy"])[0], a, f, x))
    print(f"\nindependent pairs: {len(indep)}, highest {max(indep)[0]:.2f}; planted copies: "
          f"{len(copies)}, lowest {min(copies)[0]:.2f}; threshold {similarity.THRESHOLD}; "
          f"too short to judge: {len(short)}")  # fmt: skip
    return indep, copies, short, variant_pairs


def test_planted_copies_are_flagged(measured):
    missed = [c for c in measured[1] if c[0] < similarity.THRESHOLD]
    assert len(measured[1]) >= 60 and not missed, missed


def test_independent_correct_answers_are_not_flagged(measured):
    flagged = [p for p in measured[0] if p[0] >= similarity.THRESHOLD]
    assert len(measured[0]) >= 100 and not flagged, flagged


def test_an_alternative_edited_from_another_is_flagged(measured):
    """A sample written as a one-line edit of another (samples' VARIANTS) is no independent
    answer: the report must flag the pair as it flags a copy."""
    missed = [p for p in measured[3] if p[0] < similarity.THRESHOLD]
    assert measured[3] and not missed, missed


def test_a_disguised_copy_still_parses_and_differs():
    a, f, texts = _alternatives()[2]
    for text in texts.values():
        d = disguise(text, 3)
        compile(d, "copy", "exec")
        assert d != text


def test_the_stub_is_too_short_to_judge_not_scored():
    for a in assignments():
        rel = nb.read(release_notebook(a))
        stubs = {nb.grade_id(c): nb.source(c) for c in rel["cells"] if nb.is_solution(c)}
        prints, short = similarity.fingerprints({"stub": stubs}, _given(a))
        assert not prints and sorted(short["stub"]) == sorted(stubs), a


def test_a_large_class_shows_the_most_similar_flagged_pairs_and_counts_the_rest():
    from autograder.report import page

    n = page.SIDE_BY_SIDE + 7
    texts = {f"s{i:03d}": {"f": f"def f(x):\n    return x + {i}\n"} for i in range(n + 1)}
    pairs = [similarity.Pair(f"s{i:03d}", f"s{i + 1:03d}", 1 - i / 1000, ["f"]) for i in range(n)]
    html = page._pairs("01_one_hot_lookup", (pairs, {}, texts))
    assert html.count("class='side'") == page.SIDE_BY_SIDE
    assert f"{n} pair(s) compared, {n} at or above" in html
    assert "7 more flagged pair(s), at most as similar as those above, are not shown" in html
    assert f"s{page.SIDE_BY_SIDE - 1:03d} and s{page.SIDE_BY_SIDE:03d}" in html
    assert f"s{page.SIDE_BY_SIDE:03d} and s{page.SIDE_BY_SIDE + 1:03d}" not in html
