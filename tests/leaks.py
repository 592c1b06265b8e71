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
    """The calls in a helper cell's source of a function (``svd``, ``np.linalg.svd``, an alias
    bound by ``from numpy.linalg import svd as f`` included) whose name is in ``names``."""
    import ast

    tree = ast.parse(source)
    aliases = set(names)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            aliases |= {a.asname or a.name for a in node.names if a.name in names}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
        if name in aliases:
            found.append(f"line {node.lineno}: {ast.unparse(node)[:80]}")
    return found


# ------------------------------------------------------------------------------------------------
# A released helper cell that answers an exercise: a mistake model that, with its default
# arguments, computes the right result is a solution shipped to every student
# ------------------------------------------------------------------------------------------------
def _ways(helper):
    """The ways a student could call a helper as their answer: on the answer's own arguments,
    or on a Case built from them (with or without a ``want``), every other argument left at its
    default."""
    from autograder.checks.judges import Case

    yield "f(*args)", lambda *a, **k: helper(*a, **k)
    yield "f(Case(args))", lambda *a, **k: helper(Case("a student's call", a, k))
    yield "f(Case(args), None)", lambda *a, **k: helper(Case("a student's call", a, k), None)


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
    helpers = [
        (n, f)
        for n, f in vars(mod).items()
        if inspect.isfunction(f) and f.__module__ == mod.__name__
    ]
    found = []
    for fname, items in _shown_cases(assignment).items():
        wants = [outcome_of(check.reference(), case, companion_too=False) for check, case in items]
        for hname, helper in helpers:
            for how, answer in _ways(helper):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    passes = all(
                        right(check, case, answer, want)
                        for (check, case), want in zip(items, wants, strict=True)
                    )
                if passes:
                    found.append(f"{hname} as {fname}, called {how}")
    return found
