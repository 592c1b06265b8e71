"""Unix users of a trial: made with their own home (mode 0700), removed with it, and their
processes found and stopped by pid (a trial's users run nothing but what the trial started)."""

from __future__ import annotations

import os
import pwd
import re
import signal
import subprocess
import time
from pathlib import Path

NAME = re.compile(r"^[a-z][a-z0-9-]{0,30}$")


class UserError(RuntimeError):
    """A user the trial cannot make or remove (the message says why and what to do)."""


def exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def entry(name: str) -> pwd.struct_passwd:
    return pwd.getpwnam(name)


def check_name(name: str) -> None:
    if not NAME.match(name):
        raise UserError(
            f"{name!r} cannot be a user name here: lower-case letters, digits and '-', starting "
            "with a letter, at most 31 characters"
        )


def create(name: str) -> Path:
    """A new user with a group and a home of their own; returns the home (mode 0700)."""
    check_name(name)
    if exists(name):
        raise UserError(
            f"the user {name} exists already on this machine: the trial makes its own users. "
            "Choose other names (HUB_INSTRUCTOR=..., HUB_STUDENT=...), or, if a trial of this "
            "hub crashed, run `make hub-down`"
        )
    proc = subprocess.run(
        ["useradd", "--create-home", "--user-group", "--shell", "/bin/bash", name],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise UserError(f"useradd {name} failed: {proc.stderr.strip()}")
    home = Path(entry(name).pw_dir)
    os.chmod(home, 0o700)
    return home


def processes(uids: set[int]) -> list[int]:
    """Pids of the live processes whose real uid is one of ``uids``."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            status = (d / "status").read_text()
        except OSError:
            continue  # gone meanwhile
        m = re.search(r"^Uid:\s+(\d+)", status, re.M)
        if m and int(m.group(1)) in uids:
            found.append(int(d.name))
    return found


def stop_processes(uids: set[int], grace: float = 10.0) -> list[int]:
    """SIGTERM every process of these users, SIGKILL what is left after ``grace`` seconds;
    returns the pids that had to be killed."""
    for pid in processes(uids):
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while processes(uids) and time.monotonic() < deadline:
        time.sleep(0.2)
    killed = processes(uids)
    for pid in killed:
        _signal(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while processes(uids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return killed


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def remove(name: str) -> None:
    """Stop the user's processes, then remove the user, its group and its home."""
    if not exists(name):
        return
    stop_processes({entry(name).pw_uid})
    proc = subprocess.run(["userdel", "--remove", name], capture_output=True, text=True)
    # 12: the home or mail spool could not be removed; say so, the user is gone anyway
    if proc.returncode not in (0, 12) or exists(name):
        raise UserError(f"userdel {name} failed: {proc.stderr.strip()}")
