"""Taking the verdict out of the kernel: hand a check's inputs in, read plain outcomes back.

For each :class:`~autograder.framework.Check` of an assignment the trusted grader

1. writes the check's cases into an ``.npz`` file in the submission's scratch folder
   (:func:`write_inputs`; arrays as arrays, everything else described in a small JSON spec);
2. runs :func:`harness_code` in the sandboxed kernel: the source of
   :mod:`autograder.checks.harness` (``call``, ``same_array`` and ``same_leaves``, shipped as text) plus a loop that calls the student's function by
   name on every case and writes the outcome dicts (JSON) and arrays (``.npz``) back;
3. reads them with :func:`read_outcomes`: no pickles (``allow_pickle=False``), no symlinks, no
   compressed archives, numbers only, bounded sizes. Whether an input was modified is decided here,
   from the arguments the kernel hands back after the call, not by code in the kernel.

Nothing the kernel returns is ever called or compared with its own methods, and the reference is
computed in this process by ``Check.verdict``: the kernel never sees it.
"""

from __future__ import annotations

import io
import json
import os
import secrets
import stat
import zipfile
from pathlib import Path

import numpy as np

from ..checks import harness
from ..checks.framework import Case, Outcome

MAX_OUT_BYTES = 256 * 1024**2  # an outcome file larger than this is refused
MAX_JSON_BYTES = 4 * 1024**2
MAX_ELEMENTS = 2**25  # per returned array
NUMERIC_KINDS = "biufc"


class HarnessError(Exception):
    """The kernel's answer is missing or not acceptable; the message is for the student."""


# ------------------------------------------------------------------------------------------
# Inputs: cases -> one .npz (arrays + a JSON spec), written without following links
# ------------------------------------------------------------------------------------------
def _encode(x, arrays: dict) -> list:
    if isinstance(x, np.ndarray):
        if x.dtype.kind not in NUMERIC_KINDS:
            raise TypeError(f"case argument of dtype {x.dtype} cannot be handed to the kernel")
        key = f"x{len(arrays)}"
        arrays[key] = x
        return ["nd", key]
    if isinstance(x, np.generic):
        key = f"x{len(arrays)}"
        arrays[key] = np.asarray(x)
        return ["np0", key]
    if isinstance(x, np.random.Generator):
        # A seeded generator travels as its bit generator's state: the kernel rebuilds the same
        # stream, and the reference (run here on its own copy) draws the same numbers.
        bg = x.bit_generator
        return ["rng", [type(bg).__name__, _encode(bg.state, arrays)]]
    if x is None or isinstance(x, (bool, int, float, str)):
        return ["py", x]
    if isinstance(x, tuple):
        return ["tuple", [_encode(v, arrays) for v in x]]
    if isinstance(x, list):
        return ["list", [_encode(v, arrays) for v in x]]
    if isinstance(x, dict) and all(isinstance(k, str) for k in x):
        return ["dict", {k: _encode(v, arrays) for k, v in x.items()}]
    raise TypeError(f"case argument of type {type(x).__name__} cannot be handed to the kernel")


