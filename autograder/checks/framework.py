"""Checks that grade what a function computes and name the mistake when it is wrong.

A :class:`Check` is one test cell's hidden grading: a list of input :class:`Case` s, the name of
the student function to call, and a *judge* (:mod:`.judges`, the public half) that compares the student's :class:`Outcome` with the
reference's and returns a message (or ``None`` when the case passes).

The same Check runs in two places:

* inside the kernel, from a hidden test cell (``ch01.forward_values(embedding_forward)``), which
  is what plain ``nbgrader autograde`` and ``nbgrader validate`` do;
* outside the kernel, in ``make grade``: the sandboxed kernel only *computes* the student's
  outputs for the cases it is handed (:func:`autograder.checks.harness.call`, shipped into the
  kernel as source text), and this trusted process holds the reference, judges and records the
  score.

A chapter declares its checks briefly with :func:`checks_for`::

    check = checks_for("01_one_hot_lookup")

    @check("test_forward_values", "embedding_forward", forward_judge, "each id is replaced by its row")
    def forward_values():
        return [Case(...), ...]
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

from . import reference
from .judges import Case, Judge, Outcome, mistake_id, outcome_of

MAX_MESSAGES = 3  # failures listed per check; the rest are counted


# --------------------------------------------------------------------------------------------
# A check: cases + judge, runnable in the kernel or from the trusted grader
# --------------------------------------------------------------------------------------------
@dataclass
class CheckResult:
    grade_id: str
    passed: bool
    messages: list  # plain strings, at most MAX_MESSAGES (+ a count of the others)
    cases_run: int
    mistakes: list = field(default_factory=list)  # ids of the recognised mistakes, in order

    @property
    def message(self) -> str:
        return "\n".join(self.messages)

    @property
    def mistake(self) -> str:
        """The ids of the mistakes recognised in the failing cases, distinct, in case order,
        joined by ";" ("" when none was recognised): what a test report records."""
        return ";".join(dict.fromkeys(m for m in self.mistakes if m))


class Check:
    """One test cell's hidden checks, e.g. ``forward_values = Check(...)`` in checks/ch01.py.

    Calling the Check with the student's function (``forward_values(embedding_forward)``) runs it
    in the current process and raises AssertionError with the messages when a case fails.
    """

    def __init__(
        self,
        assignment: str,
        grade_id: str,
        function: str,
        cases: Callable[[], list[Case]],
        judge: Judge,
        what: str,
    ):
        self.assignment = assignment
        self.grade_id = grade_id
        self.function = function
        self._cases = cases
        self.judge = judge
        self.what = what

    def cases(self) -> list[Case]:
        return self._cases()

    def reference(self):
        return reference.function(self.assignment, self.function)

    def verdict(self, got: list[Outcome], cases: list[Case] | None = None) -> CheckResult:
        """Judge outcomes (one per case, in order) against the reference."""
        cases = self.cases() if cases is None else cases
        ref = self.reference()
        failures: list[str] = []
        mistakes: list[str] = []
        for case, outcome in zip(cases, got, strict=True):
            want = outcome_of(ref, case, companion_too=False)
            if want.error_type is not None and case.meta.get("expect_error") is None:
                raise RuntimeError(
                    f"reference {self.function} failed on {case.label}: {want.error_type}: {want.error}"
                )
            msg = self.judge(case, outcome, want)
            if msg:
                mistakes.append(mistake_id(msg))
                failures.append(msg)
                if outcome.error_type == "NotImplementedError":
                    break
        # the messages that name a mistake first (they say what to fix), each group in case order
        named = [str(m) for m in failures if mistake_id(m)]
        messages = (named + [str(m) for m in failures if not mistake_id(m)])[:MAX_MESSAGES]
        failed = len(failures)
        if failed > len(messages):
            messages.append(f"... and {failed - len(messages)} more failing case(s).")
        return CheckResult(self.grade_id, failed == 0, messages, len(got), mistakes)

    def run(self, fn) -> CheckResult:
        cases = self.cases()
        outcomes = []
        for case in cases:
            outcome = outcome_of(fn, case)
            outcomes.append(outcome)
            if outcome.error_type == "NotImplementedError":
                break
        return self.verdict(outcomes, cases[: len(outcomes)])

    def __call__(self, fn) -> None:
        if not callable(fn):
            raise AssertionError(f"{self.function} is not a function (got {type(fn).__name__}).")
        try:
            result = self.run(fn)
        except AssertionError:
            raise
        except Exception as exc:  # a bug in grading, not in the submission: say so plainly
            raise AssertionError(
                f"the checker itself failed ({type(exc).__name__}: {exc}); tell your instructor.\n"
                + traceback.format_exc(limit=2)
            ) from None
        if not result.passed:
            raise AssertionError(f"{self.what}: " + "\n".join(result.messages))
        print(f"{self.what}: passed ({result.cases_run} hidden cases).")


def checks_for(assignment: str):
    """A decorator factory for one chapter's checks. ``@check(grade_id, function, judge)`` on a
    function that returns the cases turns that function into the Check; the first line of its
    docstring is what the check tests (students read it in every message)."""

    def check(grade_id: str, function: str, judge: Judge, what: str | None = None):
        def declare(cases: Callable[[], list[Case]]) -> Check:
            text = what or (cases.__doc__ or "").strip().splitlines()[0]
            return Check(assignment, grade_id, function, cases, judge, text)

        return declare

    return check


def registry(module) -> dict[str, Check]:
    """All Checks a chapter module defines, by grade_id."""
    return {v.grade_id: v for v in vars(module).values() if isinstance(v, Check)}
