"""The Gradescope autograder, run as Gradescope runs it, without Docker and without downloads.

`make gradescope`'s zip is unpacked into ``$ROOT/source`` of a temporary root, the course's own
``.venv`` is linked as ``$ROOT/venv``, ``run_autograder`` is copied to ``$ROOT/`` and run with
``GRADESCOPE_ROOT=$ROOT`` on one notebook in ``$ROOT/submission/``; ``results.json`` is read back
and checked against Gradescope's documented fields.

Two isolations are exercised: bubblewrap (where it runs), and, as root, the unprivileged user that
Gradescope's container falls back to (bubblewrap made to fail by a ``bwrap`` first on PATH; the
kernel's user is a bare uid that no account or process on this machine uses). Without either,
grading must refuse (exit 3, score 0) and run nothing.

The temporary roots are made in /var/tmp with mode 755, not under pytest's own folders (mode 700):
only the grader's own locks may keep the kernel's user out of the root's source/ and results/.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import pytest

from autograder import nb, samples
from autograder.grade.sandbox import probe
from autograder.gradescope import build as gs_build
from autograder.gradescope import isolation
from autograder.gradescope.results import validate

ROOT = Path(__file__).resolve().parent.parent
A = "02_sparse_backward"
VENV = ROOT / ".venv"
# No account and no process has it (one per test process, so parallel runs never kill each
# other's kernels): every process of it may be killed.
TEST_UID = 470_000 + os.getpid() % 10_000
SANDBOXED, WHY_NOT = probe()
needs_bwrap = pytest.mark.skipif(not SANDBOXED, reason=f"bubblewrap cannot run here: {WHY_NOT}")
BLOCKED = ("nbgrader", "torch", "jupyterlab", "jupyter_book", "playwright", "matplotlib")


def _points() -> dict[str, float]:
    return nb.points(nb.read(ROOT / "solutions" / A / f"{A}.ipynb"))


FULL = sum(_points().values())


@pytest.fixture(scope="module")
def zip_path(tmp_path_factory) -> Path:
    return gs_build.build(A, out=tmp_path_factory.mktemp("zip") / f"{A}.zip")


@pytest.fixture(scope="module")
def blocker(tmp_path_factory) -> Path:
    """A folder on PYTHONPATH whose nbgrader, torch, JupyterLab... fail to import: grading must
    not need what the grading-only requirements leave out."""
    d = tmp_path_factory.mktemp("blocked")
    for name in BLOCKED:
        (d / name).mkdir()
        (d / name / "__init__.py").write_text(f"raise ImportError('{name} is not for grading')\n")
    return d


def _scratch_parent() -> str | None:
    return "/var/tmp" if os.access("/var/tmp", os.W_OK) else None


def make_root(zip_path: Path, venv: Path) -> Path:
    """A fresh Gradescope root: source/ (the zip), venv -> venv, run_autograder, submission/."""
    root = Path(tempfile.mkdtemp(prefix="gs-test-", dir=_scratch_parent()))
    os.chmod(root, 0o755)  # only the grader's own locks may protect what is inside
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(root / "source")
        for info in zf.infolist():
            os.chmod(root / "source" / info.filename, (info.external_attr >> 16) & 0o777)
    (root / "venv").symlink_to(venv)
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
    (root / "submission").mkdir()
    return root


def run(
    root: Path, blocker: Path, env: dict | None = None
) -> tuple[subprocess.CompletedProcess, dict]:
    full_env = {
        **os.environ,
        "GRADESCOPE_ROOT": str(root),
        "PYTHONPATH": str(blocker),
        **(env or {}),
    }
    full_env.pop("COURSE_GRADE_NO_SANDBOX", None)
    proc = subprocess.run(
        [str(root / "run_autograder")], capture_output=True, text=True, env=full_env, timeout=300
    )
    out = root / "results" / "results.json"
    doc = json.loads(out.read_text()) if out.exists() else None
    return proc, doc


def submit(root: Path, notebook, name: str = "my work.ipynb") -> None:
    path = root / "submission" / name
    if isinstance(notebook, bytes):
        path.write_bytes(notebook)
    else:
        nb.write(notebook, path)


def by_name(doc: dict) -> dict[str, dict]:
    return {t["name"].split(" ")[0]: t for t in doc["tests"]}


def assert_valid(doc: dict) -> None:
    assert doc is not None, "no results.json was written"
    assert validate(doc) == []
    assert doc["stdout_visibility"] == "hidden"
    assert doc["score"] == pytest.approx(sum(t["score"] for t in doc["tests"]))
    assert {t["name"].split(" ")[0] for t in doc["tests"]} == set(_points())
    assert doc["extra_data"]["release"] == nb.stamp_label(nb.release_stamp(A))


# -- submissions -----------------------------------------------------------------------------
def reads_solutions(root: Path) -> dict:
    """Answer cells that execute the reference's answer cells, read from the zip's source."""
    path = root / "source" / "solutions" / A / f"{A}.ipynb"
    steal = f"""
