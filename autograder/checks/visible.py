"""The visible tests' one entry point, :func:`make_expect`: a test cell states a call and the
value it must give, literally, and the chapter's judges (the same ones the hidden checks use)
turn a wrong answer into a message that names the mistake.

A visible test cell reads::

    expected = np.array([[0.5, 0.5, 0.5], [0.0, 0.0, 0.0], [3.0, 1.0, -1.0], [0.0, 0.0, 0.0]])
    expect(embedding_backward, (np.array([2, 0, 2]), g, 4), expected)

and a cell with several expectations collects them in one block, which fails once at its end
with every failing expectation (one line each, then the first in full)::

    with expect.all():
        expect(embedding_backward, (ids, g, 5), expected, label="ids of shape (2, 2)")
        expect(embedding_backward, (np.array(2), g0, 3), expected0, label="a 0-d id")

``expect`` returns nothing, so a test cell ends in no value (nbgrader would read a value as
partial credit); what the last call produced is ``expect.last``.

Public: pasted into released notebooks by ``make release`` (see :mod:`.judges`).
"""

from __future__ import annotations

import inspect

import numpy as np

from .harness import frameworks_used, not_available
from .judges import NOT_NUMPY, Case, Outcome, catalogue, outcome_of


class Raises:
    """The expected result of a call that must fail: ``expect(f, args, Raises(ValueError))``."""

    def __init__(self, error):
        self.error = error if isinstance(error, str) else error.__name__


def _type_name(x) -> str:
    t = type(x)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"


def want_outcome(want, output="return") -> Outcome:
    """The Outcome a correct function gives, from the literal expected value of a visible test:
    an array (or anything numpy reads), a tuple of them (a function that returns several arrays,
    or the arrays an in-place function changes), ``Raises(...)``, or None (nothing to compare:
    the judge decides from the call alone)."""
    if isinstance(want, Raises):
        return Outcome(error_type=want.error)
    if want is None:
        return Outcome(returned_none=output == "return")
    several = isinstance(want, tuple)
    items = list(want) if several else [want]
    return Outcome(
        values=[np.asarray(w) for w in items],
        types=[_type_name(w) for w in items],
        is_tuple=several and output == "return",
    )


def _arg_names(fn) -> list | None:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return names or None


def _one_line(label: str, message: str, width: int = 170) -> str:
    """A failing expectation in one line: its label, then its message without the label (which
    the message repeats), cut at a word boundary."""
    text = " ".join(str(message).split())
    for mention in (f" (for {label})", f" for {label}"):
        text = text.replace(mention, "")
    if len(text) > width:
        text = text[: width - 3].rsplit(" ", 1)[0] + "..."
    return f"  - {label}: {text}"


def summary(failures: list, total: int) -> str:
    """The message of a block of expectations that failed: (label, message) per failure."""
    if len(failures) == 1:
        return failures[0][1]
    lines = [f"{len(failures)} of the {total} expectations in this cell failed:"]
    lines += [_one_line(label, message) for label, message in failures]
    return "\n".join([*lines, "The first in full:", failures[0][1]])


class _Block:
    """``with expect.all():`` collects the expectations inside it and fails once at the end."""

    def __init__(self, owner):
        self.owner = owner
        self.outer = None

    def __enter__(self):
        self.outer = self.owner.pending
        if self.outer is None:  # an inner block joins the outer one
            self.owner.pending = {"failures": [], "total": 0}
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.outer is not None:
            return False
        pending, self.owner.pending = self.owner.pending, None
        if exc_type is None and pending["failures"]:
            raise AssertionError(summary(pending["failures"], pending["total"]))
        return False  # an exception inside the block (the stub's, a typo) goes on as it is


def framework_problem(fn, fname: str):
    """The message for a function that uses torch (or jax, tensorflow): it may run here, in
    JupyterLab, but no grading kernel can import them (:func:`.harness.block_frameworks`).
    Under nbgrader (NBGRADER_EXECUTION set) the kernel itself refuses them, and a call that
    tries gets the same rule from the judges: this static look is for the student's own
    kernel, where they do import."""
    import os

    used = [] if os.environ.get("NBGRADER_EXECUTION") else frameworks_used(fn)
    if not used:
        return None
    return NOT_NUMPY.said(
        f"{fname} uses {' and '.join(used)}. It may run here, but {not_available(used[0])}. "
        f"Write {fname} with numpy alone, or its tests fail when your notebook is graded."
    )


