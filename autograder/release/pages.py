"""Each chapter page as a notebook that runs where a student opens it (``make release``).

A page (``book/NN_slug.md``, a MyST markdown notebook) runs while the website builds, where
``myst_nb.glue`` and this repository's ``coursekit`` are at hand. Colab cannot open a ``.md``
file, and a student's kernel has neither. So every page gets a paired notebook next to it,
``book/NN_slug.ipynb``, which sphinx-book-theme's launch buttons (Binder, Colab, JupyterHub)
open instead of the ``.md`` when it exists, and which the site offers as the page's download:

* a markdown cell that says what the notebook is, then a setup cell: ``coursekit/standalone.py``
  with the page's packages (pinned as in requirements.txt; installed on Colab, named elsewhere)
  and the source of every coursekit module the page imports (and that those import), served to
  ``import`` from memory, and a ``glue`` that prints;
* the page's cells in order, code unchanged but for ``from myst_nb import glue``;
* MyST markup that Jupyter does not render rewritten as plain Markdown: targets dropped, numbers
  of the text (``{glue:text}``) as ``name`` (the cell that computes each prints it), citations as
  (Author, year), cross-references as their text, equation labels as ``\\tag{n}``, admonitions as
  quotes (dropdowns as ``<details>``).

Generated, never edited by hand: ``tests/test_pages.py`` fails when a paired notebook drifts
from its page (or from coursekit). Nothing of autograder/ goes in: only coursekit, which is
published in the student copy anyway.
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
import sys
from pathlib import Path

from .. import nb as notebooks
from ..course import BOOK, ROOT

GLUE_IMPORT = re.compile(r"^from myst_nb import glue\n", re.MULTILINE)
# Import name -> distribution, for every package a page (or a coursekit module) imports.
DISTRIBUTIONS = {
    "numpy": "numpy",
    "torch": "torch",
    "matplotlib": "matplotlib",
    "english_words": "english-words",
    "IPython": "ipython",
    "fbgemm_gpu": "fbgemm-gpu-cpu",
}
SETUP_HEAD = """\
# @title Setup: run this cell first
# Generated from book/{page}.md by `make release` (edit the page, never this notebook).
# On the course website the page's cells ran while the site was built. Here this cell
# * checks the packages the page needs (on Colab it installs any that are missing):
#   {packages};
# * defines glue(), which prints each number that the text shows as `name`;
# * holds the course helpers the page imports, {modules}:
#   `import coursekit...` in the cells below imports the copies in COURSEKIT.
"""
INTRO = """\
> **A page of the course website, as a notebook:** *{title}*.
> Run the setup cell first, then the cells in order (or *Run all*). Numbers that the website
> writes into the text are shown here as `name`: the cell that computes each one prints it as
> `name: value`. Citations refer to the course's reference list.{exercise}
"""


def page_sources() -> list[Path]:
    """The pages that are notebooks (a kernelspec in their front matter), in file order."""
    return [p for p in sorted(BOOK.glob("*.md")) if _read_page(p).metadata.get("kernelspec")]


def _read_page(path: Path):
    from myst_nb.core.read import read_myst_markdown_notebook

    return read_myst_markdown_notebook(path.read_text(encoding="utf-8"))


def paired_path(page: Path) -> Path:
    return page.with_suffix(".ipynb")


def write_pages(out: Path = BOOK) -> list[Path]:
    """Write every page's paired notebook into ``out`` (default: next to the pages)."""
    written = []
    for page in page_sources():
        path = out / paired_path(page).name
        notebooks.write(page_notebook(page), path)
        written.append(path)
    return written


