"""Keeping the student's kernel away from the solutions and the results in Gradescope's container.

Gradescope runs ``run_autograder`` as root in a Docker container, where user namespaces (and so
bubblewrap) are usually refused. The grader therefore picks, in order:

1. **bubblewrap**, where :func:`autograder.grade.sandbox.probe` says it runs: the same sandbox as
   ``make grade`` (the source folder is blanked, the rest of the machine read-only);
2. **an unprivileged user** (``student``, made by ``setup.sh``; ``GRADESCOPE_KERNEL_USER`` names
   another, or a bare uid), where the grader is root: ``$GRADESCOPE_ROOT/source`` and
   ``$GRADESCOPE_ROOT/results`` are made root's alone (mode 700), the kernel is started through
   ``prlimit --nproc`` and ``setpriv`` (new uid and gid, no groups, no capabilities, no new
   privileges), and after grading every process of that uid is killed. Before anything runs,
   :func:`probe_user` checks *as that user* that the interpreter starts, that the source cannot be
   listed and that neither the results folder nor ``$GRADESCOPE_ROOT`` can be written;
3. otherwise **nothing runs**: results.json says why, the score is 0, the exit status is 3.

``COURSE_GRADE_NO_SANDBOX`` is not honoured here: a Gradescope autograder never grades unprotected.
"""

from __future__ import annotations

import os
import pwd
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..grade import sandbox

USER_VAR = "GRADESCOPE_KERNEL_USER"
DEFAULT_USER = "student"
NPROC = 256  # RLIMIT_NPROC of the kernel's uid: a fork bomb stops there
BUBBLEWRAP, UNPRIVILEGED = "bubblewrap", "unprivileged user"

# Run by root just before the uid drop: hands the kernel its connection file (jupyter_client
# writes it mode 600) and its scratch folder, then execs the rest of the command.
_HANDOVER = 'u=$1 g=$2 f=$3; shift 3; chown "$u:$g" "$f" "${f%/*}" && exec "$@"'

# Run as the kernel's user by probe_user: what must work, and what must not.
_PROBE = """
import os, sys
import numpy, ipykernel, jupyter_client
src, res, top = sys.argv[1:4]
bad = []
try:
    os.listdir(src)
    bad.append("it can list " + src)
except OSError:
    pass
for d in (res, top):
    p = os.path.join(d, ".course-probe-%d" % os.getpid())
    try:
        os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        os.unlink(p)
        bad.append("it can write in " + d)
    except OSError:
        pass
print("; ".join(bad) or "ok")
"""


@dataclass
class Isolation:
    kind: str  # BUBBLEWRAP, UNPRIVILEGED, or "" when refused
    detail: str  # how it is done, or why nothing can run
    uid: int | None = None
    gid: int | None = None

    @property
    def ok(self) -> bool:
        return bool(self.kind)


def resolve_user(name: str) -> tuple[int, int]:
    """(uid, gid) of the kernel's user: a name in /etc/passwd, or a bare number (uid = gid)."""
    if name.isdigit():
        uid = gid = int(name)
    else:
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            raise LookupError(f"there is no user {name!r} (setup.sh creates it)") from None
        uid, gid = entry.pw_uid, entry.pw_gid
    if uid == 0 or gid == 0:
        raise LookupError(f"the kernel's user {name!r} is root, which protects nothing")
    return uid, gid


def drop_command(uid: int, gid: int) -> list[str]:
    """Run the rest of a command as uid:gid, with no groups, capabilities or new privileges."""
    return [
        sandbox.tool("prlimit"), f"--nproc={NPROC}",
        sandbox.tool("setpriv"), f"--reuid={uid}", f"--regid={gid}", "--clear-groups",
        "--no-new-privs", "--inh-caps=-all", "--",
    ]  # fmt: skip


