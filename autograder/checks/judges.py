"""Cases, outcomes, judges and mistake models: the public half of the check framework.

A *judge* compares what a student's function produced (an :class:`Outcome`) with what it should
produce and returns a message, or ``None`` when the case passes; a :class:`Mistake` models what a
classic wrong answer returns, so that the message can name it. A message that names a recognised
mistake is a :class:`Diagnosis`: a ``str`` that also carries the mistake's stable id
(``Mistake.name``, e.g. ``"trap-overwrite"``), which grading records with each test result.

Public means: ``make release`` pastes this module (with :mod:`.harness`, :mod:`.compare`,
:mod:`.visible` and the chapter's :mod:`.public` module) into every released notebook, so the
visible tests judge the same way as the hidden ones. It must therefore never import the
reference solutions, the hidden cases, or anything outside numpy and the standard library
(``tests/test_visible.py`` checks that). The paste is tree-shaken (release/inline.py): a
notebook gets only the definitions here that its chapter uses, so a mistake two chapters share
(GLOBAL_MAX, EPS_INSIDE_SQRT) is defined here once and reaches only those two notebooks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .compare import close, differing_rows, expected, fmt, shown
from .harness import NOT_WHEN_GRADED, call, companion


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
    warnings: list = field(default_factory=list)  # the RuntimeWarnings the call raised, as text
    raised_in: str | None = None  # the function an exception came from (see harness.call)
    # what a second function of the student's gave on the case's meta["companion"] calls
    # (harness.companion: a float or None per call), None when the case asks for none
    companion: list | None = None

    @property
    def value(self) -> np.ndarray | None:
        return self.values[0] if self.values else None

    def to_json(self) -> dict:
        d = dataclasses.asdict(self)
        d.pop("values")
        return d


def outcome_of(fn, case: Case, namespace: dict | None = None, companion_too=True) -> Outcome:
    """Run :func:`call` in this process and wrap the result. A case with ``meta["companion"]``
    = (name, calls) also calls the function of that name in ``namespace`` (by default the
    graded function's own globals: the student's notebook) on each of ``calls``."""
    got = Outcome(**call(fn, case.args, case.kwargs, case.output))
    if companion_too and "companion" in case.meta and got.error_type != "NotImplementedError":
        name, calls, *whole = case.meta["companion"]
        ns = getattr(fn, "__globals__", {}) if namespace is None else namespace
        got.companion = companion(ns.get(name), calls, whole[0] if whole else False)
    return got


# --------------------------------------------------------------------------------------------
# Judges
# --------------------------------------------------------------------------------------------
Judge = Callable[[Case, Outcome, Outcome], "str | None"]


def common_problems(case: Case, got: Outcome, want: Outcome, fname: str) -> str | None:
    """Problems every check reports the same way: exceptions, stubs, None, modified inputs."""
    if got.error_type == "NotImplementedError":
        return NOT_IMPLEMENTED.said(
            f"{fname} still raises NotImplementedError: replace the stub with your code."
        )
    if got.error_type in ("ModuleNotFoundError", "ImportError") and NOT_WHEN_GRADED in str(
        got.error
    ):  # the grading kernel refused torch (harness.block_frameworks): the rule, whatever is due
        return NOT_NUMPY.said(f"{fname} raised {got.error_type} for {case.label}: {got.error}")
    if want.error_type is not None:
        if got.error_type is None:
            return NO_ERROR.said(
                f"{fname} should raise {want.error_type} for {case.label}, but it returned."
            )
        if got.error_type != want.error_type:
            return WRONG_ERROR.said(
                f"{fname} raised {got.error_type} for {case.label}; expected {want.error_type}."
            )
        return None
    if got.error_type is not None:
        where = got.raised_in
        inside = f" (raised in {where}, which {fname} called)" if where and where != fname else ""
        return RAISED.said(f"{fname} raised {got.error_type}{inside} for {case.label}: {got.error}")
    if got.modified:
        names = case.meta.get("arg_names")
        which = ", ".join(names[i] if names else f"argument {i}" for i in got.modified)
        return MODIFIED_INPUT.said(
            f"{fname} modified its input ({which}) for {case.label}. Work on a copy or build a "
            "new array: callers do not expect their inputs to change."
        )
    if got.conversion_error is not None:
        return NOT_NUMBERS.said(
            f"{fname} returned something that is not numbers for {case.label}: "
            f"{got.conversion_error}"
        )
    if case.output == "return" and got.returned_none and not want.returned_none:
        return RETURNED_NONE.said(
            f"{fname} returned None for {case.label}. Did you forget the return statement?"
        )
    return None


def one_array_problems(case: Case, got: Outcome, want: Outcome, fname: str) -> str | None:
    """common_problems, then: the function must return exactly one array."""
    problem = common_problems(case, got, want, fname)
    if problem or want.error_type is not None:
        return problem
    if got.value is None or got.is_tuple:
        return NOT_ONE_ARRAY.said(
            f"{fname} should return one array for {case.label}, got a {', '.join(got.types)}."
        )
    return None


class Diagnosis(str):
    """A judge's message that names a recognised mistake: the text (a ``str``, as every message
    is) and ``mistake``, the stable id of the :class:`Mistake` it names."""

    mistake: str

    def __new__(cls, text: str, mistake: str = ""):
        self = super().__new__(cls, text)
        self.mistake = mistake
        return self


def mistake_id(message) -> str:
    """The id of the mistake a judge's message names, "" when it names none (or passed)."""
    return getattr(message, "mistake", "") if message else ""


