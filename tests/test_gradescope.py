"""The Gradescope autograder, run as Gradescope runs it, without Docker.

`make gradescope`'s zip is extracted into ``$ROOT/source`` of a temporary root and set up by its
own ``setup.sh``, which makes the venv from the zip's ``requirements-grading.txt`` alone (no
system site-packages, nothing of this repository; :mod:`autograder.gradescope.local`, the code
``make gradescope-test`` runs, keeps it in /var/tmp keyed by the requirements' hash, so it is
built once per machine); ``run_autograder`` then grades one notebook in ``$ROOT/submission/``
with ``PYTHONPATH`` cleared, and ``results.json`` is checked against Gradescope's documented
fields and for the ``autograder`` package that graded (the extract's). A correct answer, a classic
mistake, the stub and another assignment's notebook are graded so for an ordinary chapter (2) and
the capstone (whose checks once imported chapters 1 to 3).

Two isolations are exercised: bubblewrap (where it runs), and, as root, the unprivileged user that
Gradescope's container falls back to (bubblewrap made to fail by a ``bwrap`` first on PATH; the
kernel's user is a bare uid that no account or process on this machine uses). Without either,
grading must refuse (exit 3, score 0) and run nothing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import time
import zipfile
from pathlib import Path

import pytest

from autograder import nb, samples
from autograder.course import assignments, release_notebook
from autograder.grade.sandbox import probe
from autograder.gradescope import build as gs_build
from autograder.gradescope import contents, identify, isolation, local
from autograder.gradescope.results import validate

ROOT = Path(__file__).resolve().parent.parent
A, CAPSTONE = "02_sparse_backward", "08_capstone"
# Each assignment graded in its own zip, and the notebook of another assignment uploaded to it.
WRONG = {A: "03_fancy_indexing_trap", CAPSTONE: "01_one_hot_lookup"}
COURSE_VENV = ROOT / ".venv"
# No account and no process has it (one per test process, so parallel runs never kill each
# other's kernels): every process of it may be killed.
TEST_UID = 470_000 + os.getpid() % 10_000
SANDBOXED, WHY_NOT = probe()
needs_bwrap = pytest.mark.skipif(not SANDBOXED, reason=f"bubblewrap cannot run here: {WHY_NOT}")
CHAPTER_CHECKS = re.compile(r"autograder/checks/(public/)?ch(\d\d)\.py$")


def _points(a: str = A) -> dict[str, float]:
    return nb.points(nb.read(ROOT / "solutions" / a / f"{a}.ipynb"))


def full(a: str = A) -> float:
    return sum(_points(a).values())


@pytest.fixture(scope="module")
def zips(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("zip")
    return {a: gs_build.build(a, out=d / f"{a}.zip") for a in (A, CAPSTONE)}


@pytest.fixture(scope="module")
def zip_path(zips) -> Path:
    return zips[A]


def _remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def make_root(zip_file: Path) -> tuple[Path, Path, str]:
    """A fresh Gradescope root set up by its own setup.sh: (root, the zip-only venv, its output)."""
    path = local.extract(zip_file)
    try:
        venv, out = local.setup(path, user=str(TEST_UID))
    except Exception:
        _remove(path)
        raise
    return path, venv, out


@pytest.fixture(scope="module")
def gs_roots(zips):
    """One set-up root per assignment, shared by the tests that leave nothing behind."""
    made = {a: make_root(z) for a, z in zips.items()}
    yield made
    for path, _, _ in made.values():
        _remove(path)


@pytest.fixture
def fresh(zip_path):
    """A root of its own, for a test whose notebook tries to leave something behind."""
    path, venv, _ = make_root(zip_path)
    yield path, venv
    isolation.kill_uid(TEST_UID)
    _remove(path)


def run(gs_root: Path, venv: Path, **env) -> tuple[subprocess.CompletedProcess, dict]:
    env.setdefault("GRADESCOPE_KERNEL_USER", str(TEST_UID))
    return local.run(gs_root, venv, **env)


def submit(gs_root: Path, notebook, name: str = "my work.ipynb") -> None:
    local.submit(gs_root, notebook, name)


def by_name(doc: dict) -> dict[str, dict]:
    return {t["name"].split(" ")[0]: t for t in doc["tests"]}


def assert_valid(doc: dict, a: str = A) -> None:
    assert doc is not None, "no results.json was written"
    assert validate(doc) == []
    assert doc["stdout_visibility"] == "hidden"
    assert doc["score"] == pytest.approx(sum(t["score"] for t in doc["tests"]))
    assert {t["name"].split(" ")[0] for t in doc["tests"]} == set(_points(a))
    assert doc["extra_data"]["release"] == nb.stamp_label(nb.release_stamp(a))


def assert_graded_by_the_extract(doc: dict, gs_root: Path) -> None:
    assert local.misplaced(doc, gs_root) is None


# -- submissions -----------------------------------------------------------------------------
def reads_solutions(gs_root: Path) -> dict:
    """Answer cells that execute the reference's answer cells, read from the zip's source."""
    path = gs_root / "source" / "solutions" / A / f"{A}.ipynb"
    steal = f"""