def encode_cases(cases: list[Case]) -> bytes:
    """The bytes of the inputs .npz for a list of cases (deterministic)."""
    arrays: dict = {}
    spec = []
    for case in cases:
        graded = list(harness.graded_args(case.output))
        if case.output == "return":
            output = "return"
        elif case.output[0] == "arg":
            output = ["arg", graded[0]]
        else:
            output = ["args", graded]
        entry = {
            "args": [_encode(a, arrays) for a in case.args],
            "kwargs": {k: _encode(v, arrays) for k, v in case.kwargs.items()},
            "output": output,
        }
        if "companion" in case.meta:  # a second student function, called on these argument lists
            name, calls, *whole = case.meta["companion"]
            entry["companion"] = [name, [[_encode(a, arrays) for a in c] for c in calls], *whole]
        spec.append(entry)
    arrays["__spec__"] = np.frombuffer(json.dumps({"cases": spec}).encode(), dtype=np.uint8)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def write_new(path: Path, data: bytes) -> None:
    """Create ``path`` (never an existing file or a link the kernel planted) and write data."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def read_regular(path: Path, limit: int) -> bytes:
    """Read a plain file the kernel wrote: no links, no devices, at most ``limit`` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise HarnessError("no results came back") from None
    except OSError as exc:
        raise HarnessError(f"the results could not be read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise HarnessError("the results are not a plain file")
        if st.st_size > limit:
            raise HarnessError(f"the results are too large ({st.st_size:,} bytes)")
        return f.read(limit + 1)[:limit]


# ------------------------------------------------------------------------------------------
# The code that runs in the kernel
# ------------------------------------------------------------------------------------------
_LOOP = r"""
def _course_run(user_ns, fname, in_path, out_json, out_npz):
    import json as _json
    import os as _os

    import numpy as _np

    def _dec(x, data):
        kind, v = x
        if kind == "nd":
            return _np.array(data[v])
        if kind == "np0":
            return data[v][()]
        if kind == "py":
            return v
        if kind == "tuple":
            return tuple(_dec(e, data) for e in v)
        if kind == "list":
            return [_dec(e, data) for e in v]
        if kind == "dict":
            return {k: _dec(e, data) for k, e in v.items()}
        if kind == "rng":
            bg = getattr(_np.random, v[0])()
            bg.state = _dec(v[1], data)
            return _np.random.Generator(bg)
        raise ValueError(kind)

    result = {"status": "ok", "outcomes": [], "values": [], "after": []}
    fn = user_ns.get(fname)
    arrays = {}
    if fn is None:
        result["status"] = "missing"
    elif not callable(fn):
        result["status"] = "not_callable"
        result["type"] = type(fn).__name__
    else:
        with _np.load(in_path, allow_pickle=False) as data:
            spec = _json.loads(bytes(data["__spec__"]).decode())
            for k, case in enumerate(spec["cases"]):
                args = [_dec(a, data) for a in case["args"]]
                kwargs = {n: _dec(a, data) for n, a in case["kwargs"].items()}
                output = case["output"] if case["output"] == "return" else tuple(case["output"])
                seen = []

                def spy(*a, **kw):
                    seen.append(a)
                    return fn(*a, **kw)

                out = call(spy, args, kwargs, output)
                keys = []
                for j, v in enumerate(out.pop("values")):
                    keys.append(f"v{k}_{j}")
                    arrays[keys[-1]] = v
                after = []
                for i, a in enumerate(seen[0] if seen else ()):
                    for n, (path, leaf) in enumerate(array_leaves(a)[:4096]):
                        if type(leaf) is _np.ndarray and leaf.dtype.kind in "biufc":
                            where = [p if type(p) is int else str(p)[:100] for p in path]
                            after.append([i, where, f"a{k}_{i}_{n}"])
                            arrays[after[-1][2]] = _np.array(leaf, copy=True)
                out.pop("modified", None)
                if case.get("companion") and out["error_type"] != "NotImplementedError":
                    cname, calls, *whole = case["companion"]
                    calls = [[_dec(a, data) for a in c] for c in calls]
                    out["companion"] = companion(user_ns.get(cname), calls, whole[0] if whole else False)
                result["outcomes"].append(out)
                result["values"].append(keys)
                result["after"].append(after)
                if out["error_type"] == "NotImplementedError":
                    break
    with open(out_npz, "wb") as f:
        _np.savez(f, **arrays)
    with open(out_json + ".part", "w") as f:
        _json.dump(result, f)
    _os.replace(out_json + ".part", out_json)
"""


def harness_source() -> str:
    """harness.call, harness.same_array and the rest of harness.source(), verbatim, and the loop
    above: numpy and the standard library only."""
    return harness.source() + "\n" + _LOOP


HARNESS_GONE = "the grader's harness is gone from the kernel"


def harness_code(
    fname: str, in_path: Path, out_json: Path, out_npz: Path, define: bool = True
) -> str:
    """The code executed in the kernel for one check (it leaves no names behind). ``define``:
    the harness is compiled and kept as the module ``__course_grader__`` (in ``sys.modules``, not
    in the student's namespace); without it the kernel's kept harness runs (the later checks of
    one kernel: no 6 KB source to send and compile each time). Keeping it gives the student's
    code nothing new: it runs in the same process as the harness either way, and every outcome
    is judged here."""
    call = (
        f"_course_sys.modules['__course_grader__']._course_run(globals(), {fname!r}, "
        f"{str(in_path)!r}, {str(out_json)!r}, {str(out_npz)!r})\n"
    )
    if not define:  # gone (the student's code removed it): HARNESS_GONE, before any call
        return (
            "import sys as _course_sys\n"
            "if not hasattr(_course_sys.modules.get('__course_grader__'), '_course_run'):\n"
            f"    del _course_sys\n    raise RuntimeError({HARNESS_GONE!r})\n"
            f"{call}del _course_sys\n"
        )
    return (
        "import sys as _course_sys, types as _course_types\n"
        "_course_grader = _course_types.ModuleType('__course_grader__')\n"
        f"exec(compile({harness_source()!r}, '<grader>', 'exec'), _course_grader.__dict__)\n"
        "_course_sys.modules['__course_grader__'] = _course_grader\n"
        f"{call}del _course_sys, _course_types, _course_grader\n"
    )


def new_paths(scratch: Path) -> tuple[Path, Path, Path]:
    """Fresh, unguessable file names for one exchange (inputs, outcome json, outcome npz)."""
    token = secrets.token_hex(8)
    return scratch / f"in-{token}.npz", scratch / f"out-{token}.json", scratch / f"out-{token}.npz"


# ------------------------------------------------------------------------------------------
# Reading the kernel's answer
# ------------------------------------------------------------------------------------------
def _load_npz(data: bytes) -> dict[str, np.ndarray]:
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
    except zipfile.BadZipFile:
        raise HarnessError("the returned arrays are not a valid .npz file") from None
    for info in infos:
        if info.compress_type != zipfile.ZIP_STORED or info.file_size > MAX_OUT_BYTES:
            raise HarnessError("the returned arrays are packed in an unexpected way")
    out = {}
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            for key in npz.files:
                arr = npz[key]
                if not isinstance(arr, np.ndarray) or arr.dtype.kind not in NUMERIC_KINDS:
                    raise HarnessError(
                        f"a returned array holds {getattr(arr, 'dtype', '?')} values, not numbers"
                    )
                if arr.size > MAX_ELEMENTS:
                    raise HarnessError(f"a returned array is too large ({arr.size:,} elements)")
                out[key] = arr
    except HarnessError:
        raise
    except Exception as exc:  # noqa: BLE001 - anything malformed is the submission's problem
        raise HarnessError(
            f"the returned arrays could not be read ({type(exc).__name__})"
        ) from None
    return out


def _opt_str(d: dict, key: str, limit: int) -> str | None:
    v = d.get(key)
    if v is None:
        return None
    if not isinstance(v, str):
        raise HarnessError("malformed results")
    return v[:limit]


def _modified(case: Case, after: dict[int, dict]) -> list[int]:
    """Indices of the arguments whose arrays (nested in lists, tuples and dicts too) differ after
    the call: decided here, not in the kernel, by the rule the harness uses in-process
    (harness.same_leaves). ``after``: argument index -> {path: array} as the kernel handed back."""
    graded = harness.graded_args(case.output)
    return [
        i
        for i, before in enumerate(case.args)
        if i not in graded and not harness.same_leaves(before, after.get(i, {}))
    ]


def _after_arrays(after: list, arrays: dict) -> dict[int, dict]:
    """The kernel's list of [argument index, path, key] as {index: {path: array}}; a path is a
    list of indices and keys (at most 4, ints or strings)."""
    out: dict[int, dict] = {}
    for entry in after:
        if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[1], list)):
            raise HarnessError("malformed results")
        i, path, key = entry
        ok = len(path) <= 4 and all(type(p) is int or isinstance(p, str) for p in path)
        if type(i) is not int or not ok or not isinstance(key, str) or key not in arrays:
            raise HarnessError("malformed results")
        out.setdefault(i, {})[tuple(path)] = arrays[key]
    return out


