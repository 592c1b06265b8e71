"""The harness: the only code that runs next to a student's objects.

:func:`call` gives the student's function copies of the inputs, records an exception instead of
raising it (and the function it came from), records the RuntimeWarnings the call raised, notices
modified inputs, arrays nested in lists, tuples and dicts included (by :func:`same_leaves` and
:func:`same_array`, the one rule for "was an input modified?", also used by the trusted grader on
the arguments a kernel hands back), and converts
every result into a plain numpy array, so nothing downstream ever calls a method of a student's
object (an ``==`` that always says True has nothing to say here).

These functions must stay self-contained (numpy and the standard library, imported inside):
``make grade`` ships their source into the sandboxed kernel (:func:`source`).
"""

from __future__ import annotations

import inspect


def same_array(before, after) -> bool:
    """True when ``after`` is an ndarray equal to ``before`` in shape, dtype and values (NaN equal
    to NaN for float and complex arrays)."""
    import numpy as _np

    return (
        isinstance(after, _np.ndarray)
        and before.shape == after.shape
        and before.dtype == after.dtype
        and _np.array_equal(before, after, equal_nan=before.dtype.kind in "fc")
    )


def array_leaves(x, path=()) -> list:
    """(path, array) for every ndarray in an argument: the argument itself, or the arrays nested in
    its lists, tuples and dicts (4 levels at most), in order; a path is the indices and keys
    that lead to the array (() for the argument itself)."""
    import numpy as _np

    if isinstance(x, _np.ndarray):
        return [(path, x)]
    if len(path) >= 4:
        return []
    if isinstance(x, (list, tuple)):
        items = list(enumerate(x))
    elif isinstance(x, dict):
        items = list(x.items())
    else:
        return []
    out = []
    for k, v in items:
        out += array_leaves(v, (*path, k))
    return out


def same_leaves(before, after) -> bool:
    """True when the call left an argument's arrays alone: every ndarray of ``before`` (the
    argument as it was handed over, :func:`array_leaves`) is still at its path in ``after`` (path
    -> array, what the argument holds after the call) and :func:`same_array` to it, and no array
    was added."""
    want = array_leaves(before)
    return len(want) == len(after) and all(same_array(a, after.get(p)) for p, a in want)


def graded_args(output) -> tuple:
    """The positions of the arguments a case grades after the call: ``"return"`` grades none (the
    return value), ``("arg", i)`` grades argument i, ``("args", (i, j, ...))`` grades several (an
    in-place API that changes more than one array). Any other argument that changes counts as
    modified."""
    if output == "return":
        return ()
    kind, where = output[0], output[1]
    if kind == "arg":
        return (int(where),)
    if kind == "args":
        return tuple(int(i) for i in where)
    raise ValueError(f"unknown output kind {kind!r}")


