"""`make grade` end to end: one batch of good, bad and cheating submissions, graded in parallel.

The expensive batch runs once (chapter 1 only); every test below reads its results. Timeouts are
small here (3 s per cell, 12 s per notebook) so the endless loops cost little. Cheats that need
the sandbox to fail are skipped, loudly, where bubblewrap cannot run.
"""

from __future__ import annotations

import csv
import hashlib
import html
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from autograder import checks, samples
from autograder import nb as notebooks
from autograder.course import (
    COURSE_ID,
    COURSE_RELEASE,
    ROOT,
    SOLUTIONS,
    assignments,
    release_notebook,
    source_notebook,
)
from autograder.grade import gradebook as grading_book
from autograder.grade.sandbox import probe

pytestmark = pytest.mark.slow

A = "01_one_hot_lookup"
FAST = ["--cell-timeout", "3", "--notebook-budget", "12", "--memory-gib", "1.5"]
SANDBOXED, WHY_NOT = probe()
# The whole batch is graded by an interpreter reached through a symbolic link to the venv (a
# common set-up: one shared environment for several course folders). The sandbox must still start.
LINKED = Path(tempfile.mkdtemp(prefix="linked-venv-")) / "venv"
LINKED.symlink_to(Path(sys.prefix))
LINKED_PYTHON = str(LINKED / "bin" / Path(sys.executable).name)
needs_sandbox = pytest.mark.skipif(not SANDBOXED, reason=f"bubblewrap cannot run here: {WHY_NOT}")


# ------------------------------------------------------------------------------------------
# Building submissions
# ------------------------------------------------------------------------------------------
def _points():
    return notebooks.points(notebooks.read(source_notebook(A)))


def _expected(mistake: str) -> float:
    """The score a classic mistake earns (every test cell except the ones it must fail)."""
    pts = _points()
    return sum(pts.values()) - sum(pts[g] for g in samples.module(A).MISTAKES[mistake].fails)


def _cell(source: str, cid: str) -> dict:
    """A plain code cell, as a student would add one."""
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": cid,
        "metadata": {},
        "outputs": [],
        "source": notebooks.split_lines(source),
    }


def _insert_after(nb: dict, gid: str, *cells: dict) -> dict:
    """Insert cells right after the cell with grade_id (or id) gid."""
    for i, c in enumerate(nb["cells"]):
        if (c["metadata"].get("nbgrader") or {}).get("grade_id") == gid or c.get("id") == gid:
            nb["cells"][i + 1 : i + 1] = list(cells)
            return nb
    raise KeyError(gid)


def _test_ids() -> set:
    return set(notebooks.test_cells(notebooks.read(source_notebook(A))))


def _answers() -> list[str]:
    return samples.answer_cell_ids(A)


STUB = {  # every answer cell of the assignment left as the untouched stub
    fn: f"def {fn}(*args, **kwargs):\n    raise NotImplementedError()\n"
    for fn in samples.answer_cell_ids(A)
}


# What every grader says of an answer that uses torch (autograder/checks/harness.py: RULE).
TORCH_RULE = (
    "torch is not available when your notebook is graded: the graded functions use only numpy "
    "and the standard library (see the notebook's first cell)"
)


def torch_answers(a: str) -> tuple[str, dict[str, dict]]:
    """(the function, student -> notebook): assignment a's reference answers, with its first
    function rewritten to use torch in the three ways a student does, each still correct where
    torch imports (the course's venv, JupyterLab); and the numpy-only reference, the control."""
    fn, ref = next(iter(samples.reference_sources(a).items()))
    numpy = ref.replace(f"def {fn}(", f"def _{fn}_numpy(", 1)
    calls = f"torch.manual_seed(0)\n    return _{fn}_numpy(*args, **kwargs)\n"
    inside = f"{numpy}\n\ndef {fn}(*args, **kwargs):\n    import torch\n\n    {calls}"
    uses = f"{numpy}\n\ndef {fn}(*args, **kwargs):\n    {calls}"
    own_cell = _insert_after(
        samples.build(a, {fn: uses}), "environment", _cell("import torch", "t")
    )
    return fn, {
        "torch_at_top": samples.build(a, {fn: f"import numpy as np\nimport torch\n\n{ref}"}),
        "torch_inside": samples.build(a, {fn: inside}),
        "torch_own_cell": own_cell,
        "numpy_only": samples.build(a, {}),
    }


