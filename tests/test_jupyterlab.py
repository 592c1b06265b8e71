"""JupyterLab as students meet it.

* Every released exercise (exercises/*/*.ipynb) runs top to bottom with nbclient, as a student
  runs it on the first day: in a copy of its folder, without this repository's packages (the
  release inlines what it needs), without NBGRADER_EXECUTION. The environment cell passes; the
  only cells that fail are the graded test cells and cells that call the stubs, and they fail
  with the stubs' NotImplementedError.
* The same notebook with the reference answers filled in (autograder.samples.build(a, {})) runs
  with no error at all, the timing cell included (it really times: that is the slow part).
* nbgrader's JupyterLab and server extensions are installed and enabled.
* `make lab`'s command starts a server on a free local port that serves the exercises.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from autograder import nb as notebooks
from autograder import samples
from autograder.course import EXERCISES, ROOT

pytestmark = pytest.mark.slow

RELEASED = sorted(EXERCISES.glob("*/*.ipynb"))
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# Packages of the instructor's repository: a released notebook must run without them.
NOT_FOR_STUDENTS = ("autograder", "coursekit")


def _assignment(path: Path) -> str:
    return path.parent.name


def _student_folder(tmp_path: Path, assignment: str, nb: dict) -> Path:
    """A student's copy of the exercise folder, where the instructor's packages do not import."""
    folder = tmp_path / assignment
    folder.mkdir(parents=True)
    for f in (EXERCISES / assignment).iterdir():
        if f.is_file() and f.suffix != ".ipynb":
            (folder / f.name).write_bytes(f.read_bytes())
    notebooks.write(nb, folder / f"{assignment}.ipynb")
    # The kernel's working directory comes first on sys.path: these shadow the editable install.
    for pkg in NOT_FOR_STUDENTS:
        (folder / pkg).mkdir()
        (folder / pkg / "__init__.py").write_text(
            f"raise ImportError('{pkg} is the instructor repository; students do not have it')\n"
        )
    return folder


def _run(nb: dict, folder: Path, monkeypatch) -> tuple[nbformat.NotebookNode, float]:
    """Execute like Run All in JupyterLab (errors do not stop the run); returns (nb, seconds)."""
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    node = nbformat.reads(notebooks.dumps(nb), as_version=4)
    client = NotebookClient(
        node,
        timeout=600,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(folder)}},
    )
    start = time.perf_counter()
    client.execute()
    return node, time.perf_counter() - start


def _errors(cell) -> list[dict]:
    return [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]


def _describe(i: int, cell) -> str:
    nbg = cell.get("metadata", {}).get("nbgrader", {})
    first = "".join(cell["source"]).strip().splitlines()[:1]
    return f"cell {i} ({nbg.get('grade_id') or cell.get('id')}: {first[0][:60] if first else ''})"


def _traceback(err: dict) -> str:
    return ANSI.sub("", "\n".join(err.get("traceback", [])))[-1500:]


def _inline_kind(cell) -> str | None:
    return (cell.get("metadata", {}).get("course") or {}).get("inline")


def _stub_names(nb) -> set[str]:
    """The functions students write: the grade_ids of the answer cells."""
    return {
        c["metadata"]["nbgrader"]["grade_id"]
        for c in nb["cells"]
        if c.get("metadata", {}).get("nbgrader", {}).get("solution")
    }


def test_there_are_released_exercises():
    assert RELEASED, "no exercises/*/*.ipynb: run `make release`"


@pytest.mark.parametrize("path", RELEASED, ids=_assignment)
def test_released_notebook_runs_as_a_student_first_sees_it(path, tmp_path, monkeypatch):
    """Stubs everywhere: the environment cell passes; test cells and cells that call the stubs
    fail with NotImplementedError, and nothing else fails.

    The timing cell is left out of this run (it runs, for real, in the reference run below:
    it does not use the student's functions, and it is most of the time)."""
    a = _assignment(path)
    nb = notebooks.read(path)
    assert not any(
        re.search(rf"^\s*(from|import)\s+{pkg}\b", "".join(c["source"]), re.M)
        for c in nb["cells"]
        if c["cell_type"] == "code"
        for pkg in NOT_FOR_STUDENTS
    ), "a released notebook must not import the instructor's packages"
    kinds = [_inline_kind(c) for c in nb["cells"]]
    assert "envcheck" in kinds, "the environment cell is missing"
    nb["cells"] = [c for c in nb["cells"] if _inline_kind(c) != "timing"]
    stubs = _stub_names(nb)
    assert stubs, "no answer cells?"
    folder = _student_folder(tmp_path, a, nb)
    ran, seconds = _run(nb, folder, monkeypatch)
    print(f"\n{a}: stub run {seconds:.1f} s")

    bad, test_cells, failed_tests = [], 0, 0
    for i, cell in enumerate(ran.cells):
        if cell.cell_type != "code":
            continue
        nbg = cell.get("metadata", {}).get("nbgrader", {})
        is_test = nbg.get("grade") and not nbg.get("solution")
        errs = _errors(cell)
        src = "".join(cell.source)
        calls_stub = any(re.search(rf"\b{re.escape(f)}\s*\(", src) for f in stubs)
        test_cells += bool(is_test)
        failed_tests += bool(is_test and errs)
        if _inline_kind(cell) == "envcheck":
            if errs:
                bad.append(
                    f"{_describe(i, cell)}: the environment cell failed\n{_traceback(errs[0])}"
                )
            continue
        if is_test and not errs:
            bad.append(f"{_describe(i, cell)}: a test cell passes with the stubs (free points)")
        for err in errs:
            if not (is_test or calls_stub or nbg.get("solution")):
                bad.append(f"{_describe(i, cell)}: fails but calls no stub\n{_traceback(err)}")
            elif err["ename"] != "NotImplementedError":
                bad.append(
                    f"{_describe(i, cell)}: {err['ename']} instead of the stub's "
                    f"NotImplementedError\n{_traceback(err)}"
                )
    assert test_cells and failed_tests == test_cells
    assert not bad, "\n\n".join(bad)


@pytest.mark.parametrize("path", RELEASED, ids=_assignment)
def test_release_with_the_reference_answers_runs_clean(path, tmp_path, monkeypatch):
    """The released notebook, answers filled in from the reference: every cell passes, the
    visible tests and the (real) timing cell included."""
    a = _assignment(path)
    nb = samples.build(a, {})
    folder = _student_folder(tmp_path, a, nb)
    ran, seconds = _run(nb, folder, monkeypatch)
    print(f"\n{a}: reference run {seconds:.1f} s")
    bad = [
        f"{_describe(i, c)}: {e['ename']}: {e['evalue']}\n{_traceback(e)}"
        for i, c in enumerate(ran.cells)
        if c.cell_type == "code"
        for e in _errors(c)
    ]
    assert not bad, "\n\n".join(bad)
    timing = [c for c in ran.cells if _inline_kind(c) == "timing"]
    for cell in timing:
        kinds = {k for o in cell.outputs for k in o.get("data", {})}
        assert "image/png" in kinds, f"the timing cell drew no plot: {kinds}"


def _jupyter(*args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "jupyter", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return ANSI.sub("", proc.stdout + proc.stderr)


def test_nbgrader_jupyterlab_extensions_are_installed():
    """nbgrader 0.9 ships one JupyterLab extension, @jupyter/nbgrader (assignment list, course
    list, validate button, create assignment, formgrader), backed by server extensions."""
    lab = _jupyter("labextension", "list")
    line = next((ln for ln in lab.splitlines() if "@jupyter/nbgrader" in ln), "")
    assert line, f"nbgrader's JupyterLab extension is not installed:\n{lab}"
    assert "enabled" in line and "OK" in line, line
    server = _jupyter("server", "extension", "list")
    for ext in ("assignment_list", "course_list", "validate_assignment", "formgrader"):
        m = re.search(rf"nbgrader\.server_extensions\.{ext}\s+enabled", server)
        assert m, f"nbgrader's {ext} server extension is not enabled:\n{server}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _make_lab_command(port: int) -> list[str]:
    """The `jupyter lab` line of `make lab` (a dry run: nothing is copied or started)."""
    proc = subprocess.run(
        ["make", "-s", "-n", "lab", f"PORT={port}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [ln.strip() for ln in proc.stdout.splitlines() if ln.strip().startswith("jupyter lab")]
    assert len(lines) == 1, proc.stdout
    return shlex.split(lines[0])


def _get(url: str, token: str) -> tuple[int, bytes]:
    req = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_make_lab_serves_the_exercises(tmp_path):
    """`make lab`'s command, on a free port, over a copy of exercises/ (never the student's own
    workspace/): JupyterLab answers, with nbgrader's extension, and serves every notebook."""
    port = _free_port()
    cmd = _make_lab_command(port)
    assert f"--port={port}" in cmd and "--no-browser" in cmd, cmd
    work = tmp_path / "workspace"
    work.mkdir()
    for nb in RELEASED:
        (work / nb.parent.name).mkdir()
        (work / nb.parent.name / nb.name).write_bytes(nb.read_bytes())
    cmd = [arg for arg in cmd if not arg.startswith("--notebook-dir")]
    token = "course-smoke-test"
    cmd = [sys.executable, "-m", "jupyter", *cmd[1:]]
    cmd += [
        f"--notebook-dir={work}",
        f"--ServerApp.token={token}",
        "--ServerApp.ip=127.0.0.1",
        "--ServerApp.port_retries=0",
    ]
    env = dict(os.environ)
    for var, sub in (("JUPYTER_RUNTIME_DIR", "runtime"), ("JUPYTER_CONFIG_DIR", "config")):
        env[var] = str(tmp_path / sub)
    log = (tmp_path / "lab.log").open("w")
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, "jupyter lab exited:\n" + (tmp_path / "lab.log").read_text()
            try:
                if _get(f"{base}/api/status", token)[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, (
                "no answer in 90 s:\n" + (tmp_path / "lab.log").read_text()
            )
            time.sleep(0.5)
        status, body = _get(f"{base}/lab", token)
        assert status == 200, body[:500]
        page = body.decode("utf-8", "replace")
        assert "jupyter-config-data" in page and "@jupyter/nbgrader" in page, (
            "JupyterLab's page does not load nbgrader's extension"
        )
        status, body = _get(f"{base}/api/contents", token)
        assert status == 200
        listed = {item["name"] for item in json.loads(body)["content"]}
        assert {nb.parent.name for nb in RELEASED} <= listed, listed
        for nb in RELEASED:
            rel = f"{nb.parent.name}/{nb.name}"
            status, body = _get(f"{base}/api/contents/{rel}?content=1", token)
            assert status == 200, (rel, body[:300])
            model = json.loads(body)
            assert model["type"] == "notebook"
            assert len(model["content"]["cells"]) == len(notebooks.read(nb)["cells"])
        status, body = _get(f"{base}/api/kernelspecs", token)
        assert status == 200 and "python3" in json.loads(body)["kernelspecs"]
        assert _get(f"{base}/api/contents", "wrong-token")[0] == 403, "the token is not checked"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
        log.close()