def _str_list(d: dict, key: str, count: int, limit: int) -> list:
    v = d.get(key, [])
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise HarnessError("malformed results")
    return [x[:limit] for x in v[:count]]


def read_outcomes(cases: list[Case], out_json: Path, out_npz: Path) -> list[Outcome]:
    """Outcome objects for the cases the kernel reported on (maybe fewer, after a stub)."""
    try:
        result = json.loads(read_regular(out_json, MAX_JSON_BYTES))
    except HarnessError:
        raise
    except (ValueError, UnicodeDecodeError):
        raise HarnessError("the results are not valid JSON") from None
    if not isinstance(result, dict):
        raise HarnessError("malformed results")
    status = result.get("status")
    if status == "missing":
        raise HarnessError("missing")
    if status == "not_callable":
        raise HarnessError(f"not_callable:{str(result.get('type'))[:60]}")
    outcomes, values, afters = result.get("outcomes"), result.get("values"), result.get("after")
    if status != "ok" or not all(isinstance(x, list) for x in (outcomes, values, afters)):
        raise HarnessError("malformed results")
    if not (len(outcomes) == len(values) == len(afters)) or len(outcomes) > len(cases):
        raise HarnessError("malformed results")
    arrays = _load_npz(read_regular(out_npz, MAX_OUT_BYTES))
    got = []
    for case, d, keys, after in zip(cases, outcomes, values, afters, strict=False):
        if not isinstance(d, dict) or not isinstance(keys, list) or not isinstance(after, list):
            raise HarnessError("malformed results")
        try:
            vals = [arrays[k] for k in keys]
        except (KeyError, TypeError):
            raise HarnessError("malformed results") from None
        after_arrays = _after_arrays(after, arrays)
        types = d.get("types", [])
        if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
            raise HarnessError("malformed results")
        got.append(
            Outcome(
                values=vals,
                types=[t[:100] for t in types[:50]],
                is_tuple=bool(d.get("is_tuple") is True),
                error_type=_opt_str(d, "error_type", 200),
                error=_opt_str(d, "error", 500),
                modified=_modified(case, after_arrays),
                returned_none=bool(d.get("returned_none") is True),
                conversion_error=_opt_str(d, "conversion_error", 400),
                warnings=_str_list(d, "warnings", 20, 200),
                raised_in=_opt_str(d, "raised_in", 100),
                companion=_companion(case, d.get("companion")),
            )
        )
    return got


