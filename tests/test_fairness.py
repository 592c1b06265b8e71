"""Graders are fair both ways, for every chapter with samples.

* every correct alternative (loops, np.add.at, bincount, ...) passes every hidden check;
* each classic mistake fails exactly the test cells it should, the message names it, and the
  result carries the mistake's stable id (what test_report.csv's ``mistake`` column records);
* the untouched stub fails every check with the "still raises NotImplementedError" message.

These run the hidden checks in-process on the sample answers; test_nbgrader.py and
test_grade.py grade a few of the same samples end to end.
"""

import importlib
import types

import pytest

from autograder import checks, samples
from autograder.checks.judges import Mistake, catalogue, is_mistake_id
from autograder.course import assignments


def _namespace(assignment, sources):
    """Execute sample answer sources the way a notebook would: the given code, the reference for
    the other answer cells."""
    ns: dict = {}
    given = list(samples.given_sources(assignment).values())
    for src in given + list({**samples.reference_sources(assignment), **sources}.values()):
        exec(compile(src, "<sample>", "exec"), ns)  # noqa: S102 - our own fixtures
    return types.SimpleNamespace(**ns)


def _run_all(assignment, ns):
    results = {}
    for gid, check in checks.for_assignment(assignment).items():
        results[gid] = check.run(getattr(ns, check.function))
    return results


def alternative_params() -> list:
    """(assignment, name) of every correct alternative, for parametrize (also test_visible)."""
    return [
        pytest.param(a, name, id=f"{a}:{name}")
        for a in assignments()
        for name in samples.module(a).ALTERNATIVES
    ]


def mistake_params() -> list:
    """(assignment, name) of every classic mistake (also test_hidden_values, test_visible)."""
    return [
        pytest.param(a, name, id=f"{a}:{name}")
        for a in assignments()
        for name in samples.module(a).MISTAKES
    ]


@pytest.mark.parametrize("assignment", assignments())
def test_reference_passes_every_check(assignment):
    results = _run_all(assignment, _namespace(assignment, {}))
    assert all(r.passed for r in results.values()), {g: r.message for g, r in results.items()}


@pytest.mark.parametrize("assignment,name", alternative_params())
def test_correct_alternative_gets_full_credit(assignment, name):
    sources = samples.module(assignment).ALTERNATIVES[name]
    results = _run_all(assignment, _namespace(assignment, sources))
    failing = {g: r.message for g, r in results.items() if not r.passed}
    assert not failing, f"a correct answer ({name}) lost points: {failing}"


@pytest.mark.parametrize("assignment,name", mistake_params())
def test_classic_mistake_loses_points_and_is_named(assignment, name):
    mistake = samples.module(assignment).MISTAKES[name]
    results = _run_all(assignment, _namespace(assignment, mistake.sources))
    failing = {g for g, r in results.items() if not r.passed}
    assert failing == mistake.fails, (
        f"{name}: failed {sorted(failing)}, expected {sorted(mistake.fails)}"
    )
    messages = " ".join(results[g].message for g in failing)
    assert mistake.says in messages, f"{name}: no {mistake.says!r} in: {messages}"
    recorded = {i for g in failing for i in results[g].mistake.split(";") if i}
    if mistake.id:
        assert mistake.id in recorded, (
            f"{name}: grading records {sorted(recorded)}, not {mistake.id!r}"
        )
    else:  # a wrong answer no mistake model fits: the generic message, no mistake named
        assert not recorded, f"{name}: grading records {sorted(recorded)} for an unnamed mistake"
    unlisted = recorded - set(_public(assignment).expect.mistakes)
    assert not unlisted, f"{name}: ids {sorted(unlisted)} are not in the chapter's MISTAKES"


@pytest.mark.parametrize("assignment", assignments())
def test_untouched_stub_fails_every_check_with_a_clear_message(assignment):
    stub = {
        fn: f"def {fn}(*args, **kwargs):\n    raise NotImplementedError()\n"
        for fn in samples.answer_cell_ids(assignment)
    }
    results = _run_all(assignment, _namespace(assignment, stub))
    for gid, r in results.items():
        assert not r.passed, gid
        assert "NotImplementedError" in r.message, (gid, r.message)


# --------------------------------------------------------------------------------------------
# Stable mistake ids: one per recognised mistake, kebab-case, unique in a chapter, listed once
# --------------------------------------------------------------------------------------------
def _public(assignment):
    return importlib.import_module(f"autograder.checks.public.ch{assignment[:2]}")


def _mistakes_in(module) -> list:
    """Every Mistake a module defines at its top level, alone or in a list, tuple or dict."""
    found = []
    for value in vars(module).values():
        items = value.values() if isinstance(value, dict) else value
        items = items if isinstance(items, (list, tuple, type({}.values()))) else [value]
        found += [m for m in items if isinstance(m, Mistake)]
    return found


@pytest.mark.parametrize("assignment", assignments())
def test_every_mistake_has_a_unique_kebab_case_id_listed_in_its_chapter(assignment):
    listed = _public(assignment).expect.mistakes  # judges.catalogue: COMMON + the chapter's
    assert all(is_mistake_id(i) for i in listed), sorted(listed)
    for module in (_public(assignment), checks.module_for(assignment)):
        for m in _mistakes_in(module):
            assert m.name in listed, f"{module.__name__}: {m.name!r} is not in MISTAKES"
            # the same mistake: the listed object, or a hidden model of it (same message)
            assert listed[m.name] is m or listed[m.name].message == m.message, m.name


def test_ids_are_checked_kebab_case_and_unique():
    with pytest.raises(ValueError, match="kebab-case"):
        Mistake("off_by_one", "ids are 0-based")
    with pytest.raises(ValueError, match="two mistakes have the id"):
        catalogue([Mistake("off-by-one", "a"), Mistake("off-by-one", "b")])
    with pytest.raises(ValueError, match="two mistakes have the id"):
        catalogue([Mistake("transposed", "clashes with a common id")])
