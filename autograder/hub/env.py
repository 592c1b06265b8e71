"""The environment the users' servers run in: the course's venv, where other users can reach it.

Students' servers run as the students, so their Python must be readable by them. The course's
venv usually is not: it lives in the repository, which the trial closes to students, and its
Python may live in root's home (pyenv's ``/root/.pyenv``, a CI checkout under ``/root``: mode
0700). So the trial makes a copy in its own folder, ``HUB_DIR/python`` (the venv's base Python:
its binary, its shared library, its standard library) and ``HUB_DIR/env`` (the venv), as hard
links where the file system allows (instant, no space) and as copies elsewhere, then

* points the copy's ``pyvenv.cfg`` and ``bin/python`` at the copied Python and rewrites the
  scripts' ``#!`` lines (``jupyter``, ``nbgrader`` in a student's terminal), each as a new file,
  never through a hard link, so the course's own venv is never changed;
* removes the course's editable install: nothing of the course's code is on a student's path;
* sets ``LD_LIBRARY_PATH`` (in the spawner's environment) to the copy's ``lib/``: a shared-library
  Python (pyenv's) looks for ``libpython`` in its original folder first otherwise.

:func:`check` then imports the server's packages *as a student* before anyone logs in.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from ..course import ROOT

PY = f"python{sys.version_info.major}.{sys.version_info.minor}"
# what a user's server needs: the single-user server, JupyterLab, nbgrader's server extensions,
# nbgitpuller (the website's JupyterHub launch button)
IMPORTS = (
    "import jupyterhub.singleuser, jupyterlab, nbgrader.server_extensions.assignment_list, "
    "nbgitpuller"
)


@dataclass
class Env:
    prefix: Path  # the venv copy
    base: Path  # the Python copy

    @property
    def python(self) -> Path:
        return self.prefix / "bin" / "python"

    def variables(self) -> dict[str, str]:
        return {
            "PATH": f"{self.prefix / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "LD_LIBRARY_PATH": str(self.base / "lib"),
            "VIRTUAL_ENV": str(self.prefix),
        }


def _link_copy(src: Path, dest: Path) -> None:
    """``cp -al`` (hard links, symbolic links kept), else ``cp -a`` (another file system)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    if subprocess.run(["cp", "-al", str(src), str(dest)], capture_output=True).returncode == 0:
        return
    if dest.exists():
        shutil.rmtree(dest)
    subprocess.run(["cp", "-a", str(src), str(dest)], check=True, capture_output=True)


def copy_python(base: Path) -> Path:
    """The venv's base Python (binary, shared library, standard library without its
    site-packages) into ``base``; returns the copied binary."""
    exe = Path(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))
    stdlib = Path(sysconfig.get_path("stdlib"))
    (base / "bin").mkdir(parents=True)
    _link_copy(exe, base / "bin" / PY)
    lib = base / "lib" / PY
    lib.mkdir(parents=True)
    for item in stdlib.iterdir():
        if item.name != "site-packages":
            _link_copy(item, lib / item.name)
    (lib / "site-packages").mkdir()
    libdir = Path(sysconfig.get_config_var("LIBDIR") or "/nonexistent")
    if sysconfig.get_config_var("Py_ENABLE_SHARED"):
        for so in libdir.glob(f"lib{PY}*.so*"):
            _link_copy(so, base / "lib" / so.name)
    return base / "bin" / PY


def _replace(path: Path, text: str, mode: int | None = None) -> None:
    """A new file in place of ``path`` (unlinked first: it may be a hard link into the venv)."""
    path.unlink(missing_ok=True)
    path.write_text(text, encoding="utf-8")
    if mode is not None:
        os.chmod(path, mode)


def _retarget(prefix: Path, exe: Path) -> None:
    """pyvenv.cfg, bin/python* and the scripts' #! lines of the copy point at the copy."""
    cfg = (prefix / "pyvenv.cfg").read_text(encoding="utf-8").splitlines()
    keep = [ln for ln in cfg if ln.split("=")[0].strip() not in ("home", "executable", "command")]
    _replace(prefix / "pyvenv.cfg", "\n".join([f"home = {exe.parent}", *keep, ""]))
    olds = {f"#!{p}/bin/" for p in (sys.prefix, os.path.realpath(sys.prefix))}
    for script in (prefix / "bin").iterdir():
        if script.name in ("python", "python3", PY):
            script.unlink()
            script.symlink_to(exe)
        elif script.is_file() and not script.is_symlink():
            try:
                text = script.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            old = next((o for o in olds if text.startswith(o)), None)
            if old:
                _replace(script, f"#!{prefix}/bin/" + text[len(old) :], script.stat().st_mode)


def _drop_course(site: Path) -> None:
    """Remove the course's editable install (its finder, .pth and dist-info) from the copy."""
    for pth in site.glob("*.pth"):
        if str(ROOT) in pth.read_text(encoding="utf-8", errors="replace"):
            pth.unlink()
    for finder in site.glob("__editable__*"):
        finder.unlink()
    for info in site.glob("*.dist-info"):
        url = info / "direct_url.json"
        if url.is_file() and json.loads(url.read_text()).get("dir_info", {}).get("editable"):
            shutil.rmtree(info)


# JupyterLab in the users' servers: no news or update checks (a trial hub, maybe offline)
LAB_OVERRIDES = {
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False}
}


def build(home: Path) -> Env:
    """``home/python`` and ``home/env`` made afresh from this process's venv."""
    env = Env(prefix=home / "env", base=home / "python")
    for d in (env.prefix, env.base):
        if d.exists():
            shutil.rmtree(d)
    exe = copy_python(env.base)
    _link_copy(Path(os.path.realpath(sys.prefix)), env.prefix)  # a linked venv: its files
    _retarget(env.prefix, exe)
    _drop_course(env.prefix / "lib" / PY / "site-packages")
    settings = env.prefix / "share" / "jupyter" / "lab" / "settings"
    settings.mkdir(parents=True, exist_ok=True)
    _replace(settings / "overrides.json", json.dumps(LAB_OVERRIDES, indent=1))
    return env


def check(env: Env, user: str) -> str | None:
    """None when the user can start the server's Python and import what it needs; else why."""
    import pwd

    pw = pwd.getpwnam(user)
    proc = subprocess.run(
        [str(env.python), "-c", f"{IMPORTS}; import autograder"],
        env={**env.variables(), "HOME": pw.pw_dir},
        user=pw.pw_uid,
        group=pw.pw_gid,
        extra_groups=[],
        cwd=pw.pw_dir,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if "No module named 'autograder'" in proc.stderr:
        return None  # the server's packages imported, and the course's code is not there
    if proc.returncode == 0:
        return "the course's own code (autograder) is importable in the students' environment"
    return f"{user} cannot start the hub's Python {env.python}:\n{proc.stderr.strip()[-1500:]}"