import glob, json
_ns = {{}}
for _p in [{str(path)!r}] + glob.glob({str(gs_root)!r} + "/**/solutions/*/*.ipynb", recursive=True):
    try:
        _cells = json.load(open(_p))["cells"]
    except Exception as exc:
        print("blocked:", type(exc).__name__)
        continue
    for _c in _cells:
        if _c.get("metadata", {{}}).get("nbgrader", {{}}).get("solution"):
            exec("".join(_c["source"]), _ns)

def embedding_backward(*args, **kwargs):
    return _ns["embedding_backward"](*args, **kwargs)
"""
    rows = "def embedding_backward_rows(*args, **kwargs):\n    return _ns['embedding_backward_rows'](*args, **kwargs)\n"
    return samples.build(A, {"embedding_backward": steal, "embedding_backward_rows": rows})


STUB = "def {fn}(*args, **kwargs):\n    raise NotImplementedError()\n"


def writes_results(gs_root: Path) -> dict:
    """A stub that writes a perfect results.json, and leaves a process rewriting it afterwards."""
    target = gs_root / "results" / "results.json"
    cheat = f"""
import json, os, time
FAKE = {{"score": 1000.0, "tests": [{{"name": "pwned", "score": 1000.0, "max_score": 1.0}}]}}
try:
    with open({str(target)!r}, "w") as f:
        json.dump(FAKE, f)
    print("wrote results.json")
except Exception as exc:
    print("blocked:", type(exc).__name__)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for _ in range(100):
            try:
                with open({str(target)!r}, "w") as f:
                    json.dump(FAKE, f)
            except Exception:
                pass
            time.sleep(0.05)
        os._exit(0)
    os._exit(0)

{STUB.format(fn="embedding_backward")}"""
    return samples.build(
        A,
        {
            "embedding_backward": cheat,
            "embedding_backward_rows": STUB.format(fn="embedding_backward_rows"),
        },
    )


def leaves_a_marker(a: str, marker: Path) -> dict:
    """Assignment a's correct notebook whose first answer cell also writes ``marker``."""
    first, text = next(iter(samples.reference_sources(a).items()))
    return samples.build(a, {first: f"open({str(marker)!r}, 'w').write('ran')\n\n{text}"})


