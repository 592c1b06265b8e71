"""Grades you can trust anywhere (issue: fail closed, a sandbox that starts wherever Python lives,
a gradebook a submission cannot change, plain nbgrader that never records silent zeros).

Every run here grades chapter 1 in a temporary grading folder; nothing touches grading/.
"""

from __future__ import annotations

import csv
import html
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from autograder import nb as notebooks
from autograder import samples
from autograder.course import COURSE_ID, ROOT, SOLUTIONS
from autograder.grade import gradebook
from autograder.grade.sandbox import probe

pytestmark = pytest.mark.slow
A = "01_one_hot_lookup"
FAST = ["--cell-timeout", "5", "--notebook-budget", "20", "--memory-gib", "1.5", "--jobs", "1"]
needs_sandbox = pytest.mark.skipif(
    not probe()[0], reason=f"bubblewrap cannot run here: {probe()[1]}"
)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("prepared")
    gradebook.prepare(d, [A])
    return d


def _grading_dir(tmp_path: Path, prepared: Path | None, students: dict) -> Path:
    d = tmp_path / "grading"
    d.mkdir()
    if prepared is not None:
        for name in ("gradebook.db", ".gradebook_sources.json"):
            shutil.copy2(prepared / name, d / name)
    for student, nb in students.items():
        notebooks.write(nb, d / "submitted" / student / A / f"{A}.ipynb")
    return d


def _grade(d: Path, *extra: str, env: dict | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "autograder.grade", "--grading-dir", str(d), "--assignment", A]
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [*cmd, *FAST, *extra], cwd=ROOT, capture_output=True, text=True, env=full_env, timeout=600
    )


def _failing_bwrap(tmp_path: Path) -> dict:
    """A PATH whose first bwrap always fails, as a refused user namespace would."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    return {"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}


def _report(d: Path) -> dict:
    with (d / "test_report.csv").open(encoding="utf-8") as f:
        return {(r["student"], r["test"]): r for r in csv.DictReader(f)}


def test_a_sandbox_that_cannot_start_stops_grading_and_records_nothing(tmp_path):
    d = _grading_dir(tmp_path, None, {"alice": samples.build(A, {})})
    proc = _grade(d, env=_failing_bwrap(tmp_path))
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert "sandbox cannot start" in proc.stderr and "Permission denied" in proc.stderr
    assert "apt-get install bubblewrap" in proc.stderr and "NO_SANDBOX=1" in proc.stderr
    written = {p.name for p in d.iterdir()} - {"submitted", ".grade.lock"}
    assert not written, f"nothing may be recorded: {written}"


@pytest.mark.parametrize("how", ["flag", "env"])
def test_the_explicit_opt_out_grades_and_says_so_in_report_and_feedback(tmp_path, prepared, how):
    d = _grading_dir(tmp_path, prepared, {"alice": samples.build(A, {})})
    env = _failing_bwrap(tmp_path)
    extra = ["--no-sandbox"] if how == "flag" else []
    if how == "env":
        env["COURSE_GRADE_NO_SANDBOX"] = "1"
    proc = _grade(d, *extra, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "WITHOUT the sandbox" in proc.stderr
    assert {r["sandboxed"] for r in _report(d).values()} == {"NO"}
    page = (d / "feedback" / "alice" / A / f"{A}.html").read_text(encoding="utf-8")
    assert "WITHOUT the grading sandbox" in page


def test_any_other_value_of_the_variable_means_sandboxed(tmp_path):
    d = _grading_dir(tmp_path, None, {"alice": samples.build(A, {})})
    env = {**_failing_bwrap(tmp_path), "COURSE_GRADE_NO_SANDBOX": "yes"}
    assert _grade(d, env=env).returncode == 3


def test_make_passes_no_sandbox_only_when_asked():
    def dry(*args):
        out = subprocess.run(
            ["make", "-n", "grade", *args], cwd=ROOT, capture_output=True, text=True
        )
        return [ln for ln in out.stdout.splitlines() if "autograder.grade" in ln][0]

    assert "--no-sandbox" in dry("NO_SANDBOX=1")
    assert "--no-sandbox" not in dry() and "--no-sandbox" not in dry("NO_SANDBOX=0")


@needs_sandbox
def test_a_course_whose_venv_is_a_symbolic_link_grades_in_the_sandbox(tmp_path):
    """The course folder holds .venv -> an environment elsewhere; the kernel must still start."""
    course = tmp_path / "course"
    for name in ("autograder", "solutions", "exercises", "coursekit"):
        shutil.copytree(ROOT / name, course / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "nbgrader_config.py", course)
    (course / ".venv").symlink_to(Path(sys.prefix))
    cheat = samples.build(A, {"embedding_forward": _steal(course / "solutions")})
    d = _grading_dir(tmp_path, None, {"honest": samples.build(A, {}), "thief": cheat})
    python = course / ".venv" / "bin" / Path(sys.executable).name
    cmd = [str(python), "-m", "autograder.grade", "--grading-dir", str(d), *FAST]
    proc = subprocess.run(cmd, cwd=course, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "sandbox: bubblewrap" in proc.stderr
    rows = _report(d)
    assert all(r["score"] == r["max"] for (s, _), r in rows.items() if s == "honest")
    thief = {t: r for (s, t), r in rows.items() if s == "thief"}
    assert thief["test_forward_values"]["score"] == "0", "the copy's solutions must be hidden"


def _steal(solutions: Path) -> str:
    return f"""
