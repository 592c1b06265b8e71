"""The release history: every stamp an assignment has been released with, and what it gave.

``make release`` adds an entry to ``history.json`` (committed next to this module) whenever an
assignment's stamp is new: the stamp's label, the date, the graded functions and test cells, what
the release gave the student part by part (``given``: :func:`autograder.nb.given_parts`) and a
one-line summary of what changed from the entry before it.

The grader looks a submission's stamp up here (:func:`staleness`). A submission from an older
release is *stale* only when what the student was given has changed since (an answer cell's
signature or docstring, the visible tests, a given cell); then its feedback says what changed.
An edit of prose, comments, a test's docstring or label or the hidden tests makes a new release
but no stale submissions. Stamps were always hashes of the source notebook and still are, so the
notebooks students already hold are found here as before.
"""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path

from .. import nb
from ..course import source_notebook

HISTORY = Path(__file__).with_name("history.json")
PARTS = {  # kind -> (changed, added, removed), each said of a list of names
    "answer": ("the signature or docstring of {}", "new functions: {}", "functions removed: {}"),
    "test": ("the visible tests of {}", "new test cells: {}", "test cells removed: {}"),
    "given": ("the given cells {}", "new given cells: {}", "given cells removed: {}"),
}
UNCHANGED = "nothing a student is given (prose, comments, test docstrings or labels, hidden tests)"


def load(path: Path | None = None) -> dict:
    """assignment -> list of entries, oldest first ({} when there is no history yet)."""
    try:
        return json.loads((path or HISTORY).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}


def what_changed(old: dict, new: dict) -> list[str]:
    """What a student was given differently, between two ``given`` records, in words (one
    phrase per kind of part and kind of change, in notebook order)."""
    groups: dict = {}
    for key in [*new, *(k for k in old if k not in new)]:
        kind, _, name = key.partition(":")
        change = (
            1 if key not in old else 2 if key not in new else 0 if old[key] != new[key] else None
        )
        if change is not None:
            groups.setdefault((kind, change), []).append(name)
    return [
        PARTS.get(kind, ("{} changed", "{} added", "{} removed"))[change].format(", ".join(names))
        for (kind, change), names in groups.items()
    ]


def _changes(old: dict, new: dict) -> str:
    """What changed between two entries, in one line."""
    if "given" in old and "given" in new:
        parts = what_changed(old["given"], new["given"])
        return "; ".join(parts) or UNCHANGED
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
        "given": nb.given_parts(notebook),
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


def find(assignment: str, label: str, path: Path | None = None) -> dict | None:
    """The recorded entry of release ``label`` of an assignment, or None."""
    return next((e for e in load(path).get(assignment, []) if e["stamp"] == label), None)


def staleness(assignment: str, stamp, current: dict, path: Path | None = None):
    """(stale, note) for a submission whose notebook carries ``stamp``. ``current``: the current
    release's "stamp" (dict), "given" (:func:`autograder.nb.given_parts` of the source),
    "functions" and "tests" (grade_ids). The note is None for a submission that is not stale."""
    if stamp == current["stamp"]:
        return False, None
    label = nb.stamp_label(stamp)
    old = find(assignment, label, path)
    if old is None:
        return True, (
            f"made from a release of {assignment} that this course never recorded ({label}); "
            "it is graded against the current checks"
        )
    # Compare what was recorded for both releases when the current one is recorded too.
    now = find(assignment, nb.stamp_label(current["stamp"]), path) or current
    if "given" in old and "given" in now and not what_changed(old["given"], now["given"]):
        return False, None
    return True, (
        f"made from release {label} of {assignment} ({old['date']}), not the current one; "
        f"what you were given has changed since: {_changes(old, now)}. It is graded against "
        "the current checks: download the current notebook and move your answers over."
    )
