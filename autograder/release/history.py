"""The release history: every stamp an assignment has been released with, and what changed.

``make release`` adds an entry to ``history.json`` (committed next to this module) whenever an
assignment's stamp is new: the stamp's label, the date, the test cells it grades and a one-line
summary of what changed from the entry before it (test cells added or removed). The grader looks a
stale submission's stamp up here to say which release it was made from and what has changed since,
instead of silently scoring it against checks it was never given.
"""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path

from .. import nb
from ..course import source_notebook

HISTORY = Path(__file__).with_name("history.json")


def load(path: Path | None = None) -> dict:
    """assignment -> list of entries, oldest first ({} when there is no history yet)."""
    try:
        return json.loads((path or HISTORY).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}


def _changes(old: dict, new: dict) -> str:
    """What changed between two entries' graded functions and test cells, in one line."""
    parts = []
    for key, what in (("functions", "functions"), ("tests", "test cells")):
        before, after = old.get(key, []), new.get(key, [])
        added = [g for g in after if g not in before]
        removed = [g for g in before if g not in after]
        if added:
            parts.append(f"{what} added: " + ", ".join(added))
        if removed:
            parts.append(f"{what} removed: " + ", ".join(removed))
    return "; ".join(parts) or "same functions and test cells, other changes to the notebook"


def entry(assignment: str, date: str | None = None, previous: dict | None = None) -> dict:
    """The history entry for the current source notebook of an assignment."""
    notebook = nb.read(source_notebook(assignment))
    new = {
        "stamp": nb.stamp_label(nb.release_stamp(assignment)),
        "date": date or _dt.date.today().isoformat(),
        "functions": [nb.grade_id(c) for c in nb.solution_cells(notebook)],
        "tests": list(nb.test_cells(notebook)),
    }
    new["summary"] = "first recorded release" if previous is None else _changes(previous, new)
    return new


def record(assignments: list[str], path: Path | None = None, date: str | None = None) -> list[str]:
    """Add the current stamp of each assignment unless it is there already; returns the labels
    added. The file is rewritten only when something was added (sorted keys, stable bytes)."""
    history = load(path)
    added = []
    for a in assignments:
        entries = history.setdefault(a, [])
        new = entry(a, date, entries[-1] if entries else None)
        if all(e["stamp"] != new["stamp"] for e in entries):
            entries.append(new)
            added.append(f"{a}: {new['stamp']}")
    if added:
        (path or HISTORY).write_text(
            json.dumps(history, indent=1, sort_keys=True) + "\n", encoding="utf-8"
        )
    return added


def describe(assignment: str, label: str, current: dict, path: Path | None = None) -> str:
    """One note for a submission made from release ``label`` of an assignment; ``current`` holds
    the current notebook's "functions" and "tests" (grade_ids)."""
    for e in load(path).get(assignment, []):
        if e["stamp"] == label:
            return (
                f"made from release {label} of {assignment} ({e['date']}), not the current one; "
                f"what changed since: {_changes(e, current)}. It is graded against the "
                "current checks: download the current notebook and move your answers over."
            )
    return (
        f"made from a release of {assignment} that this course never recorded ({label}); it is "
        "graded against the current checks"
    )
