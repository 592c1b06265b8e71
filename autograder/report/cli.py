"""`make report`: python -m autograder.report [--grading-dir DIR] [--site URL]

Exit status 0 when the report was written, 2 when there is nothing to report on (run
`make grade` first) or a grading result cannot be read."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..course import GRADING, ROOT
from . import answers, page, tables
from .data import ReportError, load, summarise

SITE = (ROOT / "_build" / "html").as_uri() + "/"


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--grading-dir", type=Path, default=GRADING, help="default grading/")
    p.add_argument(
        "--site", default=SITE, help=f"the website the mistakes link to (default {SITE})"
    )
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    grading_dir = args.grading_dir.resolve()
    try:
        summaries = [summarise(d) for d in load(grading_dir)]
    except ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    site = args.site if args.site.endswith("/") else args.site + "/"
    sims = {a.name: answers.compare(grading_dir, a.name, sorted(a.scores)) for a in summaries}
    out = grading_dir / "report"
    out.mkdir(parents=True, exist_ok=True)
    csvs = tables.write_all(out, summaries, sims)
    html = out / "index.html"
    html.write_text(page.render(summaries, sims, site, [p.name for p in csvs]), encoding="utf-8")
    flagged = sum(p.flagged for ps, _, _ in sims.values() for p in ps)
    print(f"class report: {html}")
    print(f"tables:       {', '.join(str(p) for p in csvs)}")
    print(
        f"{len(summaries)} assignment(s); {flagged} pair(s) of similar answers flagged (a reason to look, not a verdict)"
    )
    return 0