import glob, json
_ns = {{}}
for _p in [{str(path)!r}] + glob.glob({str(root)!r} + "/**/solutions/*/*.ipynb", recursive=True):
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


def writes_results(root: Path) -> dict:
    """A stub that writes a perfect results.json, and leaves a process rewriting it afterwards."""
    target = root / "results" / "results.json"
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


def stub() -> dict:
    return samples.build(A, None)


# -- the zip ---------------------------------------------------------------------------------
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
        n.startswith(("autograder/samples", "autograder/release", "coursekit")) for n in names
    )
    assert cfg == {"assignment": A, "release": nb.release_stamp(A), "visibility": "visible"}
    pins = dict(line.split("==") for line in reqs.splitlines() if "==" in line)
    assert pins["numpy"] == gs_build.requirement_pins()["numpy"]
    assert {"ipykernel", "jupyter-client", "jinja2", "pyzmq"} <= set(pins)
    assert not set(pins) & {
        "torch",
        "jupyter-book",
        "jupyterlab",
        "notebook",
        "nbgrader",
        "playwright",
    }


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


def test_setup_sh_keeps_an_existing_venv_and_locks_the_source(zip_path, tmp_path):
    root = make_root(zip_path, VENV)
    try:
        env = {**os.environ, "GRADESCOPE_ROOT": str(root), "GRADESCOPE_KERNEL_USER": str(TEST_UID)}
        proc = subprocess.run(
            ["bash", str(root / "source" / "setup.sh")], capture_output=True, text=True, env=env
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "exists: kept" in proc.stdout
        assert (root / "venv").is_symlink()
        for d in ("source", "results"):
            assert stat.S_IMODE((root / d).stat().st_mode) == 0o700
    finally:
        shutil.rmtree(root, ignore_errors=True)


# -- grading in bubblewrap -------------------------------------------------------------------
@pytest.fixture
def bw_root(zip_path):
    root = make_root(zip_path, VENV)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@needs_bwrap
def test_a_correct_answer_gets_full_marks(bw_root, blocker):
    submit(bw_root, samples.build(A, {}))
    proc, doc = run(bw_root, blocker)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert_valid(doc)
    assert doc["score"] == FULL
    assert all(t["status"] == "passed" for t in doc["tests"])
    assert "bubblewrap" in doc["output"]


@needs_bwrap
def test_a_classic_mistake_loses_points_and_is_named(bw_root, blocker):
    mistake = samples.module(A).MISTAKES[samples.module(A).DEMO_MISTAKE]
    submit(bw_root, samples.build(A, mistake.sources))
    proc, doc = run(bw_root, blocker)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert_valid(doc)
    tests = by_name(doc)
    assert doc["score"] == FULL - sum(_points()[g] for g in mistake.fails)
    for gid in mistake.fails:
        assert tests[gid]["status"] == "failed" and tests[gid]["score"] == 0
        assert mistake.says in tests[gid]["output"]


@needs_bwrap
def test_the_untouched_stub_gets_nothing(bw_root, blocker):
    submit(bw_root, stub(), name=f"{A}.ipynb")
    proc, doc = run(bw_root, blocker)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert_valid(doc)
    assert doc["score"] == 0
    assert all("still raises NotImplementedError" in t["output"] for t in doc["tests"])


@needs_bwrap
def test_reading_the_solutions_gains_nothing(bw_root, blocker):
    target = bw_root / "source" / "solutions" / A / f"{A}.ipynb"
    assert "BEGIN SOLUTION" in target.read_text()  # the cheat aims at a real file
    submit(bw_root, reads_solutions(bw_root))
    proc, doc = run(bw_root, blocker)
    assert_valid(doc)
    assert doc["score"] == 0


@needs_bwrap
def test_writing_results_json_gains_nothing(bw_root, blocker):
    submit(bw_root, writes_results(bw_root))
    proc, doc = run(bw_root, blocker)
    time.sleep(2)  # the daemon the notebook left, if it survived, would rewrite it now
    doc = json.loads((bw_root / "results" / "results.json").read_text())
    assert_valid(doc)
    assert doc["score"] == 0


def test_a_broken_file_is_reported(bw_root, blocker):
    submit(bw_root, b'{"cells": [ this is not json', name="broken.ipynb")
    proc, doc = run(bw_root, blocker)
    assert_valid(doc)
    assert doc["score"] == 0
    assert "not valid JSON" in doc["output"]
    assert all("not valid JSON" in t["output"] for t in doc["tests"])


def test_a_missing_or_doubled_notebook_is_reported(bw_root, blocker):
    (bw_root / "submission" / "answers.py").write_text("print('hi')\n")
    (bw_root / "submission" / "._answers.ipynb").write_bytes(b"\0\5\26\7")  # macOS's litter
    proc, doc = run(bw_root, blocker)
    assert proc.returncode == 0
    assert_valid(doc)
    assert doc["score"] == 0 and "no notebook was submitted" in doc["output"]
    assert "answers.py" in doc["output"]
    submit(bw_root, samples.build(A, {}), name="a.ipynb")
    submit(bw_root, samples.build(A, {}), name="b.ipynb")
    proc, doc = run(bw_root, blocker)
    assert_valid(doc)
    assert doc["score"] == 0 and "2 notebooks were submitted" in doc["output"]


def _failing_bwrap(root: Path) -> dict:
    fake = root / "fakebin"
    fake.mkdir(exist_ok=True)
    (fake / "bwrap").write_text("#!/bin/sh\necho 'bwrap: refused (test)' >&2\nexit 1\n")
    (fake / "bwrap").chmod(0o755)
    return {"PATH": f"{fake}:{os.environ['PATH']}"}


def test_without_a_safe_way_nothing_runs_and_the_exit_status_says_so(bw_root, blocker):
    marker = bw_root / "ran.txt"
    code = (
        f"open({str(marker)!r}, 'w').write('ran')\n\n"
        + samples.reference_sources(A)["embedding_backward"]
    )
    submit(bw_root, samples.build(A, {"embedding_backward": code}))
    env = {**_failing_bwrap(bw_root), "GRADESCOPE_KERNEL_USER": "no-such-user-here"}
    proc, doc = run(bw_root, blocker, env)
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


@pytest.fixture(scope="module")
def uid_venv(tmp_path_factory) -> Path:
    """The course venv if the test uid can run it; else a venv of the same Python version made
    from the system's interpreter that sees the course venv's packages (here the course's Python
    lives under /root, which an unprivileged user cannot enter)."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("the unprivileged-user isolation needs root and setpriv")
    if _runs_as_uid(VENV / "bin" / "python"):
        yield VENV
        return
    ver = f"{sys.version_info.major}.{sys.version_info.minor}"
    system = shutil.which(f"python{ver}", path="/usr/bin:/usr/local/bin")
    if system is None:
        pytest.skip(f"no system python{ver} that an unprivileged user can run")
    d = Path(tempfile.mkdtemp(prefix="gs-uid-venv-", dir=_scratch_parent()))
    os.chmod(d, 0o755)
    subprocess.run([system, "-m", "venv", "--without-pip", str(d / "venv")], check=True)
    site = next((VENV / "lib").glob("python*/site-packages"))
    mine = next((d / "venv" / "lib").glob("python*/site-packages"))
    (mine / "course-venv.pth").write_text(f"import site; site.addsitedir({str(site)!r})\n")
    if not _runs_as_uid(d / "venv" / "bin" / "python"):
        pytest.skip("no interpreter that an unprivileged user can run here")
    yield d / "venv"
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def uid_root(zip_path, uid_venv):
    root = make_root(zip_path, uid_venv)
    yield root, {**_failing_bwrap(root), "GRADESCOPE_KERNEL_USER": str(TEST_UID)}
    isolation.kill_uid(TEST_UID)
    shutil.rmtree(root, ignore_errors=True)


def _uid_processes() -> list[str]:
    return [p for p in os.listdir("/proc") if p.isdigit() and TEST_UID in isolation._uids(p)]


def test_as_an_unprivileged_user_a_correct_answer_gets_full_marks(uid_root, blocker):
    root, env = uid_root
    submit(root, samples.build(A, {}))
    proc, doc = run(root, blocker, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert_valid(doc)
    assert doc["score"] == FULL
    assert f"unprivileged user {TEST_UID}" in doc["output"]


def test_as_an_unprivileged_user_reading_the_solutions_gains_nothing(uid_root, blocker):
    root, env = uid_root
    submit(root, reads_solutions(root))
    proc, doc = run(root, blocker, env)
    assert_valid(doc)
    assert doc["score"] == 0
    assert "unprivileged user" in doc["output"]
    assert stat.S_IMODE((root / "source").stat().st_mode) == 0o700


def test_as_an_unprivileged_user_writing_results_gains_nothing_and_no_process_survives(
    uid_root, blocker
):
    root, env = uid_root
    submit(root, writes_results(root))
    proc, doc = run(root, blocker, env)
    assert _uid_processes() == []
    time.sleep(1)
    doc = json.loads((root / "results" / "results.json").read_text())
    assert_valid(doc)
    assert doc["score"] == 0
    assert "unprivileged user" in doc["output"]


def test_an_unprivileged_user_who_cannot_run_the_interpreter_means_nothing_runs(zip_path, blocker):
    """Here the course venv's Python lives under /root: the kernel's user cannot run it, the
    probe run as that user says so, and grading refuses rather than start a kernel as root."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("the unprivileged-user isolation needs root and setpriv")
    if _runs_as_uid(VENV / "bin" / "python"):
        pytest.skip("the test uid can run the course venv here")
    root = make_root(zip_path, VENV)
    try:
        submit(root, samples.build(A, {}))
        env = {**_failing_bwrap(root), "GRADESCOPE_KERNEL_USER": str(TEST_UID)}
        proc, doc = run(root, blocker, env)
        assert proc.returncode == 3, proc.stdout + proc.stderr
        assert_valid(doc)
        assert doc["score"] == 0 and "the unprivileged user is not safe" in doc["output"]
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_broken_image_still_tells_the_student(zip_path, blocker, tmp_path):
    """No Python in the venv: run_autograder itself writes a valid results.json, score 0."""
    root = make_root(zip_path, tmp_path / "no-such-venv")
    try:
        submit(root, samples.build(A, {}))
        proc, doc = run(root, blocker)
        assert proc.returncode != 0
        assert validate(doc) == [] and doc["score"] == 0
        assert "could not start" in doc["output"]
    finally:
        shutil.rmtree(root, ignore_errors=True)