def forgiving(judge, graded_elsewhere):
    """``judge``, but a recognised mistake of ``graded_elsewhere`` (ids) passes: another cell
    grades it, so it costs that cell alone."""

    def lenient(case, got, want):
        message = judge(case, got, want)
        return None if mistake_id(message) in graded_elsewhere else message

    return lenient


def is_mistake_id(name: str) -> bool:
    """A stable id is kebab-case: lowercase letters and digits in words joined by single "-"."""
    words = name.split("-")
    return bool(name) and all(w and all(c.isdigit() or "a" <= c <= "z" for c in w) for w in words)


@dataclass(frozen=True, eq=False)
class Mistake:
    """A classic wrong answer. ``name``: its stable id, kebab-case and unique within its chapter
    (reports count mistakes by it, so it never changes once released); ``message``: what a
    student reads when it is recognised; ``model``: ``model(case, want_value)`` gives what that
    mistake returns (None: it cannot occur in this case), or a tuple of such models (one mistake
    made in several ways), or None for a mistake a judge recognises by hand."""

    name: str
    message: str
    model: Any = None

    def __post_init__(self):
        if not is_mistake_id(self.name):
            raise ValueError(f"a mistake's id must be kebab-case, got {self.name!r}")

    def models(self) -> tuple:
        if self.model is None:
            return ()
        return (self.model,) if callable(self.model) else tuple(self.model)

    def predictions(self, case: Case, want):
        """What the mistake gives on this case, by each of its models (None left out)."""
        for model in self.models():
            alt = model(case, want)
            if alt is not None:
                yield alt

    def also(self, *models):  # -> Mistake (the pasted copy runs without deferred annotations)
        """The same mistake (id and message) recognised by more models."""
        return Mistake(self.name, self.message, self.models() + models)

    def said(self, text: str) -> Diagnosis:
        """``text`` (written by a judge about this mistake) carrying this mistake's id."""
        return Diagnosis(text, self.name)

    def on(self, case: Case, end: str = "") -> Diagnosis:
        """The mistake's message for a case: "<message> (for <label>)"."""
        return Diagnosis(f"{self.message} (for {case.label}){end}", self.name)


# embedding_backward_rows' row ids, judged the same in exercise 2 and in the capstone that reuses
# it (each chapter lists these two in its own MISTAKES).
ROWS_NOT_COALESCED = Mistake(
    "rows-not-coalesced", "rows lists an id more than once: the gradient is not coalesced"
)
ROWS_UNSORTED = Mistake("rows-unsorted", "rows are the right ids but not sorted ascending")

# A log-softmax shifted by the wrong maximum, judged the same in exercise 5 (the bigram losses)
# and exercise 6 (the loss of the initialization experiment); each chapter lists them in its own
# MISTAKES, and only those two notebooks get them pasted.
GLOBAL_MAX = Mistake(
    "global-max",
    "one maximum for the whole batch was subtracted (Z - Z.max()), not each row's own: in a "
    "row whose largest logit is far below the batch's, exp underflows to 0 in every entry, so "
    "its softmax is 0 / 0 and its log-sum-exp log(0) = -inf. Subtract each row's own maximum, "
    "Z - Z.max(axis=1, keepdims=True)",
)
UNSTABLE_SOFTMAX = Mistake(
    "unstable-softmax",
    "exp overflowed or underflowed: the softmax must subtract each row's own maximum logit "
    "before exp, Z - Z.max(axis=1, keepdims=True). Without any shift, exp of these logits "
    "overflows (inf / inf = NaN); with one shift for the whole batch (Z.max()), a row whose "
    "largest logit is far below the batch's underflows to 0 / 0",
)