def torch_scores(a: str, fn: str) -> dict[str, float]:
    """test cell -> the score every torch answer gets: nothing for fn's cells, full marks for
    the others (the same under every grader)."""
    pts, graded = notebooks.points(notebooks.read(source_notebook(a))), checks.for_assignment(a)
    return {g: 0.0 if graded[g].function == fn else float(p) for g, p in pts.items()}


def build_batch(submitted: Path, grading_dir: Path) -> dict[str, str]:
    """Write every submission; returns student -> what it is."""
    mod = samples.module(A)
    mistake = mod.MISTAKES[mod.DEMO_MISTAKE].sources
    off_by_one = mod.MISTAKES["off by one"].sources
    last_answer = _answers()[-1]
    subs: dict[str, dict | bytes | None] = {}

    subs["correct_a"] = samples.build(A, {})
    subs["correct_b"] = samples.build(A, mod.ALTERNATIVES["loop over positions"])

    nb = samples.build(
        A, {"embedding_forward": "def embedding_forward(E, ids):\n    while True:\n        pass\n"}
    )
    subs["endless_loop"] = _insert_after(nb, "environment", _cell("while True:\n    pass", "loop"))

    nb = samples.build(A, {})
    loop = "import time\nwhile True:\n    try:\n        time.sleep(0.05)\n    except BaseException:\n        pass"
    subs["loop_ignores_interrupt"] = _insert_after(nb, "environment", _cell(loop, "stubborn"))

    bomb = "import numpy as np\nhog = []\nwhile True:\n    hog.append(np.ones(2**24))"
    fwd_bomb = "import numpy as np\n\ndef embedding_forward(E, ids):\n    big = np.ones(2**40)\n    return E[ids] + 0 * big[0]\n"
    subs["memory_bomb"] = _insert_after(
        samples.build(A, {"embedding_forward": fwd_bomb}), "environment", _cell(bomb, "bomb")
    )

    subs["os_exit"] = samples.build(
        A,
        {
            "embedding_forward": "import os\nos._exit(1)\n\ndef embedding_forward(E, ids):\n    return E[ids]\n"
        },
    )
    subs["sys_exit"] = samples.build(
        A,
        {
            "embedding_forward": "import sys\n\ndef embedding_forward(E, ids):\n    sys.exit(0)\n",
            "one_hot": "import sys\nsys.exit()\n\ndef one_hot(ids, V):\n    return np.eye(V)[ids]\n",
        },
    )
    # A function that kills its kernel: each of its checks fails, the kernel is restarted (in a
    # fresh folder, the student's cells rerun) and the other function is still graded.
    # (It survives the notebook's own cells, which call it on ids of shape (2, 5).)
    die = "import os\nimport numpy as np\n\ndef embedding_forward(E, ids):\n    if np.shape(ids) != (2, 5):\n        os._exit(3)\n    return E[ids]\n"
    subs["exit_in_function"] = samples.build(A, {"embedding_forward": die})
    subs["invalid_json"] = b'{"cells": [ this is not json'
    subs["missing_notebook"] = None

    nb = samples.build(A, mistake)
    nb["cells"] = [
        c
        for c in nb["cells"]
        if (c["metadata"].get("nbgrader") or {}).get("grade_id") not in _test_ids()
    ]
    subs["deleted_tests"] = nb

    nb = samples.build(A, mistake)
    for c in nb["cells"]:
        if (c["metadata"].get("nbgrader") or {}).get("grade_id") in _test_ids():
            c["source"] = ["pass"]
    subs["edited_tests"] = nb

    subs["output_flood"] = _insert_after(
        samples.build(A, {}), last_answer, _cell("print('x' * 60_000_000)", "flood")
    )
    subs["stray_py"] = samples.build(A, mistake)

    patch = (
        "import numpy as np\n"
        "np.allclose = lambda *a, **k: True\n"
        "np.array_equal = lambda *a, **k: True\n"
        "np.isclose = lambda a, b, *r, **k: np.ones(np.broadcast(a, b).shape, dtype=bool)\n"
        "np.testing.assert_allclose = lambda *a, **k: None\n"
        "np.testing.assert_array_equal = lambda *a, **k: None\n"
        "np.testing.assert_equal = lambda *a, **k: None"
    )
    subs["monkeypatch"] = _insert_after(
        samples.build(A, off_by_one), last_answer, _cell(patch, "patch")
    )

    liar = (
        "import numpy as np\n\n"
        "class AlwaysEqual:\n"
        "    def __eq__(self, other):\n        return True\n"
        "    def __ne__(self, other):\n        return False\n"
        "    __hash__ = object.__hash__\n\n"
        "def embedding_forward(E, ids):\n    return AlwaysEqual()\n"
    )
    subs["always_equal"] = samples.build(A, {"embedding_forward": liar})

    steal = f"""
import glob, json, sys

def _steal():
    ns = {{}}
    for path in glob.glob({str(SOLUTIONS)!r} + "/*/*.ipynb") + glob.glob("../../solutions/*/*.ipynb"):
        try:
            nb = json.load(open(path))
        except Exception:
            continue
        for cell in nb["cells"]:
            if cell.get("metadata", {{}}).get("nbgrader", {{}}).get("solution"):
                exec("".join(cell["source"]), ns)
    if "embedding_forward" not in ns:
        try:
            sys.path.insert(0, {str(ROOT)!r})
            from autograder import reference
            for name in {_answers()!r}:
                ns[name] = reference.function({A!r}, name)
        except Exception:
            pass
    return ns

_stolen = _steal()

def embedding_forward(E, ids):
    return _stolen["embedding_forward"](E, ids)
"""
    # every other answer cell hands its call to the stolen reference too
    thieves = {
        fn: f"def {fn}(*args, **kwargs):\n    return _stolen[{fn!r}](*args, **kwargs)\n"
        for fn in _answers()
    }
    subs["read_solutions"] = samples.build(A, {**thieves, "embedding_forward": steal})

    vandal = f"""
import glob, os, sqlite3
hits = []
for db in glob.glob({str(ROOT)!r} + "/grading/**/*.db", recursive=True) + [{str(grading_dir / "gradebook.db")!r}]:
    try:
        con = sqlite3.connect(db)
        con.execute("UPDATE grade SET auto_score = 1000, manual_score = 1000")
        con.commit()
        hits.append(db)
    except Exception as exc:
        print("db:", type(exc).__name__)
others = glob.glob({str(submitted)!r} + "/*/*/*.ipynb") + glob.glob("/tmp/course-grade-*/*/*.ipynb")
others += glob.glob({str(grading_dir)!r} + "/feedback/*/*/*.html")
for path in others:
    try:
        with open(path, "a") as f:
            f.write("PWNED")
        hits.append(path)
    except Exception as exc:
        print("write:", type(exc).__name__)
print("vandalised", len(hits), "files")
"""
    # Never run the vandal without the sandbox: it would really write the course's gradebook.
    if SANDBOXED:
        subs["write_gradebook"] = _insert_after(
            samples.build(A, STUB), "environment", _cell(vandal, "vandal")
        )

    fake = (
        "import sys, types\n"
        "_pkg = types.ModuleType('autograder'); _pkg.__path__ = []\n"
        "_sub = types.ModuleType('autograder.checks'); _sub.__path__ = []\n"
        "_mod = types.ModuleType('autograder.checks.ch01')\n"
        "_mod.__getattr__ = lambda name: (lambda fn: None)\n"
        "_pkg.checks = _sub; _sub.ch01 = _mod\n"
        "sys.modules.update({'autograder': _pkg, 'autograder.checks': _sub, 'autograder.checks.ch01': _mod})"
    )
    subs["fake_autograder"] = _insert_after(
        samples.build(A, STUB), "environment", _cell(fake, "fake")
    )

    kinds = {}
    for student, nb in subs.items():
        folder = submitted / student / A
        folder.mkdir(parents=True, exist_ok=True)
        if nb is None:
            (folder / "notes.txt").write_text("I forgot to upload my notebook\n")
        elif isinstance(nb, bytes):
            (folder / f"{A}.ipynb").write_bytes(nb)
        else:
            notebooks.write(nb, folder / f"{A}.ipynb")
        kinds[student] = student
    # Stray modules next to a submission: they must never reach the kernel's path.
    (submitted / "stray_py" / A / "numpy.py").write_text(
        "raise SystemExit('a stray numpy.py was imported')\n"
    )
    (submitted / "stray_py" / A / "autograder.py").write_text(
        "raise SystemExit('a stray autograder.py was imported')\n"
    )
    return kinds


