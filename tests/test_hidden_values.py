"""Hidden answers stay hidden: no message about a hidden case shows a value the reference
computes for it (that would be the hidden test's answer key for a student who resubmits).

For every classic mistake of every chapter, the hidden checks run in-process (exactly what a
feedback page shows: the check's description and its messages), and every distinctive number of
the reference's output on each hidden case (floats as messages print them, integers of three
digits or more, with and without thousands separators) must be absent from the messages, unless
the student's own output holds the same number (their output is theirs to see). The small worked
examples the visible tests already show are exempt.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from autograder import checks, samples
from autograder.checks.compare import shown
from autograder.checks.judges import outcome_of
from tests.test_fairness import _namespace, mistake_params


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


@pytest.mark.parametrize("assignment,name", mistake_params())
def test_messages_of_a_wrong_answer_show_no_reference_value_of_a_hidden_case(assignment, name):
    ns = _namespace(assignment, samples.module(assignment).MISTAKES[name].sources)
    leaks = []
    for check in checks.for_assignment(assignment).values():
        fn = getattr(ns, check.function)
        result = check.run(fn)
        text = check.what + "\n" + result.message
        for case in check.cases():
            if shown(case):
                continue
            want = outcome_of(check.reference(), case)
            got = outcome_of(fn, case)
            for token in _tokens(want.values) - _tokens(got.values):
                if _appears(token, text) and token not in case.label:
                    leaks.append(f"{check.grade_id} / {case.label}: {token}")
    assert not leaks, "reference values of hidden cases in the feedback:\n" + "\n".join(leaks[:20])


def test_the_scan_finds_a_leak_when_there_is_one():
    """The control: an answer key pasted into a message is caught by the same tokens."""
    want = [np.array([[-1.74081, 0.92374, 2.63962]])]
    message = "row 3 is [0, 0, 0], expected [-1.7408, 0.9237, 2.6396]"
    assert {"-1.7408", "0.9237", "2.6396"} <= {t for t in _tokens(want) if _appears(t, message)}
    assert not _appears("48,576", "a projection (1,048,576)")
    assert {"1,234,567", "1234567"} <= _tokens([np.array([1234567])])
