"""Finding solution code in public files (exercises/, the built site, the student copy).

A leak of a solution is a run of its lines, so we look for every pair of consecutive substantive
lines of a solution or hidden-test region, after normalising the public text the same way (HTML
tags and highlighting removed, notebooks reduced to their cell sources and outputs, each line
stripped of its trailing comment and its runs of spaces collapsed, so that a copy with other
comments or spacing is found too). Single generic lines such as ``if mode == "mean":`` may appear in a chapter's own
examples; a pair of consecutive solution lines may not.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from autograder import nb as notebooks
from autograder.course import assignments, source_notebook

SECRET_MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
TEXT_SUFFIXES = {".html", ".txt", ".md", ".ipynb", ".py", ".js", ".json", ".yml", ""}


# A trailing comment: whitespace, '#', the rest of the line (not a '#' inside a string literal).
_COMMENT = re.compile(r"\s+#(?![^\"']*[\"'][^\"']*$).*$")


def canonical(line: str) -> str:
    """A line without its trailing comment, its runs of whitespace collapsed to one space."""
    return " ".join(_COMMENT.sub("", line).split())


def _substantive(line: str) -> bool:
    s = line.strip()
    return len(s) >= 6 and not s.startswith("#") and s not in {'"""', "'''"}


def secret_regions(assignment: str) -> list[list[str]]:
    """The stripped substantive lines of each solution / hidden-test region of a source notebook."""
    regions = []
    for cell in notebooks.read(source_notebook(assignment))["cells"]:
        current = None
        for line in notebooks.source(cell).splitlines():
            s = canonical(line)
            if s.startswith("### BEGIN"):
                current = []
                continue
            if s.startswith("### END"):
                if current:
                    regions.append(current)
                current = None
                continue
            if current is not None and _substantive(s):
                current.append(s)
    return regions


def secret_pairs() -> dict[str, str]:
    """'line\\nnext line' -> assignment, for every pair of consecutive secret lines."""
    pairs = {}
    for a in assignments():
        for region in secret_regions(a):
            for first, second in zip(region, region[1:], strict=False):
                pairs[f"{first}\n{second}"] = a
            if len(region) == 1 and len(region[0]) >= 30:  # a one-line answer must not leak either
                pairs[region[0]] = a
    return pairs


def normalise(path: Path, text: str) -> str:
    if path.suffix == ".ipynb":
        try:
            nb = json.loads(text)
            parts = []
            for cell in nb.get("cells", []):
                parts.append(notebooks.source(cell))
                for out in cell.get("outputs", []):
                    t = out.get("text") or out.get("data", {}).get("text/plain", "")
                    parts.append(t if isinstance(t, str) else "".join(t))
            text = "\n".join(parts)
        except json.JSONDecodeError:
            pass
    elif path.suffix == ".html":
        text = html.unescape(re.sub(r"<[^>]+>", "", text))
    return "\n".join(s for s in (canonical(line) for line in text.splitlines()) if s)


def find_leaks(paths) -> list[str]:
    """Every (file, secret) found; markers count as secrets too."""
    pairs = secret_pairs()
    assert pairs, "expected solution lines to look for"
    found = []
    for path in paths:
        if not path.is_file() or path.suffix not in TEXT_SUFFIXES:
            continue
        raw = path.read_text(encoding="utf-8", errors="replace")
        text = normalise(path, raw)
        for marker in SECRET_MARKERS:
            if marker in raw or marker in text:
                found.append(f"{path}: {marker}")
        for pair, a in pairs.items():
            if pair in text:
                found.append(f"{path}: lines of the {a} solution: {pair!r}")
    return found


# Calls a chapter's pasted test helpers must not make: they would compute (close to) a Part's
# solution in the student's notebook. Exercise 7's heldout_error is a rank-d SVD fit of M_train,
# so its helpers state the curves of the mistakes that need one (meta["wrong_curves"]) as
# numbers instead of computing them.
HELPER_FORBIDDEN_CALLS = {"07_choosing_d": {"svd"}}


def forbidden_helper_calls(source: str, names) -> list[str]:
    """The calls in a helper cell's source of a function whose name is in ``names`` (``svd``),
    however it is reached: by its name or as an attribute (``np.linalg.svd``, ``la.svd`` after
    ``import numpy.linalg as la``), through an alias (``from numpy.linalg import svd as f``,
    ``f = np.linalg.svd``, ``g = f``, ``f = functools.partial(svd, full_matrices=False)``,
    ``getattr(np.linalg, "svd")``), with positional or keyword arguments."""
    import ast

    tree = ast.parse(source)
    aliases = set(names)

    def reaches(e) -> bool:  # an expression that is (a partial of) a forbidden function
        if isinstance(e, ast.Name):
            return e.id in aliases
        if isinstance(e, ast.Attribute):
            return e.attr in aliases
        if isinstance(e, ast.Call):
            f = e.func
            fname = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if fname == "partial" and e.args:
                return reaches(e.args[0])
            if fname == "getattr" and len(e.args) >= 2:
                key = e.args[1]
                return isinstance(key, ast.Constant) and key.value in aliases
        return False

    grown = True
    while grown:  # aliases of aliases, until none is new
        before = len(aliases)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                aliases |= {a.asname or a.name for a in node.names if a.name in aliases}
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value:
                if reaches(node.value):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    aliases |= {t.id for t in targets if isinstance(t, ast.Name)}
        grown = len(aliases) > before
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and reaches(node.func):
            found.append(f"line {node.lineno}: {ast.unparse(node)[:80]}")
    return found


