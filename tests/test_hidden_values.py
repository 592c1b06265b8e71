"""Hidden answers stay hidden: no message about a hidden case shows a value the reference
computes for it (that would be the hidden test's answer key for a student who resubmits).

For every classic mistake of every chapter, and for wrong answers no judge recognises (the
reference's results scaled by 1.5, shifted by 0.25, transposed, rolled by one row, or with one
row changed), the hidden checks run in-process (exactly what a feedback page shows: the check's
description and its messages), and every distinctive number of the reference's output on each
hidden case (floats as messages print them, integers of three digits or more, with and without
thousands separators) must be absent from the messages, unless the student's own output holds
the same number (their output is theirs to see). A case may show its values only if it repeats
a visible test's call exactly (meta shown=True, checked here against the released notebook).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import re

import numpy as np
import pytest

from autograder import checks, nb, samples
from autograder.checks import harness
from autograder.checks.compare import shown
from autograder.checks.judges import outcome_of
from autograder.course import assignments
from tests.test_fairness import _namespace, mistake_params
from tests.test_visible import _executable, _released_with


def _tokens(values) -> set[str]:
    out = set()
    for v in values:
        a = np.asarray(v)
        if a.dtype.kind not in "biuf" or a.size == 0:
            continue
        for x in a.ravel()[:64]:
            if a.dtype.kind == "f" and abs(float(x)) >= 0.01:
                out.add(np.array2string(np.array([x], dtype=np.float64), precision=4)[1:-1].strip())
                out.add(f"{float(x):.10g}")
            elif a.dtype.kind in "iu" and abs(int(x)) >= 100:
                out |= {str(int(x)), f"{int(x):,}"}
    return {t for t in out if len(t.strip("-")) >= 4}


def _appears(token: str, text: str) -> bool:
    """token as a whole number in text (48,576 is not in 1,048,576)."""
    return re.search(rf"(?<![\d,.]){re.escape(token)}(?![\d])", text) is not None


def _leaks(check, fn) -> list[str]:
    """The reference values of hidden cases that the check's messages on ``fn`` show. Each
    message is scanned for the values of the case it is about (the case whose label it names,
    the longest one if several do): a number of another case's is a coincidence, not a leak."""
    result = check.run(fn)
    cases = check.cases()
    about: dict = {}
    for message in result.messages:
        named = [c.label for c in cases if c.label in message]
        about.setdefault(max(named, key=len) if named else None, []).append(message)
    leaks = []
    for case in cases:
        text = "\n".join([check.what, *about.get(case.label, []), *about.get(None, [])])
        if shown(case):
            continue
        want = outcome_of(check.reference(), case)
        got = outcome_of(fn, case)
        for token in _tokens(want.values) - _tokens(got.values):
            if _appears(token, text) and token not in case.label:
                leaks.append(f"{check.grade_id} / {case.label}: {token}")
    return leaks


@pytest.mark.parametrize("assignment,name", mistake_params())
def test_messages_of_a_wrong_answer_show_no_reference_value_of_a_hidden_case(assignment, name):
    ns = _namespace(assignment, samples.module(assignment).MISTAKES[name].sources)
    leaks = []
    for check in checks.for_assignment(assignment).values():
        leaks += _leaks(check, getattr(ns, check.function))
    assert not leaks, "reference values of hidden cases in the feedback:\n" + "\n".join(leaks[:20])


# ----------------------------------------------------------------------------------------------
# Wrong answers no judge recognises: the reference, then a change no mistake model predicts
# ----------------------------------------------------------------------------------------------
def _one_row(a):
    out = a.copy()
    out[(0,) * (a.ndim - 1) if a.ndim > 1 else 0] = (
        out[(0,) * (a.ndim - 1) if a.ndim > 1 else 0] * 1.5 + 0.5
    )
    return out


WRONG = {  # name -> what it does to one float array of the reference's result
    "scaled by 1.5": lambda a: a * 1.5,
    "shifted by 0.25": lambda a: a + 0.25,
    "transposed": lambda a: np.swapaxes(a, -1, -2) if a.ndim >= 2 else a[::-1] * 1.5,
    "rolled by one row": lambda a: np.roll(a, 1, axis=0) * 1.01 if a.ndim else a * 1.01,
    "one row changed": lambda a: _one_row(a) if a.ndim else a + 0.5,
}