def call(fn, args, kwargs, output="return"):
    """Call ``fn`` on copies of the inputs and describe the result as an Outcome-like dict.

    ``values`` holds the return value's elements, or the graded arguments after the call, in the
    order :func:`graded_args` gives them; ``modified`` the positions of the arguments whose arrays
    (nested ones too: :func:`same_leaves`) the call changed; ``warnings`` the RuntimeWarnings the
    call raised (numpy's "invalid value encountered in cast", ...), as text; ``raised_in`` the
    function an exception came from (the innermost frame of the notebook's own code, not a
    library's)."""
    import copy as _copy
    import warnings as _warnings

    import numpy as _np

    def _plain(x):
        # Read a student's result as numbers without trusting its methods beyond __array__.
        if type(x).__module__.startswith("torch"):
            x = x.detach().cpu().numpy()
        arr = _np.asarray(x)
        if arr.dtype == object or not (
            _np.issubdtype(arr.dtype, _np.number) or arr.dtype == _np.bool_
        ):
            raise TypeError(f"a {type(x).__name__} holding {arr.dtype} values, not numbers")
        return _np.array(arr, copy=True, subok=False)

    def _type_name(x):
        if isinstance(x, bool):
            return "bool"
        if isinstance(x, float):
            return "float"
        if isinstance(x, int):
            return "int"
        t = type(x)
        return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"

    call_args = [_copy.deepcopy(a) for a in args]
    call_kwargs = {k: _copy.deepcopy(v) for k, v in kwargs.items()}
    snapshot = [_copy.deepcopy(a) for a in call_args]
    out = {
        "values": [],
        "types": [],
        "is_tuple": False,
        "error_type": None,
        "error": None,
        "modified": [],
        "returned_none": False,
        "conversion_error": None,
        "warnings": [],
        "raised_in": None,
    }

    def _raised_in(tb):
        # the innermost frame below this one in the student's code: a notebook's (or a sample's)
        # module, not a library's (numpy.*, the standard library) nor the grader's
        where = None
        while tb is not None:
            name = tb.tb_frame.f_code.co_name
            if tb.tb_frame.f_globals.get("__name__") in (None, "__main__") and name[:1] != "<":
                where = name[:100]
            tb = tb.tb_next
        return where

    with _warnings.catch_warnings(record=True) as caught:
        _warnings.simplefilter("always")
        try:
            result = fn(*call_args, **call_kwargs)
        except BaseException as exc:  # noqa: BLE001 - a student's SystemExit must not end grading
            if isinstance(exc, KeyboardInterrupt):
                raise
            out["error_type"] = type(exc).__name__
            out["error"] = str(exc)[:500]
            out["raised_in"] = _raised_in(exc.__traceback__.tb_next)
    seen = [f"{w.category.__name__}: {w.message}"[:200] for w in caught]
    kept = [t for t, w in zip(seen, caught, strict=True) if issubclass(w.category, RuntimeWarning)]
    out["warnings"] = list(dict.fromkeys(kept))[:20]
    if out["error_type"] is not None:
        return out
    graded = graded_args(output)
    for i, (before, after) in enumerate(zip(snapshot, call_args, strict=True)):
        if i not in graded and not same_leaves(before, dict(array_leaves(after))):
            out["modified"].append(i)
    out["returned_none"] = result is None
    if output == "return":
        items = list(result) if isinstance(result, (tuple, list)) else [result]
        out["is_tuple"] = isinstance(result, (tuple, list))
    else:
        items = [call_args[i] for i in graded]
    try:
        for item in items:
            out["types"].append(_type_name(item))
            out["values"].append(_plain(item))
    except BaseException as exc:  # noqa: BLE001
        if isinstance(exc, KeyboardInterrupt):
            raise
        out["values"] = []
        out["conversion_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
    return out


def companion(fn, calls, whole=False) -> list:
    """What a second function of the student's gives on ``calls`` (argument tuples), one float
    per call, None where it raised or did not return one number: a judge reads it to tell a
    mistake of the graded function from one it inherits (best_dim over the student's own
    heldout_error). ``whole``: the whole return instead, per call None or one
    [type name, dtype, shape, flat values] per element (a tied gradient over the student's own
    untied one); ``whole`` an output of :func:`call` that grades arguments (``("args", (0, 1,
    2))``): the whole of those arguments after the call, the same way (what an in-place step
    that returns None leaves in E, m and v). ``fn`` None or not callable: None for every call."""
    output = whole if isinstance(whole, (list, tuple)) else "return"
    out = []
    for args in calls:
        r = call(fn, args, {}, output) if callable(fn) else {"error_type": "missing", "values": []}
        if whole:
            ok = r["error_type"] is None and r["values"]
            out.append(
                [
                    [t, str(v.dtype), list(v.shape), v.astype(float).reshape(-1).tolist()]
                    for t, v in zip(r["types"], r["values"], strict=True)
                    if v.dtype.kind in "biuf"
                ]
                if ok
                else None
            )
            continue
        v = r["values"][0] if r["error_type"] is None and len(r["values"]) == 1 else None
        out.append(float(v.reshape(-1)[0]) if v is not None and v.size == 1 else None)
    return out


# The graded functions use only numpy and the standard library (every exercise's first cell says
# so). Gradescope's environment has none of these, and every other grading kernel (make grade,
# the cluster, plain nbgrader) refuses to import them (:func:`block_frameworks`), so an answer
# that uses one is graded the same everywhere, with this message; in JupyterLab, where they
# import, the visible tests say so first (:func:`frameworks_used`).
FRAMEWORKS = ("torch", "jax", "tensorflow")
NOT_WHEN_GRADED = "is not available when your notebook is graded"
RULE = (
    "%s " + NOT_WHEN_GRADED + ": the graded functions use only numpy and the standard library "
    "(see the notebook's first cell)"
)


def not_available(name: str) -> str:
    """What a student reads about a framework the graded functions may not use."""
    return RULE % name


def block_frameworks(names, rule):
    """Make ``import`` of each of ``names`` (and of their submodules) raise ModuleNotFoundError
    with ``rule % name``, in this interpreter, from now on: a finder first on ``sys.meta_path``.
    Run by the grading kernel before any cell of the notebook (its source is the kernel's
    exec_line, :func:`blocker_line`); a module imported already is left alone."""
    import sys

    class NotWhenGraded:
        """Refuses the modules the graded functions may not use."""

        def find_spec(self, fullname, path=None, target=None):
            root = fullname.partition(".")[0]
            if root in names:
                raise ModuleNotFoundError(rule % root, name=fullname)
            return None

        def invalidate_caches(self):
            pass

    sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "NotWhenGraded"]
    sys.meta_path.insert(0, NotWhenGraded())