# ------------------------------------------------------------------------------------------
# Running the grader
# ------------------------------------------------------------------------------------------
def run_grader(
    grading_dir: Path, *extra: str, jobs: int = 2, submitted: Path | None = None
) -> subprocess.CompletedProcess:
    cmd = [
        LINKED_PYTHON,
        "-m",
        "autograder.grade",
        "--grading-dir",
        str(grading_dir),
        "--jobs",
        str(jobs),
        "--assignment",
        A,
        *extra,
    ]
    if submitted is not None:
        cmd += ["--submitted", str(submitted)]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)


def report(grading_dir: Path) -> dict[str, dict[str, dict]]:
    """student -> test -> row of test_report.csv."""
    out: dict = {}
    with (grading_dir / "test_report.csv").open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            out.setdefault(row["student"], {})[row["test"]] = row
    return out


def totals(grading_dir: Path) -> dict[str, float]:
    return {
        s: sum(float(r["score"]) for r in tests.values())
        for s, tests in report(grading_dir).items()
    }


def _digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="session")
def prepared(tmp_path_factory) -> Path:
    """A gradebook that already knows chapter 1 (nbgrader generate_assignment runs once)."""
    d = tmp_path_factory.mktemp("prepared")
    grading_book.prepare(d, [A])
    return d


