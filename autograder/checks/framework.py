"""Checks that grade what a function computes and name the mistake when it is wrong.

A :class:`Check` is one test cell's worth of grading: a list of input :class:`Case` s, the name of
the student function to call, and a *judge* that compares the student's :class:`Outcome` with the
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

import dataclasses
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import reference
from .compare import close, differing_rows, expected, fmt, shown, tolerance  # noqa: F401
from .harness import call

MAX_MESSAGES = 3  # failures listed per check; the rest are counted


@dataclass(frozen=True)
class Case:
    """One call: ``function(*args, **kwargs)``; ``label`` is what a student reads about it."""

    label: str
    args: tuple
    kwargs: dict = field(default_factory=dict)
    # "return": grade the return value; ("arg", i): grade argument i after the call (in-place API);
    # ("args", (i, j, ...)): grade several arguments after the call, Outcome.values in that order.
    output: Any = "return"
    meta: dict = field(default_factory=dict)  # anything a judge or diagnosis wants to know


def named_case(label: str, **args) -> Case:
    """A case whose positional arguments are named (in order) and also kept in its meta."""
    return Case(label, tuple(args.values()), meta={"arg_names": list(args), **args})


@dataclass
class Outcome:
    """What one call produced, with every student object already turned into plain data."""

    values: list = field(default_factory=list)  # plain numpy arrays (a scalar becomes 0-d)
    types: list = field(default_factory=list)  # type name of each returned element
    is_tuple: bool = False  # the function returned a tuple or list
    error_type: str | None = None  # e.g. "ValueError"
    error: str | None = None  # the exception's message (first 500 characters)
    modified: list = field(default_factory=list)  # indices of positional args changed by the call
    returned_none: bool = False
    conversion_error: str | None = None  # the result could not be read as numbers

    @property
    def value(self) -> np.ndarray | None:
        return self.values[0] if self.values else None

    def to_json(self) -> dict:
        d = dataclasses.asdict(self)
        d.pop("values")
        return d


def outcome_of(fn, case: Case) -> Outcome:
    """Run :func:`call` in this process and wrap the result."""
    return Outcome(**call(fn, case.args, case.kwargs, case.output))


# --------------------------------------------------------------------------------------------
# Judges
# --------------------------------------------------------------------------------------------
Judge = Callable[[Case, Outcome, Outcome], "str | None"]


def common_problems(case: Case, got: Outcome, want: Outcome, fname: str) -> str | None:
    """Problems every check reports the same way: exceptions, stubs, None, modified inputs."""
    if got.error_type == "NotImplementedError":
        return f"{fname} still raises NotImplementedError: replace the stub with your code."
    if want.error_type is not None:
        if got.error_type is None:
            return f"{fname} should raise {want.error_type} for {case.label}, but it returned."
        if got.error_type != want.error_type:
            return f"{fname} raised {got.error_type} for {case.label}; expected {want.error_type}."
        return None
    if got.error_type is not None:
        return f"{fname} raised {got.error_type} for {case.label}: {got.error}"
    if got.modified:
        names = case.meta.get("arg_names")
        which = ", ".join(names[i] if names else f"argument {i}" for i in got.modified)
        return (
            f"{fname} modified its input ({which}) for {case.label}. Work on a copy or build a "
            "new array: callers do not expect their inputs to change."
        )
    if got.conversion_error is not None:
        return f"{fname} returned something that is not numbers for {case.label}: {got.conversion_error}"
    if case.output == "return" and got.returned_none and not want.returned_none:
        return f"{fname} returned None for {case.label}. Did you forget the return statement?"
    return None


def one_array_problems(case: Case, got: Outcome, want: Outcome, fname: str) -> str | None:
    """common_problems, then: the function must return exactly one array."""
    problem = common_problems(case, got, want, fname)
    if problem or want.error_type is not None:
        return problem
    if got.value is None or got.is_tuple:
        return f"{fname} should return one array for {case.label}, got a {', '.join(got.types)}."
    return None


@dataclass
class Mistake:
    """A classic wrong answer: ``model(case, want_value)`` gives what that mistake returns."""

    name: str
    message: str
    model: Callable[[Case, np.ndarray], np.ndarray | None]


def array_judge(
    fname: str,
    *,
    check_dtype: bool = True,
    mistakes: Sequence[Mistake] = (),
    row_word: str = "row",
) -> Judge:
    """Judge a function that returns one array: shape, then dtype, then values."""

    def judge(case: Case, got: Outcome, want: Outcome) -> str | None:
        problem = one_array_problems(case, got, want, fname)
        if problem or want.error_type is not None:
            return problem
        g, w = got.value, want.value
        if g.shape != w.shape:
            hint = ""
            if g.ndim == w.ndim and g.shape == w.shape[::-1] and g.ndim == 2:
                hint = " It looks transposed."
            for m in mistakes:
                alt = m.model(case, w)
                if alt is not None and np.shape(alt) == g.shape and close(g, alt, w.dtype):
                    return f"{m.message} (for {case.label})"
            return f"{fname} returned shape {g.shape} for {case.label}; expected {w.shape}.{hint}"
        if close(g, w, w.dtype):
            if check_dtype and g.dtype != w.dtype:
                return (
                    f"{fname} returned {g.dtype} for {case.label}; expected {w.dtype}. "
                    "Keep the dtype of the input (do not convert float32 to float64)."
                )
            return None
        for m in mistakes:
            alt = m.model(case, w)
            if alt is not None and np.shape(alt) == g.shape and close(g, alt, w.dtype):
                return f"{m.message} (for {case.label})"
        if not np.all(np.isfinite(g.astype(np.float64))) and np.all(np.isfinite(w)):
            return f"{fname} returned NaN or inf for {case.label}; the expected values are finite."
        rows = differing_rows(g, w, w.dtype)
        if rows:
            first = rows[0]
            return (
                f"{fname} returned wrong values for {case.label} at {row_word}s {rows}: "
                f"{row_word} {first} is {fmt(g[first])}{expected(case, fmt(w[first]), ', expected ')}."
            )
        return f"{fname} returned {fmt(g)} for {case.label}{expected(case, fmt(w))}, which is not right."

    return judge


def shape_judge(
    fname: str, mistakes: Sequence[Mistake] = (), *, match_values: bool = False, expected: str = ""
) -> Judge:
    """Judge only the shape of a function that returns one array (a "shape" test cell).

    A classic mistake whose output has the student's shape (and, with match_values, the
    student's values) is named; ``expected`` prefixes the expected shape in the message, e.g.
    "(V, d) = ".
    """

    def judge(case: Case, got: Outcome, want: Outcome) -> str | None:
        problem = one_array_problems(case, got, want, fname)
        if problem or want.error_type is not None:
            return problem
        g, w = got.value, want.value
        if g.shape == w.shape:
            return None
        for m in mistakes:
            alt = m.model(case, w)
            if (
                alt is not None
                and np.shape(alt) == g.shape
                and (not match_values or close(g, alt, w.dtype))
            ):
                return f"{m.message} (for {case.label})"
        hint = " It looks transposed." if g.ndim == 2 and g.shape == w.shape[::-1] else ""
        return f"{fname} returned shape {g.shape} for {case.label}; expected {expected}{w.shape}.{hint}"

    return judge


# --------------------------------------------------------------------------------------------
# A check: cases + judge, runnable in the kernel or from the trusted grader
# --------------------------------------------------------------------------------------------
@dataclass
class CheckResult:
    grade_id: str
    passed: bool
    messages: list
    cases_run: int

    @property
    def message(self) -> str:
        return "\n".join(self.messages)


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
        messages: list[str] = []
        failed = 0
        for case, outcome in zip(cases, got, strict=True):
            want = outcome_of(ref, case)
            if want.error_type is not None and case.meta.get("expect_error") is None:
                raise RuntimeError(
                    f"reference {self.function} failed on {case.label}: {want.error_type}: {want.error}"
                )
            msg = self.judge(case, outcome, want)
            if msg:
                failed += 1
                if len(messages) < MAX_MESSAGES:
                    messages.append(msg)
                if outcome.error_type == "NotImplementedError":
                    break
        if failed > len(messages):
            messages.append(f"... and {failed - len(messages)} more failing case(s).")
        return CheckResult(self.grade_id, failed == 0, messages, len(got))

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