def blocker_line() -> str:
    """The code a grading kernel runs first (an ``--IPKernelApp.exec_lines`` value): defines
    :func:`block_frameworks`, calls it on :data:`FRAMEWORKS`, and leaves no name behind. No
    ``{name}`` in it: jupyter_client fills such fields of a kernel's command line."""
    import re

    code = (
        inspect.getsource(block_frameworks)
        + f"\n\nblock_frameworks({FRAMEWORKS!r}, {RULE!r})\ndel block_frameworks\n"
    )
    if re.search(r"\{[A-Za-z0-9_]+\}", code):
        raise ValueError("the blocker's code holds a {name} that jupyter_client would replace")
    return code


def frameworks_used(fn, names=FRAMEWORKS, depth: int = 3) -> list:
    """The frameworks among ``names`` that ``fn`` refers to: a name its code (nested functions
    included) loads or imports (``torch.tensor``, ``import torch`` inside it), or a global it
    reads that is one of their modules, functions or classes (``F`` for
    ``torch.nn.functional``, ``tensor`` from ``from torch import tensor``); through the
    notebook's own functions it calls too, ``depth`` levels deep. Static and cheap: a
    function that never runs the line still counts."""
    import types as _types

    found, seen, todo = set(), set(), [(fn, 0)]
    while todo:
        f, level = todo.pop()
        code, ns = getattr(f, "__code__", None), getattr(f, "__globals__", None)
        if not isinstance(code, _types.CodeType) or id(code) in seen or not isinstance(ns, dict):
            continue
        seen.add(id(code))
        codes = [code]
        while codes:
            c = codes.pop()
            codes += [k for k in c.co_consts if isinstance(k, _types.CodeType)]
            for name in c.co_names:
                found |= {name.partition(".")[0]} & set(names)
                obj = ns.get(name)
                if isinstance(obj, _types.ModuleType):
                    origin = obj.__name__
                elif isinstance(obj, (type, _types.FunctionType, _types.BuiltinFunctionType)):
                    origin = getattr(obj, "__module__", None) or ""
                else:
                    continue
                found |= {str(origin).partition(".")[0]} & set(names)
                if isinstance(obj, _types.FunctionType) and obj.__globals__ is ns and level < depth:
                    todo.append((obj, level + 1))
    return [n for n in names if n in found]


def source() -> str:
    """The source text shipped into the kernel: same_array, array_leaves, same_leaves,
    graded_args, call and companion, verbatim."""
    parts = (same_array, array_leaves, same_leaves, graded_args, call, companion)
    return "\n\n".join(inspect.getsource(f) for f in parts)