class Expect:
    """``expect(fn, args, want, ...)``: call ``fn(*args, **kwargs)`` on copies of the inputs and
    judge the result against ``want`` (an array, a tuple of them, ``Raises(Error)``, or None when
    the judge decides from the call alone) with this chapter's judges: a wrong result raises
    AssertionError with a message that names the mistake it looks like. ``output``: "return",
    or ("arg", i) / ("args", (i, j, ...)) for arguments changed in place; ``check``: a second way
    of judging the function (e.g. "shape"); ``label``: how the message names the call; other
    keywords go to the judge. Returns None; ``expect.last`` is what the last call produced (the
    arrays it returned or changed; None when it raised).

    ``with expect.all():`` around several expectations runs every one of them and fails once at
    the end of the block, listing each failing expectation (one line each, then the first in
    full). The untouched stub's NotImplementedError is raised at once, as it is, and so is the
    message for a function that uses torch, jax or tensorflow (no grading kernel has them).

    ``expect.mistakes``: every classic mistake this chapter's judges recognise, by its id."""

    def __init__(self, judges: dict, mistakes: dict, companions: dict | None = None):
        self.judges = judges
        self.mistakes = mistakes
        self.companions = companions or {}  # judged name -> case -> (function name, calls)
        self.last = None
        self.pending = None  # the open block's failures and count, or None

    def all(self) -> _Block:
        return _Block(self)

    def judged_name(self, fn, check, caller) -> str:
        """The name of the chapter's function that ``fn`` is: its own ``__name__``, or else the
        one name with a judge that the calling cell binds to this very object (an answer defined
        as ``quantize_rows = my_quantize``, a lambda, a decorator without functools.wraps)."""
        suffix = "" if check is None else f":{check}"
        own = getattr(fn, "__name__", None)
        if f"{own}{suffix}" in self.judges:
            return own
        scopes = [] if caller is None else [caller.f_locals, caller.f_globals]
        bound = sorted(
            {
                k
                for scope in scopes
                for k, v in list(scope.items())
                if v is fn and f"{k}{suffix}" in self.judges
            }
        )
        if len(bound) == 1:
            return bound[0]
        judged = sorted({k.split(":")[0] for k in self.judges})
        example = judged[0] if judged else "the_function"
        if bound:
            reason = f"it is bound to several of them ({', '.join(bound)})"
        else:
            what = f"is named {own!r}" if own else f"is a {type(fn).__name__} without a name"
            reason = f"it {what}, and none of those names refers to it"
        raise AssertionError(
            f"This test could not tell which of the exercise's functions ({', '.join(judged)}) "
            f"it was given: {reason}. Define your answer under the name its answer cell gives "
            f"(def {example}(...): ..., or {example} = your_function at the end of the cell), "
            "run that cell again, then this one."
        )

    def __call__(
        self, fn, args, want, *, kwargs=None, output="return", check=None, label=None, **meta
    ):
        if not callable(fn):
            raise AssertionError(f"{fn!r} is not a function (got {type(fn).__name__}).")
        fname = self.judged_name(fn, check, inspect.currentframe().f_back)
        problem = framework_problem(fn, fname)
        if problem:  # said once, at once (like the stub's NotImplementedError), even in a block
            raise AssertionError(str(problem))
        name = fname if check is None else f"{fname}:{check}"
        names = _arg_names(fn)
        case = Case(
            label or "the example above",
            tuple(args),
            dict(kwargs or {}),
            output=output,
            meta={"shown": True, **({"arg_names": names} if names else {}), **meta},
        )
        if name in self.companions:  # a companion maker may take the expected outcome too
            maker = self.companions[name]
            wants = "want" in inspect.signature(maker).parameters
            made = maker(case, want_outcome(want, output)) if wants else maker(case)
            if made is not None:  # None: this case asks for no companion call
                case.meta["companion"] = made
        got = outcome_of(fn, case)
        self.last = None
        if got.error_type is None and got.values:
            self.last = got.values[0] if len(got.values) == 1 else tuple(got.values)
        if got.error_type == "NotImplementedError":  # the untouched stub: say so, as it does
            raise NotImplementedError(
                f"{fname} still raises NotImplementedError: replace the stub with your code."
            )
        message = self.judges[name](case, got, want_outcome(want, output))
        if self.pending is not None:
            self.pending["total"] += 1
            if message:
                self.pending["failures"].append((case.label, str(message)))
        elif message:
            raise AssertionError(str(message))


def make_expect(judges: dict, mistakes=(), companions=None) -> Expect:
    """``expect`` for one chapter: ``judges`` maps a function's name (or "name:check" for a
    second way of judging it, e.g. "embedding_backward:shape") to a judge; ``mistakes``: the
    chapter's classic mistakes (its ``MISTAKES``), whose ids must be unique; ``companions``:
    judged name -> a function of the case giving (name, calls), a second student function the
    judge wants the results of (``Outcome.companion``), or of (case, want), the expected
    Outcome, when it has a parameter named ``want``; None where the case asks for none."""
    return Expect(judges, catalogue(mistakes), companions)
