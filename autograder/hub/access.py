"""Who may read what on the trial hub, and each role's Jupyter configuration.

* **The course is closed to students.** The repository's root gets mode 0750 and the
  instructor's group: students cannot enter it (no ``solutions/``, no ``autograder/`` with the
  hidden checks, no grading folder); the instructor reads it through the group. The grading
  folder gets the instructor's group too, setgid and group-writable (``make grade``, run by root,
  keeps it so: autograder/grade/cli.py), so formgrader, run as the instructor, can write it.
  Both are given back their mode and group when the trial stops.
* **The instructor's course** is ``~instructor/course``: a link to the repository (formgrader
  wants the course inside the server's root folder, the home), or, where the repository is out of
  other users' reach (a checkout under ``/root``, mode 0700), a link to a bind mount of it in the
  hub's folder.
* **nbgrader's exchange**: ``HUB_DIR/exchange``, mode 1777 as nbgrader asks (everyone writes,
  nobody removes another's), with the course's folder made beforehand, owned by the instructor,
  so no student can take its name first. nbgrader then makes ``outbound/`` (0755, what students
  fetch), ``inbound/`` (2733: students write their submissions, nobody lists them) and
  ``feedback/`` (0711: a student reads only the page whose name their own submission's secret
  gives).
* **Server extensions per role**: pip enables nbgrader's four for everyone. Each role's servers
  get ``JUPYTER_CONFIG_PATH=HUB_DIR/config/<role>``, which for students turns off formgrader and
  the course list (server and JupyterLab plugins, and creating assignments); the instructor keeps
  all four. Both folders hold the role's ``nbgrader_config.py``: students know the course id and
  the exchange; the instructor's loads the course's own ``nbgrader_config.py`` from ``~/course``.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

from ..course import COURSE_ID, ROOT
from .trial import Record, Trial

STUDENT_OFF = ("formgrader", "course_list")
STUDENT_PLUGINS_OFF = ("formgrader", "course-list", "create-assignment")
EXTENSIONS = ("formgrader", "validate_assignment", "assignment_list", "course_list")


class AccessError(RuntimeError):
    """A folder the trial cannot open to the instructor (the message says why and the fix)."""


def reachable(path: Path) -> bool:
    """Whether a user who is neither the owner nor in the group can walk down to ``path``."""
    path = Path(os.path.abspath(path))
    for d in [*reversed(path.parents), path]:
        if not os.stat(d).st_mode & stat.S_IXOTH:
            return False
    return True


def _remember(record: Record, path: Path) -> None:
    if str(path) not in record.modes:
        st = os.stat(path)
        record.modes[str(path)] = [stat.S_IMODE(st.st_mode), st.st_gid]
        record.save()


def close_course(record: Record, gid: int) -> None:
    _remember(record, ROOT)
    os.chown(ROOT, -1, gid)
    os.chmod(ROOT, 0o750)


def share_grading(record: Record, grading: Path, gid: int) -> None:
    """The grading folder: the instructor's group, setgid, group-writable, closed to others."""
    grading.mkdir(parents=True, exist_ok=True)
    _remember(record, grading)
    st = os.stat(grading)
    record.shared_tree = [str(grading), st.st_uid, st.st_gid]
    record.save()
    for folder, dirs, files in os.walk(grading):
        for name in dirs + files:
            p = Path(folder) / name
            if not p.is_symlink():
                os.chown(p, -1, gid)
                extra = 0o2070 if p.is_dir() else 0o060
                os.chmod(p, stat.S_IMODE(os.stat(p).st_mode) | extra)
    os.chown(grading, -1, gid)
    os.chmod(grading, 0o2770)


def course_link(trial: Trial, record: Record, home: Path) -> Path:
    """``~instructor/course``: the repository itself, or a bind mount of it (see above)."""
    link = home / "course"
    target = ROOT
    if not reachable(ROOT.parent):
        if not reachable(trial.home):
            raise AccessError(f"the hub's folder {trial.home} is out of other users' reach")
        trial.mount.mkdir(exist_ok=True)
        proc = subprocess.run(
            ["mount", "--bind", str(ROOT), str(trial.mount)], capture_output=True, text=True
        )
        if proc.returncode != 0:
            raise AccessError(
                f"the course at {ROOT} is out of other users' reach ({_blocker(ROOT)} is closed) "
                f"and could not be bind-mounted for the instructor: {proc.stderr.strip()}. Move "
                "the checkout under a folder other users can enter (e.g. /srv or /home), or run "
                "where `mount --bind` is allowed"
            )
        record.mounted = str(trial.mount)
        record.save()
        target = trial.mount
    link.symlink_to(target)
    return link