def as_user(uid: int, gid: int, argv: list[str]) -> list[str]:
    """``argv`` run as uid:gid the way the kernel is: through ``env -i``, which executes it with
    the user's own rights (``setpriv`` itself may reach an interpreter the user cannot)."""
    env = ["PATH=/usr/bin:/bin", "LANG=C.UTF-8", "HOME=/"]
    return [*drop_command(uid, gid), sandbox.tool("env"), "-i", *env, *argv]


def kernel_wrapper(uid: int, gid: int) -> list[str]:
    """The command :data:`autograder.grade.sandbox.UNSANDBOXED_KERNEL_WRAPPER` is set to."""
    handover = [sandbox.tool("sh"), "-c", _HANDOVER, "course-drop-root", str(uid), str(gid)]
    return [*handover, "{connection_file}", *drop_command(uid, gid)]


def lock_down(root: Path) -> None:
    """The source (solutions, checks) and the results folder: root's alone, mode 700."""
    for d in (root / "source", root / "results"):
        d.mkdir(exist_ok=True)
        if os.geteuid() == 0:
            os.chown(d, 0, 0)
        os.chmod(d, 0o700)
    meta = root / "submission_metadata.json"  # Gradescope's: the student's e-mail, past scores
    if meta.is_file():
        os.chmod(meta, 0o600)


def probe_user(root: Path, uid: int, gid: int) -> tuple[bool, str]:
    """(True, "") when the kernel's user can run Python here and reach none of what it must not."""
    args = [str(root / "source"), str(root / "results"), str(root)]
    cmd = as_user(uid, gid, [sys.executable, "-I", "-c", _PROBE, *args])
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd="/")
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"the uid drop did not run: {exc}"
    finally:
        kill_uid(uid)
    out = proc.stdout.strip()
    if proc.returncode != 0 or out != "ok":
        detail = out or proc.stderr.strip()[-300:]
        return False, f"as uid {uid} (exit {proc.returncode}): {detail}"
    return True, ""


def choose(root: Path) -> Isolation:
    """bubblewrap, else an unprivileged user, else a refusal that says why."""
    ok, why = sandbox.probe()
    if ok:
        return Isolation(BUBBLEWRAP, "the kernel ran in a bubblewrap sandbox")
    prefix = f"bubblewrap cannot run here ({why})"
    if os.geteuid() != 0:
        return Isolation("", f"{prefix}, and the grader is not root, so it cannot run the kernel "
                         "as another user")  # fmt: skip
    name = os.environ.get(USER_VAR) or DEFAULT_USER
    try:
        uid, gid = resolve_user(name)
        kernel_wrapper(uid, gid)  # every tool is there
    except (LookupError, sandbox.KernelError) as exc:
        return Isolation("", f"{prefix}, and {exc}")
    lock_down(root)
    ok, why_not = probe_user(root, uid, gid)
    if not ok:
        return Isolation("", f"{prefix}, and the unprivileged user is not safe: {why_not}")
    return Isolation(UNPRIVILEGED, f"the kernel ran as the unprivileged user {name}", uid, gid)


def activate(iso: Isolation) -> None:
    """Make the grade package start kernels the way ``iso`` says."""
    uid_drop = iso.kind == UNPRIVILEGED
    sandbox.UNSANDBOXED_KERNEL_WRAPPER[:] = kernel_wrapper(iso.uid, iso.gid) if uid_drop else []


def _uids(pid: str) -> set[int]:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("State:") and "Z" in line.split()[1]:
                    return set()  # a zombie holds nothing; its parent reaps it
                if line.startswith("Uid:"):
                    return {int(x) for x in line.split()[1:]}
    except (OSError, ValueError):
        pass
    return set()


def kill_uid(uid: int, rounds: int = 100) -> bool:
    """SIGKILL every process whose real, effective or saved uid is ``uid``; True when none is left."""
    for _ in range(rounds):
        pids = [p for p in os.listdir("/proc") if p.isdigit() and uid in _uids(p)]
        if not pids:
            return True
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.02)
    return False
