"""The visible tests' one entry point, :func:`make_expect`: a test cell states a call and the
value it must give, literally, and the chapter's judges (the same ones the hidden checks use)
turn a wrong answer into a message that names the mistake.

A visible test cell reads::

    expected = np.array([[0.5, 0.5, 0.5], [0.0, 0.0, 0.0], [3.0, 1.0, -1.0], [0.0, 0.0, 0.0]])
    expect(embedding_backward, (np.array([2, 0, 2]), g, 4), expected)

Public: pasted into released notebooks by ``make release`` (see :mod:`.judges`).
"""

from __future__ import annotations

import inspect

import numpy as np

from .judges import Case, Outcome, outcome_of


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


def make_expect(judges: dict):
    """``expect(fn, args, want, ...)`` for one chapter: ``judges`` maps a function's name (or
    "name:check" for a second way of judging it, e.g. "embedding_backward:shape") to a judge."""

    def expect(fn, args, want, *, kwargs=None, output="return", check=None, label=None, **meta):
        """Call ``fn(*args, **kwargs)`` on copies of the inputs and judge the result against
        ``want``; raise AssertionError with the judge's message when it is wrong. ``output``:
        "return", or ("arg", i) / ("args", (i, j, ...)) for arguments changed in place. Returns
        what the call produced (the arrays it returned or changed), for further asserts. The
        untouched stub's NotImplementedError is raised again as it is, not judged."""
        if not callable(fn):
            raise AssertionError(f"{fn!r} is not a function (got {type(fn).__name__}).")
        name = fn.__name__ if check is None else f"{fn.__name__}:{check}"
        if name not in judges:
            raise KeyError(f"no judge for {name!r}; this chapter judges {sorted(judges)}")
        names = _arg_names(fn)
        case = Case(
            label or "the example above",
            tuple(args),
            dict(kwargs or {}),
            output=output,
            meta={"shown": True, **({"arg_names": names} if names else {}), **meta},
        )
        got = outcome_of(fn, case)
        if got.error_type == "NotImplementedError":  # the untouched stub: say so, as it does
            raise NotImplementedError(
                f"{fn.__name__} still raises NotImplementedError: replace the stub with your code."
            )
        message = judges[name](case, got, want_outcome(want, output))
        if message:
            raise AssertionError(message)
        return got.values[0] if len(got.values) == 1 else tuple(got.values)

    return expect