import glob, json
_ns = {{}}
for _p in glob.glob({str(solutions)!r} + "/*/*.ipynb"):
    for _c in json.load(open(_p))["cells"]:
        if _c.get("metadata", {{}}).get("nbgrader", {{}}).get("solution"):
            exec("".join(_c["source"]), _ns)

def embedding_forward(E, ids):
    return _ns["embedding_forward"](E, ids)
"""


VANDAL = """
import sqlite3
con = sqlite3.connect({db!r})
con.execute("UPDATE grade SET auto_score = 1000, manual_score = 1000, extra_credit = 50")
con.execute("UPDATE comment SET manual_comment = 'excellent'")
con.commit()
"""


def test_a_submission_that_rewrites_the_gradebook_gains_nothing_even_unsandboxed(
    tmp_path, prepared
):
    from nbgrader.api import Gradebook

    d = _grading_dir(tmp_path, prepared, {"alice": samples.build(A, {})})
    assert _grade(d).returncode == 0
    url = gradebook.db_url(d)
    with Gradebook(url, course_id=COURSE_ID) as gb:  # the instructor's override, in formgrader
        override = gb.find_grade("test_one_hot", A, A, "alice")
        override.manual_score = manual = override.max_score / 2  # within the cell's points
        gb.db.commit()
    mallory = samples.build(
        A, {"embedding_forward": "def embedding_forward(E, ids):\n    raise NotImplementedError\n"}
    )
    vandal = {
        "cell_type": "code",
        "execution_count": None,
        "id": "vandal",
        "metadata": {},
        "outputs": [],
    }
    vandal["source"] = notebooks.split_lines(VANDAL.format(db=str(d / "gradebook.db")))
    mallory["cells"].insert(1, vandal)
    notebooks.write(mallory, d / "submitted" / "mallory" / A / f"{A}.ipynb")
    proc = _grade(d, "--no-sandbox")  # the worst case: the vandal really writes the database
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "TAMPERED" in proc.stderr and "manual_score" in proc.stderr
    with Gradebook(url, course_id=COURSE_ID) as gb:
        alice = gb.find_submission(A, "alice")
        mal = gb.find_submission(A, "mallory")
        assert gb.find_grade("test_one_hot", A, A, "alice").manual_score == manual
        assert all(g.manual_score is None and not g.extra_credit for g in mal.notebooks[0].grades)
        for sub in (alice, mal):
            assert sub.score <= sub.max_score
        # the stubbed function's automatic zeros, nothing the vandal wrote
        auto = sum(g.auto_score or 0 for g in mal.notebooks[0].grades)
        assert mal.score == auto < mal.max_score


# ------------------------------------------------------------------------------------------
# Plain nbgrader in an environment that has the requirements but not the course installed
# ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> Path:
    """A venv that sees .venv's packages (a .pth line: no .pth of .venv runs, so not the
    editable install of the course) and nothing else."""
    env = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run(
        [sys.base_prefix + "/bin/python3", "-m", "venv", "--without-pip", str(env)], check=True
    )
    site = Path(
        subprocess.check_output(
            [
                str(env / "bin" / "python"),
                "-c",
                "import sysconfig; print(sysconfig.get_paths()['purelib'])",
            ],
            text=True,
        ).strip()
    )
    (site / "course_requirements.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # the installed packages' data files too (nbconvert's templates, the kernelspec)
    (env / "share").mkdir(exist_ok=True)
    (env / "share" / "jupyter").symlink_to(Path(sys.prefix) / "share" / "jupyter")
    python = env / "bin" / "python"
    probe_import = subprocess.run(
        [str(python), "-c", "import autograder"], cwd="/", capture_output=True
    )
    assert probe_import.returncode != 0, "the course must not be importable in the bare env"
    return python


def _plain_course(tmp_path: Path, extra_config: str = "") -> Path:
    course = tmp_path / "course"
    shutil.copytree(SOLUTIONS / A, course / "solutions" / A)
    config = notebooks.temporary_course_config(course) + extra_config
    (course / "nbgrader_config.py").write_text(config, encoding="utf-8")
    notebooks.write(
        samples.build(A, {}), course / "grading" / "submitted" / "alice" / A / f"{A}.ipynb"
    )
    return course


def _nbgrader(python: Path, course: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        "PATH": f"{python.parent}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}/usr/bin:/bin"
    }
    return subprocess.run(
        [str(python), "-m", "nbgrader", *args, "--log-level=WARN"],
        cwd=course,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


def test_plain_nbgrader_without_the_course_installed_gives_full_marks(tmp_path, bare_python):
    from nbgrader.api import Gradebook

    course = _plain_course(tmp_path)
    for step in (
        ["generate_assignment", A, "--force"],
        ["autograde", A, "--force"],
        ["generate_feedback", A, "--force"],
    ):
        proc = _nbgrader(bare_python, course, *step)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    with Gradebook(
        "sqlite:///" + str(course / "grading" / "gradebook.db"), course_id=COURSE_ID
    ) as gb:
        sub = gb.find_submission(A, "alice")
        assert sub.score == sub.max_score > 0
    page = html.unescape(
        (course / "grading" / "feedback" / "alice" / A / f"{A}.html").read_text(encoding="utf-8")
    )
    assert "BEGIN HIDDEN TESTS" not in page and "from autograder.checks import" not in page


def test_plain_nbgrader_that_cannot_load_the_checks_fails_loudly_and_records_nothing(
    tmp_path, bare_python
):
    from nbgrader.api import Gradebook, MissingEntry

    # the course's own path setting undone: the kernels cannot import autograder
    course = _plain_course(tmp_path, 'import os\nos.environ["PYTHONPATH"] = ""\n')
    assert _nbgrader(bare_python, course, "generate_assignment", A, "--force").returncode == 0
    proc = _nbgrader(bare_python, course, "autograde", A, "--force")
    assert proc.returncode != 0
    assert "cannot load the course's checks" in proc.stdout + proc.stderr
    with Gradebook(
        "sqlite:///" + str(course / "grading" / "gradebook.db"), course_id=COURSE_ID
    ) as gb:
        try:  # nbgrader may have registered the submission, but no score was recorded
            sub = gb.find_submission(A, "alice")
        except MissingEntry:
            return
        assert all(g.auto_score is None for nb in sub.notebooks for g in nb.grades)


BOMB = """
import os, time
forked = 0
for _ in range(3000):
    try:
        if os.fork() == 0:
            time.sleep(120)
            os._exit(0)
        forked += 1
    except OSError:
        break
