"""The points table of ``TEACHING.md`` (the instructor's quick start): each assignment's title,
maximum and test cells, read from its released notebook, written between two marker lines by
``make release``; ``tests/test_release.py`` fails when the committed table drifts."""

from __future__ import annotations

from pathlib import Path

from .. import nb
from ..course import ROOT, assignments, release_notebook

PAGE = ROOT / "TEACHING.md"
BEGIN = "<!-- points table: written by `make release` from exercises/, do not edit -->"
END = "<!-- end of the points table -->"


def title(notebook: dict, fallback: str) -> str:
    """The notebook's first level-1 heading ("Exercise 4: bags of ids")."""
    for cell in notebook["cells"]:
        if cell.get("cell_type") == "markdown":
            for line in nb.source(cell).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return fallback


def table(names: list[str] | None = None) -> str:
    """The markdown table, one row per assignment (points summed over its test cells)."""
    rows = [
        "| Assignment | Exercise | Points | Test cells |",
        "| --- | --- | ---: | ---: |",
    ]
    for a in names or assignments():
        notebook = nb.read(release_notebook(a))
        points = nb.points(notebook)
        total = sum(points.values())
        shown = f"{total:g}"
        rows.append(f"| `{a}` | {title(notebook, a)} | {shown} | {len(points)} |")
    return "\n".join(rows) + "\n"


def rewrite(text: str, new_table: str) -> str:
    """``text`` with the part between the markers replaced by ``new_table``."""
    head, sep, rest = text.partition(BEGIN + "\n")
    _, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        raise ValueError(f"{PAGE.name} lacks the points table's marker lines")
    return head + sep + new_table + sep2 + tail


def update(page: Path = PAGE) -> bool:
    """Rewrite the page's table from the released notebooks; True when it changed."""
    old = page.read_text(encoding="utf-8")
    new = rewrite(old, table())
    if new != old:
        page.write_text(new, encoding="utf-8")
    return new != old