def fresh_dir(tmp_path: Path, prepared: Path) -> Path:
    d = tmp_path / "grading"
    d.mkdir(parents=True)
    for name in ("gradebook.db", ".gradebook_sources.json"):
        shutil.copy2(prepared / name, d / name)
    return d


@pytest.fixture(scope="module")
def batch(tmp_path_factory, prepared):
    root = tmp_path_factory.mktemp("batch")
    grading_dir = fresh_dir(root, prepared)
    submitted = grading_dir / "submitted"
    kinds = build_batch(submitted, grading_dir)
    before = _digest(submitted)
    proc = run_grader(grading_dir, *FAST)
    return {
        "dir": grading_dir,
        "submitted": submitted,
        "proc": proc,
        "kinds": kinds,
        "before": before,
    }


# ------------------------------------------------------------------------------------------
# The batch
# ------------------------------------------------------------------------------------------
def test_batch_completes_and_names_every_bad_submission(batch):
    proc = batch["proc"]
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    # through the symlinked venv, and still inside the sandbox (a failed sandbox stops the run)
    assert "sandbox: bubblewrap" in proc.stderr, proc.stderr[-2000:]
    assert {
        row["sandboxed"] for rows in report(batch["dir"]).values() for row in rows.values()
    } == {"yes"}
    rep = report(batch["dir"])
    assert set(rep) == set(batch["kinds"]), "every student must appear in the report"
    for student in ("invalid_json", "missing_notebook", "os_exit", "loop_ignores_interrupt"):
        assert f"{student}/{A}:" in proc.stdout, (
            f"{student} must be named with the reason:\n{proc.stdout}"
        )
    assert "not valid JSON" in proc.stdout
    assert "no notebook was submitted" in proc.stdout
    assert "kernel died" in proc.stdout


def test_correct_students_get_full_marks_and_the_same_as_alone(batch, tmp_path, prepared):
    full = sum(_points().values())
    got = totals(batch["dir"])
    assert got["correct_a"] == got["correct_b"] == full
    for student in ("correct_a", "correct_b"):
        alone = fresh_dir(tmp_path / student, prepared)
        shutil.copytree(batch["submitted"] / student, alone / "submitted" / student)
        proc = run_grader(alone, jobs=1)
        assert proc.returncode == 0, proc.stderr[-3000:]
        batch_rows = {t: r["score"] for t, r in report(batch["dir"])[student].items()}
        alone_rows = {t: r["score"] for t, r in report(alone)[student].items()}
        assert batch_rows == alone_rows