def page_notebook(page: Path) -> dict:
    """The paired notebook of one page (nbformat 4.5, no outputs, stable cell ids)."""
    source = _read_page(page)
    cells = [dict(c) for c in source.cells]
    code = [c["source"] for c in cells if c["cell_type"] == "code"]
    modules = coursekit_modules(code)
    packages = required_packages(code + [inspect_source(m) for m in modules])
    numbers = _equation_numbers([c["source"] for c in cells if c["cell_type"] == "markdown"])
    body = []
    for cell in cells:
        if cell["cell_type"] == "markdown":
            text = to_markdown(cell["source"], numbers, page.stem)
            if text.strip():
                body.append(_cell("markdown", text, {}))
        else:
            meta = {k: v for k, v in cell.get("metadata", {}).items() if k in ("tags", "mystnb")}
            body.append(_cell("code", GLUE_IMPORT.sub("", cell["source"]), meta))
    head = [
        _cell("markdown", _intro(page, body), {}),
        _cell("code", setup_cell(page.stem, modules, packages), _SETUP_META),
    ]
    nb_cells = head + body
    for i, cell in enumerate(nb_cells):
        cell["id"] = f"{page.stem[:40]}-{i:03d}"
    return {
        "cells": nb_cells,
        "metadata": {
            "course": {"page": f"book/{page.name}", "generated_by": "make release"},
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


# Collapsed in JupyterLab (source_hidden) and shown as a titled form in Colab (cellView).
_SETUP_META = {"cellView": "form", "jupyter": {"source_hidden": True}, "tags": ["setup"]}


def _cell(kind: str, text: str, meta: dict) -> dict:
    cell = {"cell_type": kind, "metadata": meta, "source": notebooks.split_lines(text)}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def _intro(page: Path, body: list[dict]) -> str:
    title = next(
        (line[2:] for c in body for line in "".join(c["source"]).splitlines() if line[:2] == "# "),
        page.stem,
    )
    exercise = f"exercises/{page.stem}/{page.stem}.ipynb"
    exercise = (
        f"\n> The chapter's exercise is a notebook of its own: `{exercise}`."
        if (ROOT / exercise).exists()
        else ""
    )
    return INTRO.format(title=title, exercise=exercise)


def inspect_source(module: str) -> str:
    import importlib

    return inspect.getsource(importlib.import_module(module))


def _imports(code: str) -> list[tuple[str, list[str]]]:
    """(module, names) for every import in a cell or module, function bodies included."""
    found = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.module, [a.name for a in node.names]))
    return found


def _is_coursekit_module(name: str) -> bool:
    parts = name.split(".")
    return parts[0] == "coursekit" and (
        (ROOT.joinpath(*parts).with_suffix(".py")).is_file()
        or (ROOT.joinpath(*parts) / "__init__.py").is_file()
    )


def coursekit_modules(code: list[str]) -> list[str]:
    """Every coursekit module the code imports, directly or through another coursekit module
    (``from coursekit import realdata`` included), with the package itself; sorted."""
    todo, found = list(code), set()
    while todo:
        for module, names in _imports(todo.pop()):
            candidates = [module] + [f"{module}.{n}" for n in names]
            for name in candidates:
                if _is_coursekit_module(name) and name not in found:
                    found.add(name)
                    todo.append(inspect_source(name))
    return sorted(found | {"coursekit"}) if found else []


def _pins() -> dict[str, str]:
    """requirements.txt's pins, by distribution name (lower case, - for _)."""
    pins = {}
    for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            pins[line.split("==")[0].strip().lower().replace("_", "-")] = line.replace(" ", "")
    return pins


def required_packages(code: list[str]) -> dict[str, str]:
    """{import name: pinned requirement} for every non-standard package the code imports."""
    pins, need = _pins(), {}
    for text in code:
        for module, _names in _imports(text):
            top = module.split(".")[0]
            if top in sys.stdlib_module_names or top in ("coursekit", "myst_nb"):
                continue
            if top not in DISTRIBUTIONS:
                raise ValueError(
                    f"a page imports {top}: add it to DISTRIBUTIONS in autograder/release/pages.py"
                )
            dist = DISTRIBUTIONS[top]
            need[top] = pins.get(dist, dist)
    return dict(sorted(need.items()))


def _literal(text: str) -> str:
    """A readable Python literal of a module's source: r'''...''' when that is exact."""
    raw = f"r'''{text}'''"
    if "'''" not in text and not text.endswith("\\"):
        try:
            if ast.literal_eval(raw) == text:
                return raw
        except SyntaxError:
            pass
    return repr(text)


def _without_docstring(source: str) -> str:
    """A module's source without its docstring (the cell's own comment says what it does)."""
    first = ast.parse(source).body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        source = "\n".join(source.splitlines()[first.end_lineno :])
    return source.strip("\n")


def setup_cell(stem: str, modules: list[str], packages: dict[str, str]) -> str:
    """The first code cell: coursekit/standalone.py, REQUIRES, COURSEKIT, the call."""
    from coursekit import standalone

    head = SETUP_HEAD.format(
        page=stem,
        packages=", ".join(packages.values()) or "none beyond Python's own",
        modules=", ".join(m for m in modules if m != "coursekit") or "none",
    )
    runtime = _without_docstring(inspect.getsource(standalone))
    requires = "REQUIRES = {\n" + "".join(f"    {k!r}: {v!r},\n" for k, v in packages.items())
    sources = "COURSEKIT = {\n" + "".join(
        f"    {m!r}: {_literal(inspect_source(m))},\n" for m in modules
    )
    return (
        f"{head}\n{runtime}\n\n\n{requires}}}\n{sources}}}\n"
        "glue = standalone(COURSEKIT, REQUIRES)\n"
    )


