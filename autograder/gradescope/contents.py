"""What an assignment's zip carries of the course's code: derived from the import graph, never listed.

The grading path starts at :mod:`autograder.gradescope.runner` (what ``run_autograder`` runs) and
at the assignment's hidden checks, ``autograder/checks/chNN.py`` (found by name at run time by
:func:`autograder.checks.module_for`, so it is a root of its own). The zip holds those modules,
every course module they import (counting imports inside functions, as
``tests/test_architecture.py`` does), the packages above each of them, and the package data
``pyproject.toml`` declares for the packages it holds (the feedback page's template, the release
history). Nothing else: no other chapter's checks, no cluster or benchmark code, no builder.
"""

from __future__ import annotations

import ast
import fnmatch
import tomllib
from pathlib import Path

from ..course import ROOT

RUNNER = "autograder.gradescope.runner"
TOP = ("autograder", "coursekit")


def checks_module(assignment: str) -> str:
    """The hidden checks of an assignment "NN_slug": autograder.checks.chNN."""
    return f"autograder.checks.ch{assignment[:2]}"


def course_modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the course's packages: dotted name -> file (a package: its __init__.py)."""
    mods = {}
    for top in TOP:
        for path in sorted((root / top).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = path
    return mods


def imported_names(module: str, source: str, is_package: bool) -> set[str]:
    """Every dotted name a module's imports name (``from .a import b``: ``pkg.a`` and
    ``pkg.a.b``), relative imports resolved, imports inside functions included."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = module.split(".") if is_package else module.split(".")[:-1]
            if node.level:
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names.add(target)
            names.update(f"{target}.{a.name}" for a in node.names)
    return names


def parents(module: str) -> list[str]:
    """The packages above a module: a.b.c -> [a, a.b]."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def closure(roots: list[str], mods: dict[str, Path]) -> list[str]:
    """The roots, every course module they import, transitively, and their packages; sorted."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        if name not in mods:
            raise LookupError(f"{name} is not a module of the course")
        seen.add(name)
        path = mods[name]
        found = imported_names(name, path.read_text(encoding="utf-8"), path.name == "__init__.py")
        todo += [n for n in found if n in mods] + [p for p in parents(name) if p in mods]
    return sorted(seen)


def package_data(packages: list[str], root: Path = ROOT) -> list[Path]:
    """The data files pyproject.toml declares for these packages, relative to the root."""
    spec = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    declared = spec.get("tool", {}).get("setuptools", {}).get("package-data", {})
    files = []
    for pkg in packages:
        folder = root / Path(*pkg.split("."))
        for pattern in declared.get(pkg, []):
            files += [
                p.relative_to(root)
                for p in sorted(folder.rglob("*"))
                if p.is_file() and fnmatch.fnmatch(p.relative_to(folder).as_posix(), pattern)
            ]
    return sorted(set(files))


def code_files(assignment: str, root: Path = ROOT) -> list[Path]:
    """The course files an assignment's zip holds, relative to the root: the grading path's
    modules (see the module's docstring) and their package data."""
    mods = course_modules(root)
    names = closure([RUNNER, checks_module(assignment)], mods)
    packages = [n for n in names if mods[n].name == "__init__.py"]
    return sorted({mods[n].relative_to(root) for n in names} | set(package_data(packages, root)))
