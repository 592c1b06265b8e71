"""index.html: one page, self-contained (inline CSS and SVG, no script, nothing fetched)."""

from __future__ import annotations

from html import escape

from . import similarity
from .figures import score_svg

CSS = """
body{font-family:system-ui,sans-serif;max-width:72rem;margin:1rem auto;padding:0 1rem;color:#1a1a1a}
table{border-collapse:collapse;margin:.5rem 0 1rem}td,th{border:1px solid #bbb;padding:.2rem .5rem;
text-align:left;vertical-align:top}th{background:#eee}.num{text-align:right}
.hist{max-width:36rem;width:100%}.hist .bar{fill:#2b6cb0}.hist .grid{stroke:#ddd}.hist text{font-size:12px}
.note{background:#fff8dc;border-left:4px solid #c90;padding:.5rem 1rem}
.side{display:grid;grid-template-columns:1fr 1fr;gap:1rem}pre{background:#f6f6f6;padding:.5rem;
overflow-x:auto;font-size:.8rem}section.assignment{border-top:2px solid #444;margin-top:2rem}
"""
SIDE_BY_SIDE = 50  # flagged pairs shown with their code, per assignment (a class of 200 flags
# thousands where students hand in the same code: the page stays readable; the CSV has them all)
NOTE = (
    "A flag is a reason to look, not a verdict: similar code can be written independently "
    "(the exercises are short and the course teaches one idiom), and code that is not flagged "
    "can still be copied. Read the two answers side by side before you talk to anyone."
)


def _table(header: list[str], rows: list[list[str]], num: set[int] = frozenset()) -> str:
    if not rows:
        return "<p>None.</p>"
    head = "".join(f"<th scope='col'>{escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td{' class=num' if i in num else ''}>{c}</td>" for i, c in enumerate(r)) + "</tr>"
        for r in rows
    )  # fmt: skip
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _mistakes(a, site: str) -> str:
    rows = []
    for i, m in enumerate(a.mistakes, 1):
        link = f"<a href='{escape(site + m.link)}'>{escape(m.link)}</a>" if m.link else "—"
        rows.append([str(i), f"<code>{escape(m.mistake)}</code>", str(m.students),
                     escape(", ".join(m.tests)), escape(m.example), link])  # fmt: skip
    return _table(
        ["rank", "mistake", "students", "tests", "what a student read", "the fix is taught in"],
        rows,
        {0, 2},
    )


def _runs(a) -> str:
    rows = [[escape(r["finished"]), str(r["notebooks"]), f"{r['worker_seconds']:.1f}",
             f"{r['wall_s']:.1f}", str(r["workers"])] for r in a.runs]  # fmt: skip
    return _table(
        [
            "run finished",
            "notebooks of this assignment",
            "worker seconds",
            "run wall seconds (all assignments)",
            "workers",
        ],
        rows,
        {1, 2, 3, 4},
    )


def _pairs(assignment: str, sim) -> str:
    pairs, short, texts = sim
    flagged = [p for p in pairs if p.flagged]
    parts = [f"<h3>Similar answers</h3><p>{len(pairs)} pair(s) compared, {len(flagged)} at or "
             f"above {similarity.THRESHOLD:.2f}.</p>"]  # fmt: skip
    for p in flagged[:SIDE_BY_SIDE]:
        cols = "".join(
            f"<div><h4>{escape(s)}</h4><pre>{escape(chr(10).join(texts[s][f] for f in p.functions))}</pre></div>"
            for s in (p.student_a, p.student_b)
        )
        parts.append(f"<h4>{escape(p.student_a)} and {escape(p.student_b)}: similarity "
                     f"{p.similarity:.2f}</h4><div class='side'>{cols}</div>")  # fmt: skip
    if len(flagged) > SIDE_BY_SIDE:
        parts.append(f"<p>{len(flagged) - SIDE_BY_SIDE} more flagged pair(s), at most as similar "
                     "as those above, are not shown: similarity.csv lists every pair.</p>")  # fmt: skip
    if short:
        rows = [[escape(s), escape(", ".join(fs))] for s, fs in sorted(short.items())]
        parts.append(
            "<p>Too short to judge (listed, not scored):</p>"
            + _table(["student", "answer cells"], rows)
        )
    return "".join(parts)


def _assignment(a, site: str, sim) -> str:
    c = a.counts
    tests = [
        [escape(g), escape(f), f"{p:g}", f"{n}/{j}", f"{100 * n / j:.0f}%" if j else "—"]
        for g, f, p, n, j in a.tests
    ]
    stale = [[escape(s), escape(r)] for s, r in a.stale]
    late = [[escape(s), escape(t)] for s, t in a.late]
    bad = [[escape(s), escape(st), escape(w)] for s, st, w in a.ungradable]
    return (
        f"<section class='assignment' id='{escape(a.name)}'><h2>{escape(a.name)}</h2>"
        f"<p>{c['submissions']} submission(s): {c['graded']} graded, {c['bad']} could not be graded, "
        f"{c['error']} grading failed. Mean {c['mean']:.2f}, median {c['median']:g} of {a.max_score:g}; "
        f"{c['full']} full, {c['zero']} zero.</p>"
        f"<figure>{score_svg(a.name + ' scores', list(a.scores.values()), a.max_score)}"
        f"<figcaption>Score distribution, {a.name}</figcaption></figure>"
        f"<h3>Tests: pass rate</h3>{_table(['test', 'answer cell', 'points', 'passed', 'rate'], tests, {2, 3, 4})}"
        f"<h3>Mistakes, most students first</h3>{_mistakes(a, site)}"
        f"<h3>Stale submissions (another release)</h3>{_table(['student', 'release'], stale)}"
        f"<h3>Late submissions</h3>{_table(['student', 'late'], late)}"
        f"<h3>Could not be graded</h3>{_table(['student', 'status', 'why'], bad)}"
        f"<h3>Grading time</h3>{_runs(a)}{_pairs(a.name, sim)}</section>"
    )  # fmt: skip


def render(summaries: list, sims: dict, site: str, csvs: list[str]) -> str:
    toc = "".join(f"<li><a href='#{escape(a.name)}'>{escape(a.name)}</a></li>" for a in summaries)
    files = ", ".join(f"<a href='{escape(n)}'>{escape(n)}</a>" for n in csvs)
    body = "".join(_assignment(a, site, sims[a.name]) for a in summaries)
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>Class report</title><style>{CSS}</style></head><body><main><h1>Class report</h1>"
        f"<p class='note'>{escape(NOTE)}</p><p>The same numbers as CSV: {files}.</p>"
        f"<nav aria-label='assignments'><ul>{toc}</ul></nav>{body}</main></body></html>"
    )