def _changed(x, change, in_place: bool):
    """x after the change: a float array or number changed, an int changed and rounded, the
    rest as it was; in place (same shape) for an array the function updates in place."""
    if isinstance(x, (tuple, list)):
        return type(x)(_changed(v, change, in_place) for v in x)
    if isinstance(x, (bool, np.bool_)) or x is None:
        return x
    a = np.asarray(x)
    if a.dtype.kind not in "iuf":
        return x
    new = change(a.astype(np.float64))
    if in_place and new.shape != a.shape:
        new = a * 1.5
    new = np.rint(new).astype(a.dtype) if a.dtype.kind in "iu" else new.astype(a.dtype)
    if isinstance(x, (int, np.integer)):
        return int(new)
    if isinstance(x, (float, np.floating)):
        return float(new)
    return new


def _wrong_answer(ref, change, output):
    """The reference with ``change`` applied to what it returns, or (for an in-place function)
    to the arrays it updates."""
    graded = harness.graded_args(output)

    @functools.wraps(ref)
    def wrong(*args, **kwargs):
        result = ref(*args, **kwargs)
        for i in graded:
            args[i][...] = _changed(args[i], change, in_place=True)
        return None if result is None else _changed(result, change, in_place=False)

    return wrong


@pytest.mark.parametrize("wrong", list(WRONG))
@pytest.mark.parametrize("assignment", assignments())
def test_messages_of_an_unrecognised_wrong_answer_show_no_reference_value(assignment, wrong):
    leaks = []
    with np.errstate(all="ignore"):
        for check in checks.for_assignment(assignment).values():
            output = check.cases()[0].output
            leaks += _leaks(check, _wrong_answer(check.reference(), WRONG[wrong], output))
    assert not leaks, "reference values of hidden cases in the feedback:\n" + "\n".join(leaks[:20])


# ----------------------------------------------------------------------------------------------
# A hidden case that shows its values repeats a visible test exactly
# ----------------------------------------------------------------------------------------------
class _Recorder:
    """Stands in for ``expect`` in the released notebook: records each call, judges nothing."""

    def __init__(self):
        self.calls, self.last = [], None

    def __call__(self, fn, args, want, *, kwargs=None, output="return", check=None, **meta):
        self.calls.append((fn.__name__, tuple(args), dict(kwargs or {})))

    def all(self):
        return contextlib.nullcontext()


def _bound(fn, args, kwargs) -> dict:
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("assignment", assignments())
def test_a_hidden_case_shows_its_values_only_when_it_is_a_visible_test(assignment):
    notebook = _released_with(assignment, {})
    ns: dict = {"__name__": "__main__"}
    for cell in notebook["cells"]:
        if _executable(cell):
            exec(compile(nb.source(cell), "<cell>", "exec", dont_inherit=True), ns)  # noqa: S102
            if nb.is_inline(cell):
                ns["expect"] = recorder = _Recorder()
    for check in checks.for_assignment(assignment).values():
        ref = check.reference()
        visible = [_bound(ref, a, k) for name, a, k in recorder.calls if name == check.function]
        for case in check.cases():
            if shown(case):
                mine = _bound(ref, case.args, case.kwargs)
                assert any(
                    v.keys() == mine.keys() and all(_same(v[k], mine[k]) for k in v)
                    for v in visible
                ), f"{check.grade_id}: {case.label!r} shows its values but is no visible test"


def test_the_scan_finds_a_leak_when_there_is_one():
    """The control: an answer key pasted into a message is caught by the same tokens."""
    want = [np.array([[-1.74081, 0.92374, 2.63962]])]
    message = "row 3 is [0, 0, 0], expected [-1.7408, 0.9237, 2.6396]"
    assert {"-1.7408", "0.9237", "2.6396"} <= {t for t in _tokens(want) if _appears(t, message)}
    assert not _appears("48,576", "a projection (1,048,576)")
    assert {"1,234,567", "1234567"} <= _tokens([np.array([1234567])])