# ------------------------------------------------------------------------------------------------
# A released helper cell that answers an exercise: a mistake model that, with its default
# arguments, computes the right result is a solution shipped to every student
# ------------------------------------------------------------------------------------------------
def _keyword_values(source: str) -> dict[str, list]:
    """keyword -> the literal values (``kind="stable"``, ``int64=True``) passed by that keyword
    in some call of ``source``: the values a reader of the pasted module sees to try."""
    import ast

    out: dict[str, list] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg and isinstance(kw.value, ast.Constant):
                    values = out.setdefault(kw.arg, [])
                    if kw.value.value not in values:
                        values.append(kw.value.value)
    return out


def _overrides(helper, keywords):
    """(name, value) for each argument of ``helper`` with a default that a student could pass by
    keyword instead: a value some call in the module passes by that keyword, or the other bool."""
    import inspect

    try:
        params = inspect.signature(helper).parameters.values()
    except (TypeError, ValueError):
        return
    for p in params:
        if p.default is inspect.Parameter.empty or p.kind not in (
            p.POSITIONAL_OR_KEYWORD,
            p.KEYWORD_ONLY,
        ):
            continue
        values = list(keywords.get(p.name, []))
        if isinstance(p.default, bool):
            values.append(not p.default)
        seen = []
        for v in values:
            if v is not p.default and v != p.default and v not in seen:
                seen.append(v)
                yield p.name, v


def _ways(helper, keywords=None):
    """The ways a student could call a helper as their answer: on the answer's own arguments,
    or on a Case built from them (with or without a ``want``), every other argument left at its
    default, or one of them given by keyword (:func:`_overrides`, from ``keywords``, the
    :func:`_keyword_values` of the module)."""
    from autograder.checks.judges import Case

    def forms(extra):
        def case(a, k):
            return Case("a student's call", a, k)

        yield "f(*args{})", lambda *a, **k: helper(*a, **{**k, **extra})
        yield "f(Case(args){})", lambda *a, **k: helper(case(a, k), **extra)
        yield "f(Case(args), None{})", lambda *a, **k: helper(case(a, k), None, **extra)

    for how, answer in forms({}):
        yield how.format(""), answer
    for name, value in _overrides(helper, keywords or {}):
        for how, answer in forms({name: value}):
            yield how.format(f", {name}={value!r}"), answer


def _helpers(mod) -> list:
    """(name, function) for each function of a pasted module a student can call: those it
    defines, under every name it binds them to (``f = _backward_as``, an alias of one imported
    ``as`` another name) but tried once, and each ``functools.partial`` of one."""
    import functools
    import inspect

    out, seen = [], set()
    for n, f in vars(mod).items():
        target = f.func if isinstance(f, functools.partial) else f
        if not (inspect.isfunction(target) and target.__module__ == mod.__name__):
            continue
        if id(f) not in seen:
            seen.add(id(f))
            out.append((n, f))
    return out


def _shown_cases(assignment):
    """function name -> [(check, case)]: the hidden checks' shown cases (the visible tests state
    them), by the function they grade."""
    from autograder.checks import module_for
    from autograder.checks.framework import registry

    out: dict = {}
    for check in registry(module_for(assignment)).values():
        for case in check.cases():
            if case.meta.get("shown"):
                out.setdefault(check.function, []).append((check, case))
    return out


def helpers_that_answer(assignment: str) -> list[str]:
    """Every function of the chapter's pasted public module that, called as a student's answer in
    one of :func:`_ways`, passes every shown case of a graded function (in any dtype)."""
    import importlib
    import inspect
    import warnings

    from autograder.checks.judges import WRONG_DTYPE, mistake_id, outcome_of

    def right(check, case, answer, want):  # right values (in any dtype: .astype is no work)
        message = check.judge(case, outcome_of(answer, case, companion_too=False), want)
        return not message or mistake_id(message) == WRONG_DTYPE.name

    mod = importlib.import_module(f"autograder.checks.public.ch{assignment[:2]}")
    try:
        source = inspect.getsource(mod)
    except (OSError, TypeError):  # a module made from a string states its source
        source = getattr(mod, "__source__", "")
    keywords = _keyword_values(source)
    found = []
    for fname, items in _shown_cases(assignment).items():
        wants = [outcome_of(check.reference(), case, companion_too=False) for check, case in items]
        for hname, helper in _helpers(mod):
            for how, answer in _ways(helper, keywords):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    passes = all(
                        right(check, case, answer, want)
                        for (check, case), want in zip(items, wants, strict=True)
                    )
                if passes:
                    found.append(f"{hname} as {fname}, called {how}")
    return found
