"""Who hands in what: the class of ``make semester``, decided from the student's and the
assignment's index alone (the same class every run), with the cases a term brings.

Each of the last student's assignments is missing (a student on the roster who never submits);
the others follow ``PATTERN`` (one slot per student and assignment, shifted by five per
assignment, so even six students meet every case): a correct answer (the reference or one of the
samples' ``ALTERNATIVES``), a classic mistake (the samples' ``MISTAKES``), a late submission
(Canvas's late flag), a resubmission (a mistake in the first download, a correct notebook named
``A-1.ipynb`` in the final one), a planted copy of another student's answers
(:func:`autograder.samples.copies.disguise`), a notebook that is not JSON, one stamped with the
assignment's first recorded release (a stale one), the untouched stub, and no submission.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from .. import nb, samples
from ..release import history
from ..samples.copies import disguise

CORRECT, MISTAKE, LATE, RESUBMITTED, COPY = "correct", "mistake", "late", "resubmitted", "copy"
BROKEN, OLDER, STUB, ABSENT, MISSING = "broken", "older release", "stub", "absent", "missing"
PATTERN = [CORRECT, MISTAKE, LATE, RESUBMITTED, COPY, BROKEN, OLDER, STUB, ABSENT, CORRECT]
PATTERN += [MISTAKE, CORRECT, MISTAKE, CORRECT, LATE, CORRECT, MISTAKE, CORRECT, MISTAKE, CORRECT]
BROKEN_BYTES = b'{"cells": [{"cell_type": "code", "source": "def embedding_forward(E, ids):'
FIRST = ["Ada", "Ben", "Chloe", "Dev", "Emma", "Farid", "Grace", "Hugo", "Ines", "Jon", "Kira"]
FIRST += ["Liam", "Mei", "Noah", "Olga", "Pavel", "Quinn", "Rosa", "Sami", "Tara", "Uma"]
LAST = ["Abbott", "Berg", "Costa", "Dubois", "Eze", "Fischer", "Garcia", "Haddad", "Ito"]
LAST += ["Jensen", "Kowalski", "Lopez", "Moreau", "Nakamura", "Okafor", "Petrov", "Quist"]


@dataclass(frozen=True)
class Student:
    index: int
    first: str
    last: str

    @property
    def login(self) -> str:  # the course's id: grading/submitted/<login>/, Canvas's SIS Login ID
        return f"{self.first[0]}{self.last}{self.index + 1:03d}".lower()

    @property
    def canvas_id(self) -> str:
        return str(1001 + self.index)


@dataclass
class Work:
    """One student's work on one assignment: the case, the sample it was built from, and the
    notebook bytes of the first and the final download (None: nothing in that download)."""

    student: Student
    assignment: str
    case: str
    sample: str = ""
    copy_of: str = ""
    first: bytes | None = None
    final: bytes | None = None
    sources: dict | None = None  # the answer cells it holds (None: the stub or nothing)


def students(n: int) -> list[Student]:
    return [
        Student(i, FIRST[i % len(FIRST)], LAST[(i // len(FIRST) + i) % len(LAST)]) for i in range(n)
    ]


def case(i: int, j: int, n: int) -> str:
    return MISSING if i == n - 1 else PATTERN[(i + 5 * j) % len(PATTERN)]


def _correct(a: str, i: int) -> tuple[str, dict]:
    names = ["reference", *samples.module(a).ALTERNATIVES]
    name = names[i % len(names)]
    return name, {} if name == "reference" else samples.module(a).ALTERNATIVES[name]


def _mistake(a: str, i: int) -> tuple[str, dict]:
    mistakes = samples.module(a).MISTAKES
    name = sorted(mistakes)[i % len(mistakes)]
    return name, mistakes[name].sources


def _bytes(a: str, sources: dict | None, stamp: dict | None = None) -> bytes:
    key = tuple(sorted(sources.items())) if sources is not None else None
    return _notebook(a, key, tuple(sorted(stamp.items())) if stamp else None)


@cache
def _notebook(a: str, sources: tuple | None, stamp: tuple | None) -> bytes:
    """A sample's notebook, built once however many students hand it in."""
    notebook = samples.build(a, dict(sources) if sources is not None else None)
    if stamp is not None:
        notebook["metadata"]["course"] = dict(stamp)
    return nb.dumps(notebook).encode()


def first_release(a: str) -> dict:
    """The stamp of the assignment's first recorded release, as a notebook carries it."""
    release, _, sha = history.load()[a][0]["stamp"].partition("+")
    return {"release": release, "source_sha256": sha}


def _work(s: Student, a: str, kind: str) -> Work:
    w = Work(s, a, kind)
    if kind in (CORRECT, OLDER, RESUBMITTED) or (kind == LATE and s.index % 2):
        w.sample, w.sources = _correct(a, s.index)
    elif kind in (MISTAKE, LATE):
        w.sample, w.sources = _mistake(a, s.index)
    if kind == BROKEN:
        w.first = BROKEN_BYTES
    elif kind == STUB:
        w.sample, w.first = "stub", _bytes(a, None)
    elif kind == RESUBMITTED:  # a classic mistake first, then the correct notebook
        w.first = _bytes(a, _mistake(a, s.index)[1])
    elif w.sources is not None:
        w.first = _bytes(a, w.sources, first_release(a) if kind == OLDER else None)
    w.final = _bytes(a, w.sources) if kind == RESUBMITTED else w.first
    return w


def _plant(copier: Work, works: list[Work]) -> None:
    """The copier hands in another student's answers in disguise: the next correct one."""
    i = copier.student.index
    source = next(w for w in works[i + 1 :] + works[:i] if w.case == CORRECT)
    full = {**samples.reference_sources(copier.assignment), **source.sources}
    copier.sources = {f: disguise(text, i) for f, text in full.items()}
    copier.sample, copier.copy_of = f"copy of {source.student.login}", source.student.login
    copier.first = copier.final = _bytes(copier.assignment, copier.sources)


def plan(n: int, names: list[str]) -> list[Work]:
    """Every student's work on every assignment (student-major order)."""
    roster = students(n)
    by_assignment = {}
    for j, a in enumerate(names):
        works = [_work(s, a, case(s.index, j, n)) for s in roster]
        for w in works:
            if w.case == COPY:
                _plant(w, works)
        by_assignment[a] = works
    return [by_assignment[a][s.index] for s in roster for a in names]