print("forked", forked)
"""


@needs_sandbox
@pytest.mark.skipif(os.geteuid() != 0, reason="per-kernel uids need a root grader")
def test_a_fork_bomb_hits_its_own_process_limit_and_leaves_nothing_behind(tmp_path, prepared):
    from autograder.grade.sandbox import UID_BASE, Limits

    bomb = samples.build(A, {})
    cell = {
        "cell_type": "code",
        "execution_count": None,
        "id": "bomb",
        "metadata": {},
        "outputs": [],
    }
    cell["source"] = notebooks.split_lines(BOMB)
    bomb["cells"].insert(1, cell)
    d = _grading_dir(tmp_path, prepared, {"bomber": bomb, "honest": samples.build(A, {})})
    proc = _grade(d, "--jobs", "2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = _report(d)
    assert all(r["score"] == r["max"] for (s, _), r in rows.items() if s == "honest")
    graded = notebooks.read(d / "autograded" / "bomber" / A / f"{A}.ipynb")
    printed = "".join(
        o.get("text", "") for c in graded["cells"] if c.get("id") == "bomb" for o in c["outputs"]
    )
    forked = int(printed.split("forked")[1].split()[0])
    assert forked < Limits().processes, f"the process limit did not bind: {printed!r}"
    assert not _orphaned_kernel_processes(UID_BASE), "a kernel's process outlived grading"


def _orphaned_kernel_processes(uid_base: int) -> list[str]:
    """Processes of a sandboxed kernel's uid whose grader has exited. A kernel uid encodes the pid
    of the grading process that started it (sandbox.kernel_uid), so a kernel of a grading still in
    progress, such as another test's on the other pytest worker, is not counted as a leftover."""
    rows = subprocess.run(["ps", "-eo", "uid=,pid="], capture_output=True, text=True).stdout
    alive = {int(pid) for _, pid in (r.split() for r in rows.splitlines() if r.strip())}
    left = []
    for row in rows.splitlines():
        if not row.strip():
            continue
        uid, pid = (int(x) for x in row.split())
        if uid < uid_base:
            continue
        grader = (uid - uid_base) // 4  # the grader's pid modulo 4,000,000
        if not {grader, grader + 4_000_000} & alive:
            left.append(f"pid {pid} uid {uid}")
    return left