TARGET = re.compile(r"^\((?P<label>[\w-]+)\)=[ \t]*\n", re.MULTILINE)
EQ_LABEL = re.compile(r"^\$\$[ \t]*\((?P<label>[\w-]+)\)[ \t]*$", re.MULTILINE)
ROLE = re.compile(r"\{(?P<role>[a-z:]+)\}`(?P<body>[^`]*)`")
ADMONITION = re.compile(
    r"^:::\{admonition\}[ \t]*(?P<title>[^\n]*)\n(?P<options>(?::[a-z]+:[^\n]*\n)*)"
    r"(?P<body>.*?)\n:::[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
EXPLICIT = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$", re.DOTALL)


def _equation_numbers(markdown: list[str]) -> dict[str, int]:
    """Label -> number of each labelled display equation, in page order (as the website)."""
    labels = [m["label"] for text in markdown for m in EQ_LABEL.finditer(text)]
    return {label: i for i, label in enumerate(labels, start=1)}


@functools.cache
def _headings() -> dict[str, str]:
    """Label -> the heading it names, over every page of the book (for a bare {ref})."""
    found = {}
    for page in sorted(BOOK.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r"^\(([\w-]+)\)=[ \t]*\n+#+ (.+)$", text, re.MULTILINE):
            found[m[1]] = m[2].strip()
    return found


@functools.cache
def _citations() -> dict[str, tuple[str, str]]:
    """Key -> (authors as cited, year) for every entry of book/references.bib."""
    from pybtex.database import parse_file

    out = {}
    for key, entry in parse_file(str(BOOK / "references.bib")).entries.items():
        people = entry.persons.get("author", [])
        names = [" ".join(p.last_names).replace("{", "").replace("}", "") for p in people]
        if len(names) > 2 or (names and names[-1] == "others"):
            who = f"{names[0]} et al."
        else:
            who = " and ".join(names)
        out[key] = (who or "?", entry.fields.get("year", "n.d."))
    return out


def _cite(role: str, body: str, page: str) -> str:
    keys = [k.strip() for k in body.split(",")]
    unknown = [k for k in keys if k not in _citations()]
    if unknown:
        raise ValueError(f"book/{page}.md cites {unknown}, which book/references.bib lacks")
    cited = [_citations()[k] for k in keys]
    if role == "cite:t":
        return "; ".join(f"{who} ({year})" for who, year in cited)
    return "(" + "; ".join(f"{who}, {year}" for who, year in cited) + ")"


def _role(m: re.Match, numbers: dict[str, int], page: str) -> str:
    role, body = m["role"], m["body"]
    if role in ("glue:text", "glue", "glue:"):
        return f"`{body.split(':')[0]}`"
    if role in ("cite:p", "cite:t"):
        return _cite(role, body, page)
    explicit = EXPLICIT.match(body)
    if role == "ref":
        return explicit["text"] if explicit else _headings().get(body, body)
    if role == "eq" and body in numbers:
        return f"({numbers[body]})"
    if role == "doc":
        target = (BOOK / (explicit["target"] if explicit else body)).resolve()
        suffix = ".ipynb" if target.with_suffix(".ipynb").exists() else ".md"
        return f"`{target.relative_to(ROOT).as_posix()}{suffix}`"
    raise ValueError(f"book/{page}.md uses {m[0]!r}: teach autograder/release/pages.py its role")


def _admonition(m: re.Match) -> str:
    title, body = m["title"].strip(), m["body"].strip("\n")
    if "dropdown" in m["options"]:
        return f"<details>\n<summary>{title}</summary>\n\n{body}\n\n</details>"
    return "\n".join(f"> {line}".rstrip() for line in [f"**{title}**", "", *body.split("\n")])


def to_markdown(text: str, numbers: dict[str, int], page: str) -> str:
    """A MyST markdown cell as Markdown that Jupyter (and Colab) renders."""
    text = TARGET.sub("", text)
    text = EQ_LABEL.sub(lambda m: f"\\tag{{{numbers[m['label']]}}}\n$$", text)
    text = ADMONITION.sub(_admonition, text)
    return ROLE.sub(lambda m: _role(m, numbers, page), text)