def _blocker(path: Path) -> Path:
    return next(d for d in reversed(path.parents) if not os.stat(d).st_mode & stat.S_IXOTH)


def make_exchange(trial: Trial, uid: int, gid: int) -> None:
    trial.exchange.mkdir(parents=True, exist_ok=True)
    os.chmod(trial.exchange, 0o1777)
    course = trial.exchange / COURSE_ID
    course.mkdir()
    os.chown(course, uid, gid)
    os.chmod(course, 0o755)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    os.chmod(path, 0o644)


def write_configs(trial: Trial, course: Path) -> None:
    """Each role's Jupyter configuration folder (see the module's docstring)."""
    ext = "nbgrader.server_extensions."
    off = {ext + e: e not in STUDENT_OFF for e in EXTENSIONS}
    on = {ext + e: True for e in EXTENSIONS}
    plugins = {f"@jupyter/nbgrader:{p}": True for p in STUDENT_PLUGINS_OFF}
    student, instructor = trial.config("student"), trial.config("instructor")
    _write(
        student / "jupyter_server_config.json",
        json.dumps({"ServerApp": {"jpserver_extensions": off}}, indent=1),
    )
    _write(
        student / "labconfig" / "page_config.json",
        json.dumps({"disabledExtensions": plugins}, indent=1),
    )
    _write(
        instructor / "jupyter_server_config.json",
        json.dumps({"ServerApp": {"jpserver_extensions": on}}, indent=1),
    )
    exchange = f"c.Exchange.root = {str(trial.exchange)!r}\n"
    _write(
        student / "nbgrader_config.py",
        "# The trial hub's students: the course and nbgrader's exchange (make hub).\n"
        f"c = get_config()  # noqa: F821\nc.CourseDirectory.course_id = {COURSE_ID!r}\n{exchange}"
        # the Validate button's kernel: encrypted, no "running over TCP without encryption" warning
        'c.KernelManager.transport_encryption = "auto"\n',
    )
    own = course / "nbgrader_config.py"
    _write(
        instructor / "nbgrader_config.py",
        "# The trial hub's instructor: the course's own configuration, from ~/course (make hub).\n"
        "import os\n\n"
        f"if not os.access({str(own)!r}, os.R_OK):\n"
        f"    raise RuntimeError('the course is not readable at {own}')\n"
        f"c = get_config()  # noqa: F821\nload_subconfig({str(own)!r})  # noqa: F821\n{exchange}",
    )
    for d in (student, instructor, trial.config("student").parent):
        os.chmod(d, 0o755)


def _give_back(top: str, uid: int, gid: int, theirs: set[int]) -> None:
    """The grading folder's tree back to its group; what the trial's users made, to its owner
    (their uids are freed with them, and the next new user would get one)."""
    for folder, dirs, files in os.walk(top):
        for name in dirs + files:
            p = Path(folder) / name
            owner = os.lstat(p).st_uid
            os.chown(p, uid if owner in theirs else -1, gid, follow_symlinks=False)


def restore(record: Record) -> list[str]:
    """Undo the modes, groups and mount of the record; returns what could not be undone."""
    problems = []
    if record.shared_tree:
        _give_back(*record.shared_tree, theirs=set(record.uids))
    for path, (mode, gid) in record.modes.items():
        try:
            os.chown(path, -1, gid)
            os.chmod(path, mode)
        except OSError as exc:
            problems.append(f"{path}: {exc}")
    if record.mounted:
        proc = subprocess.run(["umount", record.mounted], capture_output=True, text=True)
        if proc.returncode != 0 and os.path.ismount(record.mounted):
            problems.append(f"umount {record.mounted}: {proc.stderr.strip()}")
    return problems