# -- the zip ---------------------------------------------------------------------------------
def _zip_texts(zip_file: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(zip_file) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def test_zip_has_both_scripts_at_its_root_and_only_this_assignment(zip_path):
    with zipfile.ZipFile(zip_path) as zf:
        names = set(zf.namelist())
        modes = {i.filename: (i.external_attr >> 16) & 0o777 for i in zf.infolist()}
        reqs = zf.read("requirements-grading.txt").decode()
        cfg = json.loads(zf.read("gradescope.json"))
    for script in ("setup.sh", "run_autograder"):
        assert script in names and modes[script] & 0o111
    assert f"solutions/{A}/{A}.ipynb" in names and f"exercises/{A}/{A}.ipynb" in names
    assert {n.split("/")[1] for n in names if n.startswith(("solutions/", "exercises/"))} == {A}
    assert not any(
        n.startswith(("autograder/samples", "autograder/export", "coursekit")) for n in names
    )
    assert {k: cfg[k] for k in ("assignment", "release", "visibility")} == {
        "assignment": A,
        "release": nb.release_stamp(A),
        "visibility": "visible",
    }
    pins = dict(line.split("==") for line in reqs.splitlines() if "==" in line)
    assert pins["numpy"] == gs_build.requirement_pins()["numpy"]
    assert {"ipykernel", "jupyter-client", "jinja2", "pyzmq"} <= set(pins)
    assert not set(pins) & {"torch", "jupyter-book", "jupyterlab", "notebook", "nbgrader"}


@pytest.mark.parametrize("a", [A, CAPSTONE])
def test_the_zip_holds_its_own_chapters_checks_and_no_cluster_or_benchmark_code(zips, a):
    files = _zip_texts(zips[a])
    chapters = {m.group(2) for n in files if (m := CHAPTER_CHECKS.search(n))}
    assert chapters == {a[:2]}, f"{a}'s zip holds the checks of chapters {sorted(chapters)}"
    assert f"autograder/checks/ch{a[:2]}.py" in files
    assert f"autograder/checks/public/ch{a[:2]}.py" in files
    for left_out in ("cluster.py", "cluster_worker.py", "address.py", "bench.py", "fingerprint.py",
                     "pool.py", "cli.py", "nbgrader_plugins.py"):  # fmt: skip
        assert f"autograder/grade/{left_out}" not in files
    assert "autograder/gradescope/build.py" not in files  # the builder stays home
    history = json.loads(files["autograder/release/history.json"])
    assert list(history) == [a] and history[a]  # the grader's history, of this assignment only
    assert "autograder/grade/templates/feedback.html" in files


def missing_imports(files: dict[str, bytes]) -> list[str]:
    """Every course module a zipped module imports that the zip does not hold."""
    mods = contents.course_modules()
    zipped = {
        ".".join(Path(n).with_suffix("").parts[: -1 if n.endswith("/__init__.py") else None])
        for n in files
        if n.endswith(".py")
    }
    out = []
    for name, data in files.items():
        if not name.endswith(".py"):
            continue
        module = ".".join(Path(name).with_suffix("").parts)
        is_pkg = module.endswith(".__init__")
        module = module.removesuffix(".__init__")
        for target in contents.imported_names(module, data.decode(), is_pkg):
            if target in mods and target not in zipped:
                out.append(f"{name} imports {target}")
    return sorted(out)


@pytest.mark.parametrize("a", [A, CAPSTONE])
def test_every_course_module_a_zipped_module_imports_is_in_the_zip(zips, a):
    files = _zip_texts(zips[a])
    assert missing_imports(files) == []
    # The test sees a missing module: without autograder/release/history.py the worker's import
    # of it is reported (the zip of issue 24 left autograder/release out).
    cut = {n: d for n, d in files.items() if n != "autograder/release/history.py"}
    assert "autograder/grade/worker.py imports autograder.release.history" in missing_imports(cut)


def test_gradescope_json_knows_every_assignment_by_title_and_grade_ids_only(zip_path):
    cfg = json.loads(_zip_texts(zip_path)["gradescope.json"])
    assert set(cfg["assignments"]) == set(assignments())
    for a, entry in cfg["assignments"].items():
        assert set(entry) == {"title", "grade_ids"}
        heading = nb.source(nb.read(release_notebook(a))["cells"][0]).splitlines()[0]
        assert entry["title"] == heading.removeprefix("# ")
        assert set(entry["grade_ids"]) == set(_points(a)) | set(samples.answer_cell_ids(a))


def test_the_zip_is_reproducible(zip_path, tmp_path):
    again = gs_build.build(A, out=tmp_path / "again.zip")
    assert again.read_bytes() == zip_path.read_bytes()


def test_build_refuses_an_unknown_assignment_or_visibility(tmp_path):
    with pytest.raises(gs_build.BuildError):
        gs_build.build("99_nothing", out=tmp_path / "x.zip")
    with pytest.raises(gs_build.BuildError):
        gs_build.build(A, visibility="sometimes", out=tmp_path / "x.zip")


def test_validate_rejects_what_gradescope_does_not_document():
    assert validate({"score": 1.0, "tests": []}) == []
    bad = {
        "score": "1",
        "stdout_visibility": "students",
        "tests": [{"name": "t", "score": 2.0, "max_score": 1.0, "status": "ok", "colour": "red"}],
    }
    problems = validate(bad)
    assert len(problems) == 5, problems


# -- which assignment a notebook is ----------------------------------------------------------
@pytest.fixture(scope="module")
def catalogue():
    return gs_build.catalogue()


def test_every_released_notebook_is_recognised_in_every_other_assignment(catalogue):
    released = {a: nb.read(release_notebook(a)) for a in assignments()}
    for expected in assignments():
        for a, notebook in released.items():
            got = identify.identify(notebook, catalogue, expected)
            assert got == (None if a == expected else a), (a, expected)


def test_a_notebook_of_no_assignment_or_an_older_release_is_graded_not_refused(catalogue):
    assert identify.identify({"cells": []}, catalogue, A) is None
    older = nb.read(release_notebook(A))
    tests = [c for c in older["cells"] if nb.is_test(c)]
    for c in tests[: len(tests) // 2]:  # half its test cells renamed since
        c["metadata"]["nbgrader"]["grade_id"] += "_old"
    assert identify.identify(older, catalogue, A) is None
    assert identify.identify({"cells": "not a list"}, catalogue, A) is None


# -- in the zip's own venv -------------------------------------------------------------------
def test_setup_sh_makes_the_venv_from_the_zips_requirements_alone(gs_roots):
    gs_root, venv, out = gs_roots[A]
    inside = gs_root / "source" / "autograder" / "__init__.py"
    assert f"the grader imports from {inside}" in out
    assert venv.resolve() != COURSE_VENV.resolve()
    assert "include-system-site-packages = false" in (venv / "pyvenv.cfg").read_text()
    py = str(venv / "bin" / "python")
    freeze = subprocess.run([py, "-m", "pip", "freeze", "--all"], capture_output=True, text=True)
    reqs = (gs_root / "source" / "requirements-grading.txt").read_text()
    wanted = {gs_build.canonical(line) for line in reqs.splitlines() if "==" in line}
    venv_own = ("pip==", "setuptools==")  # what `python -m venv` itself puts in
    got = {
        gs_build.canonical(line)
        for line in freeze.stdout.splitlines()
        if not line.startswith(venv_own)
    }
    assert got == wanted  # exactly the requirements: nothing of this repository
    for name in ("autograder", "coursekit", "nbgrader", "torch"):
        proc = subprocess.run([py, "-c", f"import {name}"], cwd="/", env=local.clean_env())
        assert proc.returncode != 0, f"{name} imports in the zip's venv outside the extract"
    for d in ("source", "results"):
        assert stat.S_IMODE((gs_root / d).stat().st_mode) == 0o700


def test_every_module_in_the_zip_imports_in_its_venv_from_the_extract(gs_roots):
    for a in (A, CAPSTONE):
        gs_root, venv, _ = gs_roots[a]
        src = gs_root / "source"
        code = (
            "import importlib, pathlib, sys\n"
            "src = pathlib.Path(sys.argv[1])\n"
            "for p in sorted(src.glob('autograder/**/*.py')):\n"
            "    parts = p.relative_to(src).with_suffix('').parts\n"
            "    name = '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)\n"
            "    m = importlib.import_module(name)\n"
            "    assert pathlib.Path(m.__file__).is_relative_to(src), (name, m.__file__)\n"
            "from autograder.release import history\n"
            "print('ok', *history.load())\n"  # the history the grader reads: the zip's
        )
        proc = subprocess.run([str(venv / "bin" / "python"), "-c", code, str(src)], cwd=src,
                              capture_output=True, text=True, env=local.clean_env())  # fmt: skip
        assert proc.stdout.strip() == f"ok {a}", proc.stderr[-3000:]


@pytest.mark.parametrize("a", [A, CAPSTONE])
def test_in_the_zips_venv_a_correct_answer_gets_full_marks(gs_roots, a):
    gs_root, venv, _ = gs_roots[a]
    submit(gs_root, samples.build(a, {}))
    proc, doc = run(gs_root, venv)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert_valid(doc, a)
    assert_graded_by_the_extract(doc, gs_root)
    assert doc["score"] == full(a)
    assert all(t["status"] == "passed" for t in doc["tests"])
    assert "Isolation: the kernel ran" in doc["output"]


@pytest.mark.parametrize("a", [A, CAPSTONE])
def test_in_the_zips_venv_a_classic_mistake_loses_points_and_is_named(gs_roots, a):
    gs_root, venv, _ = gs_roots[a]
    mistake = samples.module(a).MISTAKES[samples.module(a).DEMO_MISTAKE]
    submit(gs_root, samples.build(a, mistake.sources))
    proc, doc = run(gs_root, venv)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert_valid(doc, a)
    assert_graded_by_the_extract(doc, gs_root)
    tests = by_name(doc)
    assert doc["score"] == full(a) - sum(_points(a)[g] for g in mistake.fails)
    for gid in mistake.fails:
        assert tests[gid]["status"] == "failed" and tests[gid]["score"] == 0
        assert mistake.says in tests[gid]["output"]


@pytest.mark.parametrize("a", [A, CAPSTONE])
def test_in_the_zips_venv_the_untouched_stub_gets_nothing(gs_roots, a):
    gs_root, venv, _ = gs_roots[a]
    submit(gs_root, samples.build(a, None), name=f"{a}.ipynb")
    proc, doc = run(gs_root, venv)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert_valid(doc, a)
    assert_graded_by_the_extract(doc, gs_root)
    assert doc["score"] == 0
    assert all("still raises NotImplementedError" in t["output"] for t in doc["tests"])


def test_in_the_zips_venv_an_answer_that_uses_torch_gets_make_grades_score_and_the_rule(gs_roots):
    """The zip's venv has no torch: an answer that uses it (at the top of its cell, inside the
    function, in a cell of its own) loses exactly what make grade takes (tests/test_grade.py:
    torch_scores), and each of its failing tests names the rule, as make grade's do; a
    numpy-only answer keeps full marks."""
    from tests.test_grade import TORCH_RULE, torch_answers, torch_scores

    gs_root, venv, _ = gs_roots[A]
    fn, subs = torch_answers(A)
    want = torch_scores(A, fn)
    for student, notebook in subs.items():
        submit(gs_root, notebook)
        proc, doc = run(gs_root, venv)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert_valid(doc)
        tests = by_name(doc)
        if student == "numpy_only":
            assert doc["score"] == full(), doc["output"]
            continue
        assert {g: t["score"] for g, t in tests.items()} == want, student
        for g, t in tests.items():
            if want[g] == 0:
                assert TORCH_RULE in t["output"], (student, g, t["output"])
        if student != "torch_inside":  # the cell that imports it is named above the tests
            assert f"imports torch: {TORCH_RULE}" in doc["output"], (student, doc["output"])


@pytest.mark.parametrize("a", [A, CAPSTONE])
def test_in_the_zips_venv_another_assignments_notebook_is_named_and_not_run(gs_roots, a):
    gs_root, venv, _ = gs_roots[a]
    other = WRONG[a]
    marker = gs_root / "ran.txt"
    submit(gs_root, leaves_a_marker(other, marker), name=f"{a}.ipynb")  # the name does not fool it
    proc, doc = run(gs_root, venv)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert_valid(doc, a)
    assert doc["score"] == 0 and not marker.exists()
    title = identify.catalogue_entry(nb.read(release_notebook(other)), other)["title"]
    assert f"this notebook is another assignment: {title} ({other}.ipynb)" in doc["output"]
    assert f"upload your {a}.ipynb" in doc["output"]
    assert all(f"this is {other}.ipynb" in t["output"] for t in doc["tests"])


def test_make_gradescope_test_grades_a_notebook_and_prints_each_tests_score(zip_path, tmp_path):
    from autograder.gradescope import trial

    stub = tmp_path / f"{A}.ipynb"
    nb.write(samples.build(A, None), stub)
    cmd = [str(COURSE_VENV / "bin" / "python"), "-m", "autograder.gradescope", "test", A,
           "--zip", str(zip_path), "--notebook", str(stub)]  # fmt: skip
    env = {**os.environ, "GRADESCOPE_KERNEL_USER": str(TEST_UID)}
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"score 0 / {full():g}" in proc.stdout
    for gid, pts in _points().items():
        assert f"0/{pts:g}  {gid} (" in proc.stdout
    assert re.search(r"\[setup\] the grader imports from \S+/source/autograder/", proc.stdout)
    assert "1 of 1 notebooks graded as expected" in proc.stdout
    assert trial.main(A, tmp_path / "no.zip", []) == 2


@needs_bwrap
def test_reading_the_solutions_gains_nothing(gs_roots):
    gs_root, venv, _ = gs_roots[A]
    target = gs_root / "source" / "solutions" / A / f"{A}.ipynb"
    assert "BEGIN SOLUTION" in target.read_text()  # the cheat aims at a real file
    submit(gs_root, reads_solutions(gs_root))
    proc, doc = run(gs_root, venv)
    assert_valid(doc)
    assert doc["score"] == 0


@needs_bwrap
def test_writing_results_json_gains_nothing(fresh):
    gs_root, venv = fresh
    submit(gs_root, writes_results(gs_root))
    proc, doc = run(gs_root, venv)
    time.sleep(2)  # the daemon the notebook left, if it survived, would rewrite it now
    doc = json.loads((gs_root / "results" / "results.json").read_text())
    assert_valid(doc)
    assert doc["score"] == 0


def test_a_broken_file_is_reported(gs_roots):
    gs_root, venv, _ = gs_roots[A]
    submit(gs_root, b'{"cells": [ this is not json', name="broken.ipynb")
    proc, doc = run(gs_root, venv)
    assert_valid(doc)
    assert doc["score"] == 0
    assert "not valid JSON" in doc["output"]
    assert all("not valid JSON" in t["output"] for t in doc["tests"])


def test_a_missing_or_doubled_notebook_is_reported(gs_roots):
    gs_root, venv, _ = gs_roots[A]
    submit(gs_root, b"print('hi')\n", name="answers.py")
    (gs_root / "submission" / "._answers.ipynb").write_bytes(b"\0\5\26\7")  # macOS's litter
    proc, doc = run(gs_root, venv)
    assert proc.returncode == 0
    assert_valid(doc)
    assert doc["score"] == 0 and "no notebook was submitted" in doc["output"]
    assert "answers.py" in doc["output"]
    submit(gs_root, samples.build(A, {}), name="a.ipynb")
    nb.write(samples.build(A, {}), gs_root / "submission" / "b.ipynb")
    proc, doc = run(gs_root, venv)
    assert_valid(doc)
    assert doc["score"] == 0 and "2 notebooks were submitted" in doc["output"]


def _failing_bwrap(gs_root: Path) -> dict:
    fake = gs_root / "fakebin"
    fake.mkdir(exist_ok=True)
    (fake / "bwrap").write_text("#!/bin/sh\necho 'bwrap: refused (test)' >&2\nexit 1\n")
    (fake / "bwrap").chmod(0o755)
    return {"PATH": f"{fake}:{local.SYSTEM_PATH}"}


def test_without_a_safe_way_nothing_runs_and_the_exit_status_says_so(gs_roots):
    gs_root, venv, _ = gs_roots[A]
    marker = gs_root / "ran.txt"
    submit(gs_root, leaves_a_marker(A, marker))
    env = {**_failing_bwrap(gs_root), "GRADESCOPE_KERNEL_USER": "no-such-user-here"}
    proc, doc = run(gs_root, venv, **env)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert_valid(doc)
    assert doc["score"] == 0
    assert "could not run safely" in doc["output"] and "no-such-user-here" in doc["output"]
    assert not marker.exists()


# -- grading as an unprivileged user (Gradescope's container) --------------------------------
def _runs_as_uid(python: Path) -> bool:
    cmd = isolation.as_user(TEST_UID, TEST_UID, [str(python), "-c", "import numpy, ipykernel"])
    try:
        return subprocess.run(cmd, capture_output=True, cwd="/", timeout=120).returncode == 0
    finally:
        isolation.kill_uid(TEST_UID)


@pytest.fixture
def uid_root(fresh):
    """A fresh root whose kernel must run as the test uid (bubblewrap made to fail)."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("the unprivileged-user isolation needs root and setpriv")
    gs_root, venv = fresh
    if not _runs_as_uid(venv / "bin" / "python"):
        pytest.skip(f"the test uid cannot run the zip's venv ({venv}) here")
    yield gs_root, venv, {**_failing_bwrap(gs_root), "GRADESCOPE_KERNEL_USER": str(TEST_UID)}


def _uid_processes() -> list[str]:
    return [p for p in os.listdir("/proc") if p.isdigit() and TEST_UID in isolation._uids(p)]


def test_as_an_unprivileged_user_a_correct_answer_gets_full_marks(uid_root):
    gs_root, venv, env = uid_root
    submit(gs_root, samples.build(A, {}))
    proc, doc = run(gs_root, venv, **env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert_valid(doc)
    assert_graded_by_the_extract(doc, gs_root)
    assert doc["score"] == full()
    assert f"unprivileged user {TEST_UID}" in doc["output"]


def test_as_an_unprivileged_user_reading_the_solutions_gains_nothing(uid_root):
    gs_root, venv, env = uid_root
    submit(gs_root, reads_solutions(gs_root))
    proc, doc = run(gs_root, venv, **env)
    assert_valid(doc)
    assert doc["score"] == 0
    assert "unprivileged user" in doc["output"]
    assert stat.S_IMODE((gs_root / "source").stat().st_mode) == 0o700


def test_as_an_unprivileged_user_writing_results_gains_nothing_and_no_process_survives(uid_root):
    gs_root, venv, env = uid_root
    submit(gs_root, writes_results(gs_root))
    proc, doc = run(gs_root, venv, **env)
    assert _uid_processes() == []
    time.sleep(1)
    doc = json.loads((gs_root / "results" / "results.json").read_text())
    assert_valid(doc)
    assert doc["score"] == 0
    assert "unprivileged user" in doc["output"]


def test_an_unprivileged_user_who_cannot_run_the_interpreter_means_nothing_runs(gs_roots):
    """The course's own venv, whose Python lives under /root here: the kernel's user cannot run
    it, the probe run as that user says so, and grading refuses rather than start a kernel as
    root."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("the unprivileged-user isolation needs root and setpriv")
    if _runs_as_uid(COURSE_VENV / "bin" / "python"):
        pytest.skip("the test uid can run the course venv here")
    gs_root, _, _ = gs_roots[A]
    submit(gs_root, samples.build(A, {}))
    env = {**_failing_bwrap(gs_root), "GRADESCOPE_KERNEL_USER": str(TEST_UID)}
    proc, doc = run(gs_root, COURSE_VENV, **env)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert_valid(doc)
    assert doc["score"] == 0 and "the unprivileged user is not safe" in doc["output"]


def test_a_broken_image_still_tells_the_student(zip_path):
    """No venv where run_autograder looks ($GRADESCOPE_ROOT/venv, setup.sh never ran): it writes
    a valid results.json itself, score 0."""
    gs_root = local.extract(zip_path)
    try:
        submit(gs_root, samples.build(A, {}))
        env = local.clean_env(GRADESCOPE_ROOT=gs_root)
        proc = subprocess.run([str(gs_root / "run_autograder")], capture_output=True, text=True,
                              env=env, timeout=120)  # fmt: skip
        doc = json.loads((gs_root / "results" / "results.json").read_text())
        assert proc.returncode != 0
        assert validate(doc) == [] and doc["score"] == 0
        assert "could not start" in doc["output"]
    finally:
        _remove(gs_root)