# SparseAdam's eps in the wrong place, judged the same in exercise 3 (sparse_adam_step_) and in
# the capstone that reuses it. Each chapter adds its own model (Mistake.also) over its own view
# of a step; both scale the expected step by eps_moved_factor.
EPS_INSIDE_SQRT = Mistake(
    "eps-inside-sqrt",
    "eps went inside the square root: the denominator is sqrt(v) + eps, not sqrt(v + eps)",
)
EPS_CORRECTED = Mistake(
    "eps-corrected",
    "eps was bias-corrected (m_hat / (sqrt(v_hat) + eps), torch.optim.Adam's form): "
    "SparseAdam folds both corrections into the step size and adds eps to the uncorrected "
    "sqrt(v), so the update is step_size * m / (sqrt(v) + eps)",
)


def eps_moved_factor(v, eps: float, b2: float, t: int, kind: str) -> np.ndarray:
    """How much each entry of a SparseAdam step (its denominator sqrt(v) + eps, v the expected
    second moment) grows when eps sits elsewhere: ``kind`` "inside" the square root,
    sqrt(v + eps), or "corrected" (textbook Adam, m_hat / (sqrt(v_hat) + eps)), which adds
    eps * sqrt(1 - b2**t) to the uncorrected sqrt(v). 1 where the new denominator is 0."""
    root = np.sqrt(v)
    new = np.sqrt(v + eps) if kind == "inside" else root + eps * np.sqrt(1 - b2**t)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(new > 0, (root + eps) / new, 1.0)


def row_ids_problem(case: Case, got: Outcome, want: Outcome, fname: str) -> str | None:
    """A (rows, values) result: a pair, rows a 1-D array of integer ids equal to the expected
    distinct ids, sorted (not coalesced and unsorted named). None when the rows are right."""
    if not got.is_tuple or len(got.values) != 2:
        return (
            f"{fname} should return a tuple (rows, values) for {case.label}, "
            f"got {', '.join(got.types) or 'nothing'}."
        )
    rows, w_rows = got.values[0], want.values[0]
    if rows.ndim != 1:
        return f"rows should be a 1-D array for {case.label}; it has shape {rows.shape}."
    if rows.size and rows.dtype.kind not in "iu":
        return f"rows should hold integer ids for {case.label}; got dtype {rows.dtype}."
    if np.array_equal(rows, w_rows):
        return None
    if rows.size > w_rows.size and np.array_equal(np.unique(rows), w_rows):
        return ROWS_NOT_COALESCED.said(
            f"rows lists an id more than once for {case.label}: each id that occurs must "
            "appear once in rows, with the sum of all its gradients in values (the "
            f"gradient has to be coalesced). Got rows {fmt(rows)}{expected(case, fmt(w_rows), ', expected ')}."
        )
    if rows.size == w_rows.size and np.array_equal(np.sort(rows), w_rows):
        return ROWS_UNSORTED.said(
            f"rows must be sorted ascending for {case.label}: got {fmt(rows)}"
            f"{expected(case, fmt(w_rows), ', expected ')} (np.unique returns sorted ids)."
        )
    return (
        f"rows should be the distinct ids that occur, sorted, for {case.label}"
        f"{expected(case, fmt(w_rows), ' (')}{')' if shown(case) else ''}; got {fmt(rows)}."
    )


# Problems every check reports the same way; their ids are shared by every chapter.
NOT_IMPLEMENTED = Mistake("not-implemented", "the stub is still there (NotImplementedError)")
RAISED = Mistake("raised", "raised an exception on a valid input")
NO_ERROR = Mistake("no-error", "returned where it must raise an error")
WRONG_ERROR = Mistake("wrong-error", "raised another error than the one it must raise")
MODIFIED_INPUT = Mistake("modified-input", "modified an input the caller does not expect to change")
NOT_NUMBERS = Mistake("not-numbers", "returned something that is not numbers")
RETURNED_NONE = Mistake("returned-none", "returned None (a missing return statement)")
NOT_ONE_ARRAY = Mistake("not-one-array", "returned several values, or none, where one array is due")
TRANSPOSED = Mistake("transposed", "returned the transpose of the expected array")
WRONG_DTYPE = Mistake("wrong-dtype", "the right values in the wrong dtype")
REPLACED_ARRAY = Mistake(
    "replaced-array", "an in-place function changed an array's shape or dtype (a new array)"
)
NOT_NUMPY = Mistake(
    "not-numpy",
    "used torch, jax or tensorflow, which grading does not have: the graded functions use only "
    "numpy and the standard library",
)
COMMON = [
    NOT_IMPLEMENTED,
    RAISED,
    NO_ERROR,
    WRONG_ERROR,
    MODIFIED_INPUT,
    NOT_NUMBERS,
    RETURNED_NONE,
    NOT_ONE_ARRAY,
    TRANSPOSED,
    WRONG_DTYPE,
    REPLACED_ARRAY,
    NOT_NUMPY,
]