def test_no_cheat_or_bad_submission_gains_a_point(batch):
    got = totals(batch["dir"])
    rep = report(batch["dir"])
    mod = samples.module(A)
    pts = _points()
    graded = checks.for_assignment(A)
    forward_tests = [g for g in pts if graded[g].function == "embedding_forward"]
    others = sum(pts[g] for g in pts if g not in forward_tests)  # the other functions' cells
    # Zero: nothing of theirs runs, or it cannot be read, or the kernel dies before anything.
    for student in (
        "invalid_json",
        "missing_notebook",
        "os_exit",
        "loop_ignores_interrupt",
        "fake_autograder",
    ):
        assert got[student] == 0, (student, rep[student])
    # SystemExit (raised in a function, or at a cell's top level) stops neither the kernel nor
    # grading: the two functions it breaks earn nothing, the answers after them are graded.
    broken = [g for g in pts if graded[g].function in ("embedding_forward", "one_hot")]
    assert all(float(rep["sys_exit"][g]["score"]) == 0 for g in broken), rep["sys_exit"]
    assert got["sys_exit"] == sum(pts[g] for g in pts if g not in broken), rep["sys_exit"]
    # A broken embedding_forward earns nothing for it, whatever else happened in the kernel.
    for student in ("endless_loop", "memory_bomb", "always_equal", "exit_in_function"):
        assert all(float(rep[student][g]["score"]) == 0 for g in forward_tests), (
            student,
            rep[student],
        )
        assert got[student] <= others
    # Tampering with test cells, stray modules and patched numpy change nothing.
    for student in ("deleted_tests", "edited_tests", "stray_py"):
        assert got[student] == _expected(mod.DEMO_MISTAKE), (student, rep[student])
    assert got["monkeypatch"] == _expected("off by one"), rep["monkeypatch"]
    # The flood is a correct notebook that prints too much: full marks, small files.
    assert got["output_flood"] == sum(pts.values())


@needs_sandbox
def test_disk_cheats_earn_nothing_in_the_sandbox(batch):
    got = totals(batch["dir"])
    assert got["read_solutions"] == 0
    assert got["write_gradebook"] == 0


def test_messages_say_what_happened(batch):
    rep = report(batch["dir"])
    msg = lambda s, g: rep[s][g]["message"]  # noqa: E731
    assert "ran longer than" in msg("endless_loop", "test_forward_values")
    assert "kernel died while embedding_forward ran" in msg(
        "exit_in_function", "test_forward_values"
    )
    assert float(rep["exit_in_function"]["test_one_hot"]["score"]) > 0, (
        "restarted, one_hot still counts"
    )
    assert "MemoryError" in msg("memory_bomb", "test_forward_values")
    assert "SystemExit" in msg("sys_exit", "test_forward_values")
    assert "not numbers" in msg("always_equal", "test_forward_values")
    says = samples.module(A).MISTAKES[samples.module(A).DEMO_MISTAKE].says
    assert says in " ".join(r["message"] for r in rep["deleted_tests"].values())


def test_gradebook_holds_no_score_above_its_maximum_and_matches_the_report(batch):
    from nbgrader.api import Gradebook

    rep = report(batch["dir"])
    with Gradebook(grading_book.db_url(batch["dir"]), course_id=COURSE_ID) as gb:
        seen = set()
        for sub in gb.assignment_submissions(A):
            for nb in sub.notebooks:
                for grade in nb.grades:
                    assert grade.score <= grade.max_score, (sub.student.id, grade.name, grade.score)
                    assert grade.score >= 0
                    assert float(rep[sub.student.id][grade.name]["score"]) == grade.score
            seen.add(sub.student.id)
    assert seen == set(batch["kinds"]), "bad submissions are recorded with zeros, not left out"


def test_other_students_files_are_untouched(batch):
    assert _digest(batch["submitted"]) == batch["before"]
    for page in (batch["dir"] / "feedback").rglob("*.html"):
        assert "PWNED" not in page.read_text(encoding="utf-8")


