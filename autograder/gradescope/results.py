"""results.json in Gradescope's format, and a check of a results.json against that format.

The format is Gradescope's "Autograder Specifications"
(https://gradescope-autograders.readthedocs.io/en/latest/specs/): a top-level ``score``,
``output``, ``visibility``, ``stdout_visibility``, ``extra_data``, the format fields, and
``tests``, each with ``score``, ``max_score``, ``status``, ``name``, ``number``, ``output``,
``visibility`` and ``extra_data``. Every text is sent as ``"text"`` (no HTML or Markdown
rendering): messages may quote the student's own exception text.
"""

from __future__ import annotations

import json
import os
import tempfile
from numbers import Real
from pathlib import Path

VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}
FORMATS = {"text", "simple_format", "html", "md", "ansi"}
TOP_KEYS = {
    "score", "execution_time", "output", "output_format", "test_output_format",
    "test_name_format", "visibility", "stdout_visibility", "extra_data", "tests", "leaderboard",
}  # fmt: skip
TEST_KEYS = {
    "score", "max_score", "status", "name", "name_format", "number", "output", "output_format",
    "tags", "visibility", "extra_data",
}  # fmt: skip


def document(score: float, output: str, tests: list[dict], extra: dict, seconds: float) -> dict:
    """A whole results.json: stdout hidden from students, every text shown as plain text."""
    return {
        "score": round(float(score), 6),
        "execution_time": max(0, round(seconds)),
        "output": output,
        "output_format": "text",
        "test_output_format": "text",
        "test_name_format": "text",
        "stdout_visibility": "hidden",
        "extra_data": extra,
        "tests": tests,
    }


def test_entry(n: int, name: str, score: float, max_score: float, output: str, vis: str) -> dict:
    """One test cell's entry; passed means full marks."""
    return {
        "number": str(n),
        "name": name,
        "score": round(float(score), 6),
        "max_score": round(float(max_score), 6),
        "status": "passed" if score >= max_score else "failed",
        "output": output,
        "visibility": vis,
    }


def write(path: Path, doc: dict) -> None:
    """Write results.json atomically (a half-written file is never what Gradescope reads)."""
    problems = validate(doc)
    if problems:
        raise ValueError(f"results.json would be invalid: {problems}")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".results-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def _number(x) -> bool:
    return isinstance(x, Real) and not isinstance(x, bool)


def _check_test(i: int, t) -> list[str]:
    if not isinstance(t, dict):
        return [f"tests[{i}] is not an object"]
    problems = [f"tests[{i}] has unknown field {k!r}" for k in sorted(set(t) - TEST_KEYS)]
    for k in ("score", "max_score"):
        if k in t and not _number(t[k]):
            problems.append(f"tests[{i}].{k} is not a number")
    for k in ("name", "number", "output"):
        if k in t and not isinstance(t[k], str):
            problems.append(f"tests[{i}].{k} is not a string")
    if t.get("status", "passed") not in ("passed", "failed"):
        problems.append(f"tests[{i}].status is {t['status']!r}")
    if t.get("visibility", "visible") not in VISIBILITIES:
        problems.append(f"tests[{i}].visibility is {t['visibility']!r}")
    if t.get("output_format", "text") not in FORMATS:
        problems.append(f"tests[{i}].output_format is {t['output_format']!r}")
    if _number(t.get("score")) and _number(t.get("max_score")) and t["score"] > t["max_score"]:
        problems.append(f"tests[{i}] scores {t['score']} above its max_score {t['max_score']}")
    return problems


def validate(doc) -> list[str]:
    """What is wrong with a results.json document by Gradescope's specification ([] if nothing)."""
    if not isinstance(doc, dict):
        return ["results.json is not a JSON object"]
    problems = [f"unknown top-level field {k!r}" for k in sorted(set(doc) - TOP_KEYS)]
    tests = doc.get("tests", [])
    if "score" not in doc and not (tests and all("score" in t for t in tests)):
        problems.append("no top-level score and not every test has one")
    if "score" in doc and not _number(doc["score"]):
        problems.append("score is not a number")
    for k in ("visibility", "stdout_visibility"):
        if doc.get(k, "visible") not in VISIBILITIES:
            problems.append(f"{k} is {doc[k]!r}")
    for k in ("output_format", "test_output_format", "test_name_format"):
        if doc.get(k, "text") not in FORMATS:
            problems.append(f"{k} is {doc[k]!r}")
    if not isinstance(doc.get("extra_data", {}), dict):
        problems.append("extra_data is not an object")
    if not isinstance(tests, list):
        return [*problems, "tests is not a list"]
    for i, t in enumerate(tests):
        problems += _check_test(i, t)
    return problems