def catalogue(mistakes) -> dict:
    """id -> Mistake: the common ones and a chapter's (its ``MISTAKES``), one place to read
    every mistake its judges recognise. Raises ValueError for an id used by two mistakes."""
    out: dict = {}
    for m in [*COMMON, *mistakes]:
        if out.setdefault(m.name, m) is not m:
            raise ValueError(f"two mistakes have the id {m.name!r}: ids are unique in a chapter")
    return out


def dtype_advice(got_dtype, want_dtype) -> str:
    """The sentence that says how a wrong dtype usually comes about, for a function whose result
    keeps its input's dtype."""
    got, want = np.dtype(got_dtype), np.dtype(want_dtype)
    if want.kind == "f" and got.kind in "biu":
        return (
            f"The values are right but stored as {got} integers: compute in floats (np.zeros "
            f"and np.asarray of floats keep floats), or convert with .astype(np.{want})."
        )
    if want.kind == "f" and got.kind == "f" and got.itemsize > want.itemsize:
        return f"Keep the dtype of the input (do not convert {want} to {got})."
    return f"Keep the dtype of the input ({want} in, {want} out)."


def named_mistake(case: Case, got: np.ndarray, want: np.ndarray, mistakes, near=None):
    """The first mistake whose prediction has the student's shape and values, said for this
    case, or None. ``near(a, b)`` compares (default: :func:`close` at want's dtype)."""
    near = near or (lambda a, b: close(a, b, want.dtype))
    for m in mistakes:
        for alt in m.predictions(case, want):
            if np.shape(alt) == got.shape and near(got, alt):
                return m.on(case)
    return None


def array_judge(
    fname: str,
    *,
    check_dtype: bool = True,
    mistakes: Sequence[Mistake] = (),
    row_word: str = "row",
    dtype_hint: str | None = None,
) -> Judge:
    """Judge a function that returns one array: shape, then dtype, then values. ``dtype_hint``
    replaces :func:`dtype_advice` for a function whose dtype is not its input's."""

    def judge(case: Case, got: Outcome, want: Outcome) -> str | None:
        problem = one_array_problems(case, got, want, fname)
        if problem or want.error_type is not None:
            return problem
        g, w = got.value, want.value
        if g.shape != w.shape:
            named = named_mistake(case, g, w, mistakes)
            if named:
                return named
            text = f"{fname} returned shape {g.shape} for {case.label}; expected {w.shape}."
            if g.ndim == w.ndim and g.shape == w.shape[::-1] and g.ndim == 2:
                return TRANSPOSED.said(text + " It looks transposed.")
            return text
        if close(g, w, w.dtype):
            if check_dtype and g.dtype != w.dtype:
                return WRONG_DTYPE.said(
                    f"{fname} returned {g.dtype} for {case.label}; expected {w.dtype}. "
                    + (dtype_hint or dtype_advice(g.dtype, w.dtype))
                )
            return None
        named = named_mistake(case, g, w, mistakes)
        if named:
            return named
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
        near = (lambda a, b: close(a, b, w.dtype)) if match_values else (lambda a, b: True)
        named = named_mistake(case, g, w, mistakes, near)
        if named:
            return named
        text = f"{fname} returned shape {g.shape} for {case.label}; expected {expected}{w.shape}."
        if g.ndim == 2 and g.shape == w.shape[::-1]:
            return TRANSPOSED.said(text + " It looks transposed.")
        return text

    return judge


def explains(got: Sequence, want: Sequence, alt: Sequence, near: Callable) -> bool:
    """Does a mistake's prediction ``alt`` (an array, or None for "not predicted", per graded
    array) explain a wrong answer of several arrays? Every array it predicts is what the student
    left (right ones included: a model that also gets m wrong does not explain a student whose m
    is right), and at least one wrong array is predicted (and differs from the right one).
    ``near(a, b)`` is the chapter's comparison."""
    wrong = [not near(g, w) for g, w in zip(got, want, strict=True)]
    predicted = any(
        bad and a is not None and not near(a, w) and near(g, a)
        for bad, g, a, w in zip(wrong, got, alt, want, strict=True)
    )
    fits = all(a is None or near(g, a) for g, a in zip(got, alt, strict=True))
    return predicted and fits


def in_place_problem(case: Case, got: Outcome, want: Outcome, fname: str, names) -> str | None:
    """For a function that changes several arrays in place: the first one whose shape or dtype
    the call changed (a copy rebound to the name, an upcast), or None."""
    for name, g, w in zip(names, got.values, want.values, strict=True):
        if g.shape != w.shape or g.dtype != w.dtype:
            return REPLACED_ARRAY.said(
                f"{fname} changed {name} from {w.dtype} {w.shape} to {g.dtype} {g.shape} for "
                f"{case.label}: update the caller's arrays in place, keeping their shape and dtype."
            )
    return None
