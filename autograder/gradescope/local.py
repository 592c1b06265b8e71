"""``make gradescope-test``: a built zip, run on this machine the way Gradescope runs it.

Gradescope unpacks the zip into ``/autograder/source``, runs its ``setup.sh`` once (which makes a
venv from ``requirements-grading.txt`` alone) and, per submission, ``run_autograder``. Here:

* the zip is extracted into ``$ROOT/source`` of a temporary ``GRADESCOPE_ROOT`` (its file modes
  kept) and ``run_autograder`` copied to ``$ROOT``, as Gradescope lays it out;
* ``setup.sh`` runs with ``PYTHONPATH`` and this course's venv cleared from the environment,
  ``PATH`` the system's, ``GRADESCOPE_PYTHON`` a Python of the system (3.11 or newer, not a venv's;
  set it to choose another) and a bare uid as the kernel's user; it makes the venv from the zip's
  requirements alone, without system site-packages, pip installing from the package index:
  nothing of this repository is in it. The venv is kept in ``/var/tmp/course-gradescope-venvs/``
  (``COURSE_GRADESCOPE_VENVS`` moves it), one per hash of the requirements and the Python, so
  reruns and tests reuse it (``setup.sh`` then says "exists: kept"); it is never the course's
  ``.venv``. /var/tmp, not the course folder, so the kernel's unprivileged user can run it;
* ``run_autograder`` grades one notebook in ``$ROOT/submission``; results.json is read back, and
  the ``autograder`` package that graded must be the extract's (``extra_data.grader``).

Untested here: setup.sh's installing of a Python (deadsnakes' PPA, uv's standalone build) and of
bubblewrap (apt), which need the internet and a bare Ubuntu image; only Gradescope runs them.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
import zipfile
from pathlib import Path

from .. import nb

CACHE = Path("/var/tmp/course-gradescope-venvs")
CACHE_VAR = "COURSE_GRADESCOPE_VENVS"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
CLEARED = (
    "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONSAFEPATH",
    "VIRTUAL_ENV", "CONDA_PREFIX", "COURSE_GRADE_NO_SANDBOX",
)  # fmt: skip
READY = ".course-ready"  # written into a venv once setup.sh has finished making it
KEEP_DAYS = 14  # cached venvs of other requirements unused this long are removed


class LocalError(RuntimeError):
    """The zip could not be set up or run here; the message says what happened."""


def kernel_user() -> str:
    """GRADESCOPE_KERNEL_USER, else a bare uid no account uses (its processes may be killed)."""
    return os.environ.get("GRADESCOPE_KERNEL_USER") or str(470_000 + os.getpid() % 10_000)


def clean_env(**extra) -> dict[str, str]:
    """This process's environment without PYTHONPATH and the course venv, PATH the system's."""
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env["PATH"] = SYSTEM_PATH
    env.update({k: str(v) for k, v in extra.items()})
    return env


def _version(python: str) -> tuple[tuple[int, ...], bool] | None:
    """(its version, whether it is a venv's) or None when it does not run."""
    code = "import sys; print(*sys.version_info[:3], sys.prefix != sys.base_prefix)"
    try:
        out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
    except OSError:
        return None
    if out.returncode != 0:
        return None
    *v, venv = out.stdout.split()
    return tuple(int(x) for x in v), venv == "True"


def system_python(minimum: str) -> Path:
    """GRADESCOPE_PYTHON, else the newest python3.13 / 3.12 / 3.11 on the system's PATH."""
    chosen = os.environ.get("GRADESCOPE_PYTHON")
    names = [chosen] if chosen else [f"python3.{n}" for n in (13, 12, 11)]
    need = tuple(int(x) for x in minimum.split("."))
    for name in names:
        path = name if os.sep in name else shutil.which(name, path=SYSTEM_PATH)
        found = _version(path) if path else None
        if found and found[0] >= need and not found[1]:
            return Path(path)
    raise LocalError(
        f"no Python {minimum}+ outside a venv: tried {', '.join(names)} on {SYSTEM_PATH}; "
        "set GRADESCOPE_PYTHON=/path/to/python3.11"
    )


def extract(zip_path: Path) -> Path:
    """A fresh GRADESCOPE_ROOT: source/ (the zip, modes kept), run_autograder, submission/."""
    parent = "/var/tmp" if os.access("/var/tmp", os.W_OK) else None
    root = Path(tempfile.mkdtemp(prefix="gs-root-", dir=parent))
    os.chmod(root, 0o755)  # only the grader's own locks may protect what is inside
    with zipfile.ZipFile(zip_path) as zf:
        for info in zf.infolist():
            os.chmod(zf.extract(info, root / "source"), (info.external_attr >> 16) & 0o777)
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
    (root / "submission").mkdir()
    return root


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_VAR) or CACHE)


