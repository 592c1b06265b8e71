"""Planted copies of an answer, as a student hiding a copy would make them: locals renamed, the
code laid out again, comments changed, functions reordered. The similarity report must flag them
(tests/test_report.py) and ``make semester`` plants some. Literals are kept as written."""

from __future__ import annotations

import ast
import builtins
import io
import keyword
import tokenize

COMMENTS = ["# accumulate here", "# the rows we need", "# done", "# see the notes"]


def _locals(tree: ast.Module) -> set[str]:
    """Names the functions assign that are not parameters (which callers pass by name)."""
    names: set[str] = set()
    for fn in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]:
        params = {a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]}
        params |= {a.arg for a in (fn.args.vararg, fn.args.kwarg) if a}
        stored = {
            n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
        names |= stored - params
    return names - set(dir(builtins)) - set(keyword.kwlist)


def _reordered(source: str, tree: ast.Module) -> str:
    """The top-level functions after the other statements, in reverse order."""
    lines = source.splitlines()
    segs = [
        (n, "\n".join(lines[n.lineno - 1 - len(getattr(n, "decorator_list", [])) : n.end_lineno]))
        for n in tree.body
    ]
    heads = [s for n, s in segs if not isinstance(n, ast.FunctionDef)]
    funcs = [s for n, s in segs if isinstance(n, ast.FunctionDef)]
    return "\n\n".join(heads + funcs[::-1]) + "\n"


def _renamed(toks: list, names: dict[str, str]) -> list:
    out, depth = [], 0
    for i, tok in enumerate(toks):
        kind, text = tok.type, tok.string
        depth += text in "([{" if kind == tokenize.OP else 0
        depth -= text in ")]}" if kind == tokenize.OP else 0
        before = toks[i - 1].string if i else ""
        after = toks[i + 1].string if i + 1 < len(toks) else ""
        keyword_arg = depth > 0 and after == "=" and before in "(,"
        if kind == tokenize.NAME and text in names and before != "." and not keyword_arg:
            text = names[text]
        elif kind == tokenize.COMMENT:
            text = COMMENTS[i % len(COMMENTS)]
        out.append((kind, text))
    return out


def disguise(source: str, seed: int = 0) -> str:
    """The same answer with its locals renamed, its top-level functions in reverse order, laid out
    again (tokenize's own spacing) and its comments replaced."""
    tree = ast.parse(source)
    names = {old: f"{old[:1]}_{seed}{i}" for i, old in enumerate(sorted(_locals(tree)))}
    text = _reordered(source, tree)
    toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    return tokenize.untokenize(_renamed(toks, names))
