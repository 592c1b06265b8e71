"""The trial hub in the foreground: set up, start JupyterHub, say where to log in, and on Ctrl-C
or SIGTERM stop everything it started and undo everything it changed.

Stopping, in order: JupyterHub (SIGTERM: it stops every user's server and its proxy), then by pid
whatever is left of it (the proxy from its pid file, any process of the trial's users: they run
nothing else), the course's and the grading folder's modes given back, the bind mount (if any)
undone, the users removed with their homes, the hub's folder removed (its ``jupyterhub.log``
kept). Each change is in ``state/record.json`` as soon as it is made, so ``make hub-down``
undoes a trial that was killed outright.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from ..course import COURSE_ID, ROOT
from . import access, env, proxy, users
from .trial import Record, Trial

CONFIG = Path(__file__).resolve().parent / "jupyterhub_config.py"
MADE = ("env", "python", "config", "exchange", "course")


class Stop(BaseException):
    """SIGINT or SIGTERM: stop the trial (raised from the signal handler)."""


def _stop(signum, frame):
    raise Stop(signal.Signals(signum).name)


def port_free(ip: str, port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((ip, port))
        except OSError:
            return False
    return True


def free_port(ip: str) -> int:
    with socket.socket() as s:
        s.bind((ip, 0))
        return s.getsockname()[1]


def preflight(trial: Trial) -> str | None:
    """Why the trial cannot start here, or None."""
    if os.geteuid() != 0:
        return "make hub makes Unix users and runs their servers as them: run it as root"
    for name in trial.users:
        try:
            users.check_name(name)
        except users.UserError as exc:
            return str(exc)
        if users.exists(name):
            return (
                f"the user {name} exists already on this machine: the trial makes its own users "
                "(HUB_INSTRUCTOR=..., HUB_STUDENT=... choose other names)"
            )
    if not access.reachable(trial.home.parent):
        return f"the hub's folder {trial.home} must be where other users can reach it (not under /root)"
    if not port_free(trial.ip, trial.port):
        return f"{trial.ip}:{trial.port} is in use: choose another port with HUB_PORT=..."
    inside = trial.grading == ROOT or ROOT in trial.grading.parents
    if not inside and not access.reachable(trial.grading.parent):
        return f"the grading folder {trial.grading} is out of the instructor's reach"
    return None


def _grading_for_instructor(trial: Trial, course: Path) -> Path:
    if trial.grading == ROOT or ROOT in trial.grading.parents:
        return course / trial.grading.relative_to(ROOT)
    return trial.grading


def _make_users(trial: Trial, record: Record) -> dict[str, Path]:
    homes = {}
    for name in trial.users:
        homes[name] = users.create(name)
        record.users.append(name)
        record.uids.append(users.entry(name).pw_uid)
        record.save()
    return homes


def setup(trial: Trial, record: Record) -> dict:
    """Everything but JupyterHub itself; returns the settings jupyterhub_config.py reads."""
    chp = proxy.install()
    for name in MADE:
        record.made.append(name)
    record.save()
    os.chmod(trial.home, 0o755)
    hub_env = env.build(trial.home)
    homes = _make_users(trial, record)
    why = env.check(hub_env, trial.students[0])
    if why:
        raise access.AccessError(why)
    pw = users.entry(trial.instructor)
    access.close_course(record, pw.pw_gid)
    access.share_grading(record, trial.grading, pw.pw_gid)
    course = access.course_link(trial, record, homes[trial.instructor])
    access.make_exchange(trial, pw.pw_uid, pw.pw_gid)
    access.write_configs(trial, course)
    return {
        "state": str(trial.state),
        "url": trial.url,
        "hub_api": f"http://127.0.0.1:{free_port('127.0.0.1')}",
        "proxy_api": f"http://127.0.0.1:{free_port('127.0.0.1')}",
        "proxy": str(chp),
        "python": str(hub_env.python),
        "instructor": trial.instructor,
        "students": trial.students,
        "passwords": {"student": secrets.token_urlsafe(9), "instructor": secrets.token_urlsafe(24)},
        "homes": {k: str(v) for k, v in homes.items()},
        "course": str(course),
        "mounted": record.mounted,
        "grading": str(trial.grading),
        "environment": {
            "common": {**hub_env.variables(), "PYTHONDONTWRITEBYTECODE": "1"},
            "student": {"JUPYTER_CONFIG_PATH": str(trial.config("student"))},
            "instructor": {
                "JUPYTER_CONFIG_PATH": str(trial.config("instructor")),
                "COURSE_GRADING_DIR": str(_grading_for_instructor(trial, course)),
            },
        },
    }


def start(trial: Trial, settings: dict) -> subprocess.Popen:
    path = trial.state / "settings.json"
    path.write_text(json.dumps(settings, indent=1), encoding="utf-8")
    os.chmod(path, 0o600)
    log = open(trial.home / "jupyterhub.log", "ab")  # noqa: SIM115 - the hub's, for its life
    os.chmod(log.name, 0o600)
    return subprocess.Popen(
        [sys.executable, "-m", "jupyterhub", "-f", str(CONFIG)],
        cwd=trial.state,
        env={**os.environ, "COURSE_HUB_SETTINGS": str(path)},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # Ctrl-C reaches this process only; it stops the hub itself
    )


def wait_ready(trial: Trial, proc: subprocess.Popen, timeout: float = 120) -> str | None:
    """None once the hub answers through its proxy; else why not (with the log's end)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return f"JupyterHub exited ({proc.returncode}):\n{_log_tail(trial)}"
        try:
            with urllib.request.urlopen(trial.url + "hub/api", timeout=5) as r:
                if r.status == 200:
                    return None
        except OSError:
            pass
        time.sleep(0.5)
    return f"JupyterHub did not answer at {trial.url} within {timeout:.0f} s:\n{_log_tail(trial)}"


def _log_tail(trial: Trial) -> str:
    path = trial.home / "jupyterhub.log"
    return path.read_text(errors="replace")[-3000:] if path.exists() else "(no log)"


def banner(trial: Trial, settings: dict) -> str:
    pw = settings["passwords"]
    grading = (
        os.path.relpath(trial.grading, ROOT) if ROOT in trial.grading.parents else trial.grading
    )
    return "\n".join(
        [
            f"The course's trial hub is up: {trial.url}",
            f"  instructor: {trial.instructor}  password {pw['instructor']}"
            "  (formgrader: Nbgrader > Formgrader, or the Formgrader tile)",
            f"  students:   {', '.join(trial.students)}  password {pw['student']}"
            "  (Nbgrader > Assignments)",
            f"  homes: {', '.join(settings['homes'].values())}",
            f"  course {COURSE_ID}: the instructor's ~/course is {ROOT}"
            + (f" (bind-mounted at {settings['mounted']})" if settings["mounted"] else "")
            + f"; exchange {trial.exchange}",
            f"  grade collected submissions here, as root: make grade GRADING={grading}",
            f"  passwords kept in {trial.state / 'settings.json'}; the hub's log: "
            f"{trial.home / 'jupyterhub.log'}",
            "Ctrl-C (or SIGTERM) stops the hub and every server, removes the users and their "
            "homes, and gives the course back its modes.",
        ]
    )


def _alive(pid: int, needle: str) -> bool:
    """Whether ``pid`` is a live process whose command line contains ``needle``."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return False
    return needle in cmdline


def _stop_pid(pid: int, grace: float) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    return
            except ChildProcessError:
                pass
            time.sleep(0.2)
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _pid_from(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def stop_hub(trial: Trial, proc: subprocess.Popen | None) -> None:
    """JupyterHub, then its proxy, each by its own pid (from the pid files after a crash)."""
    hub = proc.pid if proc is not None else _pid_from(trial.state / "jupyterhub.pid")
    if hub and (proc is not None and proc.poll() is None or _alive(hub, "jupyterhub")):
        _stop_pid(hub, grace=30)
    if proc is not None:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
    chp = _pid_from(trial.state / "proxy.pid")
    if chp and _alive(chp, "configurable-http-proxy"):
        _stop_pid(chp, grace=10)


def teardown(trial: Trial, record: Record, proc: subprocess.Popen | None = None) -> list[str]:
    """Undo the trial (see the module's docstring); returns what could not be undone."""
    stop_hub(trial, proc)
    uids = {users.entry(u).pw_uid for u in record.users if users.exists(u)}
    users.stop_processes(uids)
    problems = access.restore(record)
    for name in reversed(record.users):
        if users.exists(name):
            link = Path(users.entry(name).pw_dir) / "course"
            if link.is_symlink():
                link.unlink()
            try:
                users.remove(name)
            except users.UserError as exc:
                problems.append(str(exc))
    for name in record.made:
        path = trial.home / name
        if os.path.ismount(path):
            problems.append(f"{path} is still mounted: not removed")
        elif path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
    if not problems:
        shutil.rmtree(trial.state, ignore_errors=True)
    return problems


def down(trial: Trial) -> int:
    """``make hub-down``: undo a trial from its record (one that was killed outright)."""
    record = Record.load(trial.record_path)
    if record is None:
        print(f"no trial recorded in {trial.state}: nothing to undo")
        return 0
    problems = teardown(trial, record)
    for p in problems:
        print(f"could not undo: {p}", file=sys.stderr)
    print(f"undone: users {', '.join(record.users) or 'none'} removed, modes given back")
    return 1 if problems else 0


def main(trial: Trial) -> int:
    if os.geteuid() == 0 and Record.load(trial.record_path):
        print(f"a trial in {trial.home} did not finish: undoing it first", file=sys.stderr)
        if down(trial):
            return 1
    why = preflight(trial)
    if why:
        print(f"error: {why}", file=sys.stderr)
        return 2
    trial.state.mkdir(parents=True, exist_ok=True)
    os.chmod(trial.state, 0o700)
    record = Record(trial.record_path)
    record.save()
    proc = None
    old = {s: signal.signal(s, _stop) for s in (signal.SIGINT, signal.SIGTERM)}
    code = 0
    try:
        settings = setup(trial, record)
        proc = start(trial, settings)
        why = wait_ready(trial, proc)
        if why:
            print(f"error: {why}", file=sys.stderr)
            code = 1
        else:
            print(banner(trial, settings), flush=True)
            code = 1 if proc.wait() else 0
            print(f"JupyterHub exited ({proc.returncode}): {_log_tail(trial)[-800:]}")
    except Stop as why_stop:
        print(f"\n{why_stop}: stopping the trial hub", flush=True)
    except (access.AccessError, proxy.ProxyError, users.UserError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        code = 1
    finally:
        for s in old:
            signal.signal(s, signal.SIG_IGN)
        problems = teardown(trial, record, proc)
        for p in problems:
            print(f"could not undo: {p}", file=sys.stderr)
        print(f"stopped: users {', '.join(record.users) or 'none'} removed", flush=True)
        for s, handler in old.items():
            signal.signal(s, handler)
    return 1 if problems else code