def venv_path(root: Path, python: Path) -> Path:
    """The cached venv for this root's requirements-grading.txt and this Python."""
    h = hashlib.sha256((root / "source" / "requirements-grading.txt").read_bytes())
    h.update(f"\0{python.resolve()}\0{_version(str(python))}".encode())
    return cache_dir() / f"venv-{h.hexdigest()[:16]}"


def _prune(cache: Path, keep: Path) -> None:
    cutoff = time.time() - KEEP_DAYS * 86400
    for old in cache.glob("venv-*"):
        ready = old / READY
        if old != keep and (not ready.exists() or ready.stat().st_mtime < cutoff):
            shutil.rmtree(old, ignore_errors=True)


def setup(root: Path, python: Path | None = None, user: str | None = None) -> tuple[Path, str]:
    """Run the root's setup.sh, as Gradescope does, with the cached venv; (the venv, its output).
    Only one setup at a time makes a venv (a lock in the cache folder)."""
    python = python or system_python(_min_python(root))
    venv = venv_path(root, python)
    venv.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(venv.parent, 0o755)  # the kernel's user runs the venv's Python
    with open(venv.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (venv / READY).exists():
            shutil.rmtree(venv, ignore_errors=True)  # half made: setup.sh makes it afresh
            _prune(venv.parent, venv)
        env = clean_env(
            GRADESCOPE_ROOT=root, GRADESCOPE_VENV=venv, GRADESCOPE_PYTHON=python,
            GRADESCOPE_KERNEL_USER=user or kernel_user(),
        )  # fmt: skip
        cmd = ["bash", str(root / "source" / "setup.sh")]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800, cwd=root)
        if proc.returncode != 0:
            raise LocalError(f"setup.sh failed (exit {proc.returncode}):\n"
                             f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")  # fmt: skip
        (venv / READY).touch()
    return venv, proc.stdout


def _min_python(root: Path) -> str:
    for line in (root / "source" / "setup.sh").read_text(encoding="utf-8").splitlines():
        if line.startswith("MIN_PYTHON="):
            return line.split("=", 1)[1].strip('"')
    raise LocalError("setup.sh names no MIN_PYTHON")


def submit(root: Path, notebook: dict | bytes | Path, name: str = "submission.ipynb") -> Path:
    """Put one notebook (and nothing else) into the root's submission/."""
    folder = root / "submission"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    path = folder / name
    if isinstance(notebook, bytes):
        path.write_bytes(notebook)
    elif isinstance(notebook, Path):
        shutil.copyfile(notebook, path)
    else:
        nb.write(notebook, path)
    return path


def run(root: Path, venv: Path, **env) -> tuple[subprocess.CompletedProcess, dict | None]:
    """run_autograder on what is in submission/; (the process, results.json or None)."""
    out = root / "results" / "results.json"
    out.unlink(missing_ok=True)
    env = {"GRADESCOPE_KERNEL_USER": kernel_user(), **env}
    full = clean_env(GRADESCOPE_ROOT=root, GRADESCOPE_VENV=venv, **env)
    proc = subprocess.run([str(root / "run_autograder")], capture_output=True, text=True,
                          env=full, timeout=900, cwd=root)  # fmt: skip
    return proc, (json.loads(out.read_text(encoding="utf-8")) if out.exists() else None)


def misplaced(doc: dict | None, root: Path) -> str | None:
    """Why the grading did not come from the extract's autograder/ (None: it did)."""
    if doc is None:
        return "no results.json was written"
    where = (doc.get("extra_data") or {}).get("grader")
    inside = root / "source" / "autograder" / "__init__.py"
    if where is None or Path(where).resolve() != inside.resolve():
        return f"autograder was imported from {where}, not from the extract ({inside})"
    return None


def describe(doc: dict) -> str:
    """results.json as a person reads it: the total, then each test's score and message."""
    total = sum(t.get("max_score", 0) for t in doc.get("tests", []))
    lines = [f"score {doc['score']:g} / {total:g}", doc.get("output", "")]
    for t in doc.get("tests", []):
        lines.append(f"  {t['score']:g}/{t['max_score']:g}  {t['name']}")
        lines += [f"        {line}" for line in t.get("output", "").splitlines()]
    return "\n".join(lines)