def _companion(case: Case, values) -> list | None:
    """The kernel's companion results for a case that asked for them: one float or None per
    call (for a ``whole`` companion, per call None or one [type name, dtype, shape, flat
    numbers] per element), checked here (numbers only, as many as were asked); None for a case
    that asked none."""
    if "companion" not in case.meta or values is None:
        return None
    n = len(case.meta["companion"][1])
    ok = isinstance(values, list) and len(values) == n
    if ok and len(case.meta["companion"]) > 2:
        if not all(v is None or _whole_ok(v) for v in values):
            raise HarnessError("malformed results")
        return values
    if not ok or not all(v is None or isinstance(v, (int, float)) for v in values):
        raise HarnessError("malformed results")
    return [None if v is None else float(v) for v in values]


def _whole_ok(v) -> bool:
    """One call's whole return as the kernel describes it: [type, dtype, shape, flat] each."""

    def element(e):
        return (
            isinstance(e, list)
            and len(e) == 4
            and isinstance(e[0], str)
            and isinstance(e[1], str)
            and isinstance(e[2], list)
            and all(isinstance(k, int) and k >= 0 for k in e[2])
            and isinstance(e[3], list)
            and all(isinstance(f, (int, float)) for f in e[3])
            and len(e[3]) == int(np.prod(e[2], dtype=np.int64))
        )

    return isinstance(v, list) and all(element(e) for e in v)