def test_every_graded_notebook_is_small_and_valid(batch):
    graded = list((batch["dir"] / "autograded").rglob("*.ipynb"))
    assert len(graded) >= len(batch["kinds"]) - 2  # all but the invalid and the missing one
    for path in graded:
        assert path.stat().st_size < 10 * 1024**2, path
        nb = json.loads(path.read_text(encoding="utf-8"))
        assert nb["nbformat"] == 4
    flood = batch["dir"] / "autograded" / "output_flood" / A / f"{A}.ipynb"
    assert "characters of output were cut off" in flood.read_text(encoding="utf-8")


def test_deleted_test_cells_come_back_in_the_graded_copy(batch):
    graded = notebooks.read(batch["dir"] / "autograded" / "deleted_tests" / A / f"{A}.ipynb")
    assert set(notebooks.test_cells(graded)) == _test_ids()
    edited = notebooks.read(batch["dir"] / "autograded" / "edited_tests" / A / f"{A}.ipynb")
    release = notebooks.test_cells(notebooks.read(release_notebook(A)))
    for gid, cell in notebooks.test_cells(edited).items():
        assert notebooks.source(cell) == notebooks.source(release[gid])


def hidden_test_lines() -> set[str]:
    """Every line of every hidden-test region in solutions/ that is not public anyway."""
    lines = set()
    for a in assignments():
        public = (
            release_notebook(a).read_text(encoding="utf-8") if release_notebook(a).exists() else ""
        )
        for cell in notebooks.read(source_notebook(a))["cells"]:
            inside = False
            for line in notebooks.source(cell).splitlines():
                s = line.strip()
                if "BEGIN HIDDEN TESTS" in s:
                    inside = True
                elif "END HIDDEN TESTS" in s:
                    inside = False
                elif inside and s and s not in public:
                    lines.add(s)
    assert lines, "no hidden-test lines found: the leak test would prove nothing"
    return lines


def test_feedback_holds_no_hidden_test_source(batch):
    secret = hidden_test_lines()
    files = list((batch["dir"] / "feedback").rglob("*.html")) + list(
        (batch["dir"] / "autograded").rglob("*.ipynb")
    )
    assert len(files) > len(batch["kinds"])
    for path in files:
        text = path.read_text(encoding="utf-8")
        for line in secret:
            assert line not in text, f"{path}: hidden-test line {line!r}"
        assert "HIDDEN TESTS" not in text, path
        if path.suffix == ".html":
            assert "Traceback" not in text, path


def test_feedback_shows_visible_tests_scores_and_messages(batch):
    page = (batch["dir"] / "feedback" / "deleted_tests" / A / f"{A}.html").read_text(
        encoding="utf-8"
    )
    release = notebooks.test_cells(notebooks.read(release_notebook(A)))
    text = html.unescape(page)
    for cell in release.values():
        for line in notebooks.source(cell).splitlines():
            assert line in text, f"visible test line missing: {line!r}"
    total = sum(_points().values())
    assert f"Score: <b>{_expected(samples.module(A).DEMO_MISTAKE):g} / {total:g}</b>" in page
    assert f"Release you worked from: {COURSE_RELEASE}" in page
    says = samples.module(A).MISTAKES[samples.module(A).DEMO_MISTAKE].says
    assert says in text


# ------------------------------------------------------------------------------------------
# Parallel equals serial
# ------------------------------------------------------------------------------------------
def test_jobs_1_and_jobs_2_give_identical_scores(tmp_path, prepared):
    mod = samples.module(A)
    honest = samples.demo_students(A)
    honest["alternative"] = samples.build(A, mod.ALTERNATIVES[next(iter(mod.ALTERNATIVES))])
    results = []
    for jobs in (1, 2):
        d = fresh_dir(tmp_path / f"jobs{jobs}", prepared)
        for student, nb in honest.items():
            notebooks.write(nb, d / "submitted" / student / A / f"{A}.ipynb")
        proc = run_grader(d, jobs=jobs)
        assert proc.returncode == 0, proc.stderr[-3000:]
        results.append(
            {
                s: {t: (r["score"], r["message"]) for t, r in tests.items()}
                for s, tests in report(d).items()
            }
        )
    assert results[0] == results[1]
    assert set(results[0]) == set(honest)


def test_an_unknown_assignment_is_an_error_and_nothing_to_grade_is_not(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "autograder.grade", "--grading-dir", str(tmp_path), "--assignment", "99_nope"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2 and "no such assignment" in proc.stderr
    proc = run_grader(tmp_path)
    assert proc.returncode == 0 and "nothing to grade" in proc.stdout


def test_exit_status_is_nonzero_only_when_grading_itself_fails(tmp_path):
    """A corrupt gradebook is the grader's failure: exit 1, but the report is still written."""
    d = tmp_path / "grading"
    notebooks.write(samples.build(A, {}), d / "submitted" / "someone" / A / f"{A}.ipynb")
    (d / "gradebook.db").write_bytes(b"this is not an SQLite database" * 100)
    proc = run_grader(d, jobs=1)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "GRADEBOOK NOT WRITTEN" in proc.stderr
    assert totals(d)["someone"] == sum(_points().values())


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"[]",
        b'{"cells": "nope"}',
        b'{"cells": [1, 2]}',
        b'{"cells": [{"cell_type": "code", "source": 5}]}',
        b'{"cells": [{"cell_type": "code", "metadata": {"nbgrader": []}, "source": ""}]}',
        b'{"cells": [{"cell_type": "code", "id": ["x"], "metadata": {}, "source": ""}]}',
        b'{"cells": [], "metadata": []}',
        b"\xff\xfe not utf-8",
    ],
)
def test_malformed_notebooks_are_reported_not_crashed_on(tmp_path, content):
    from autograder.grade.submission import load_submission

    path = tmp_path / f"{A}.ipynb"
    path.write_bytes(content)
    nb, raw, why = load_submission(path)
    assert nb is None and why, why


def test_without_the_sandbox_the_disk_cheat_works_and_the_grader_warns(batch, tmp_path, prepared):
    """The control for test_disk_cheats_earn_nothing_in_the_sandbox: the sandbox is what stops it."""
    d = fresh_dir(tmp_path, prepared)
    shutil.copytree(batch["submitted"] / "read_solutions", d / "submitted" / "read_solutions")
    proc = run_grader(d, "--no-sandbox", jobs=1)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "WARNING: grading WITHOUT the sandbox" in proc.stderr
    assert {row["sandboxed"] for row in report(d)["read_solutions"].values()} == {"NO"}
    assert totals(d)["read_solutions"] == sum(_points().values())


@pytest.mark.parametrize(
    "sandbox", [pytest.param(True, marks=needs_sandbox), False], ids=["sandboxed", "no_sandbox"]
)
def test_an_answer_that_uses_torch_fails_its_tests_with_the_numpy_only_rule(
    tmp_path, prepared, sandbox
):
    """The course's venv has torch, Gradescope's has not: make grade's kernel refuses it, so an
    answer that imports it (at the top of its cell, inside the function, or in a cell of its
    own) gets what Gradescope gives (tests/test_gradescope.py), with a message naming the rule;
    the numpy-only answer keeps full marks."""
    fn, subs = torch_answers(A)
    d = fresh_dir(tmp_path, prepared)
    for student, nb in subs.items():
        notebooks.write(nb, d / "submitted" / student / A / f"{A}.ipynb")
    proc = run_grader(d, *([] if sandbox else ["--no-sandbox"]), jobs=1)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rep, want = report(d), torch_scores(A, fn)
    assert {g: float(r["score"]) for g, r in rep["numpy_only"].items()} == {
        g: float(p) for g, p in _points().items()
    }
    for student in ("torch_at_top", "torch_inside", "torch_own_cell"):
        assert {g: float(r["score"]) for g, r in rep[student].items()} == want, student
        for g, row in rep[student].items():
            if want[g] == 0:
                assert TORCH_RULE in row["message"], (student, g, row["message"])
                assert row["sandboxed"] == ("yes" if sandbox else "NO")
    assert rep["torch_inside"]["test_forward_values"]["mistake"] == "not-numpy"
    # the cell that imports it is named at the top of the feedback, and under a NameError
    assert "NameError" in rep["torch_own_cell"]["test_forward_values"]["message"]
    for student, where in (
        ("torch_at_top", "(embedding_forward) imports torch"),
        ("torch_own_cell", "imports torch"),
    ):
        page = html.unescape(
            (d / "feedback" / student / A / f"{A}.html").read_text(encoding="utf-8")
        )
        assert f"{where}: {TORCH_RULE}" in page, student
