"""The grading kernel: an IPython kernel in a bubblewrap sandbox with a memory cap.

``make grade`` runs each submission in a kernel started by :class:`SandboxKernel`. Its command is

    prlimit --as=<cap> --fsize=<cap> bwrap --ro-bind / / --dev /dev --proc /proc
        --tmpfs /tmp --tmpfs <course root> --ro-bind <venv> <venv>
        --bind <scratch> <scratch> --chdir <scratch>
        --unshare-pid --unshare-ipc --unshare-net --die-with-parent --cap-drop ALL
        --clearenv --setenv ... python -c <ipykernel's launcher> -f <scratch>/kernel.json

so the student's code sees the machine read-only, none of the course (no solutions/, no
autograder/, no grading/ with the gradebook and the other students' files), no network, no other
process, and only its own scratch folder, which holds nothing but a copy of its notebook and the
inputs the grader hands it. The kernel talks to the grader over unix sockets in that folder (ZMQ
``ipc`` transport), which is why it needs no network. ``RLIMIT_AS`` turns a memory bomb into a
``MemoryError`` (or a dead kernel), never into trouble for the machine.

Where bubblewrap is missing or cannot run (some containers forbid namespaces), :func:`probe`
says why and ``make grade`` stops before grading anything (:func:`refusal` gives the fixes).
Grading without the sandbox happens only when the instructor asks for it explicitly.
"""

from __future__ import annotations

import itertools
import os
import queue
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..checks.harness import blocker_line
from ..course import ROOT

GIB = 1024**3
# Inside the sandbox: OpenBLAS and friends start one thread per core and reserve address space
# for each; parallel kernels and the memory cap both behave better single-threaded.
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")


@dataclass
class Limits:
    memory_bytes: int = 4 * GIB  # RLIMIT_AS of the kernel process
    file_bytes: int = 1 * GIB  # RLIMIT_FSIZE: the largest file the kernel may write
    tmp_bytes: int = 256 * 1024**2  # size of the private /tmp (RAM-backed) inside the sandbox
    start_timeout: float = 60.0  # seconds for the kernel to answer its first request
    processes: int = 256  # RLIMIT_NPROC of the kernel's own uid (threads count too)


# Each sandboxed kernel runs as its own unprivileged uid when the grader is root: RLIMIT_NPROC
# does not bind root, and it counts per real uid, so one shared uid would let one fork bomb
# starve every other kernel. A live worker process has at most two kernels (current and spare);
# its pid makes the uid unique among live workers.
UID_BASE = 2_100_000_000
_UIDS = itertools.count()


def kernel_uid() -> int | None:
    """A fresh unprivileged uid for the next kernel; None when the grader is not root (then the
    kernel runs as the grader's own uid, without a process limit of its own)."""
    if os.geteuid() != 0:
        return None
    return UID_BASE + (os.getpid() % 4_000_000) * 4 + next(_UIDS) % 4


@dataclass
class ExecResult:
    """What one execute request did."""

    status: str  # "ok" | "error" | "timeout" | "died"
    outputs: list = field(default_factory=list)  # nbformat output dicts, already capped
    ename: str | None = None
    evalue: str | None = None
    seconds: float = 0.0
    execution_count: int | None = None
    dropped_chars: int = 0  # characters of output cut off by the caps


class KernelError(RuntimeError):
    """The kernel could not be started (a problem of the grading machine, not of a submission)."""


# ------------------------------------------------------------------------------------------
# Probing
# ------------------------------------------------------------------------------------------
def hidden_dirs() -> list[Path]:
    """Folders the kernel must not see: the course (solutions/, autograder/, grading/) and the
    home folder (it may hold other copies of the course, or secrets a student could print)."""
    hidden = [ROOT]
    home = Path(os.path.expanduser("~")).resolve()
    # A course inside the home (a checkout under /root, mode 0700) hides the home too: its
    # blank replaces a folder the kernel's own uid could not enter on its way to the venv.
    if home != Path("/") and home != ROOT:
        hidden.append(home)
    return sorted(hidden, key=lambda p: len(p.parts))


def interpreter_paths() -> list[Path]:
    """Every path the kernel command goes through to reach its interpreter, as written and as
    resolved: the venv (which may be a symbolic link, or live outside the course), its bin/, and
    the Python installation the venv points to (which may link into /usr or a home folder)."""
    exe = Path(os.path.abspath(sys.executable))
    paths = {Path(sys.prefix), Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}
    paths |= {exe.parent, Path(os.path.realpath(exe)).parent}
    return sorted(paths, key=lambda p: (len(p.parts), str(p)))


def bind_back(hidden: list[Path]) -> list[tuple[Path, Path]]:
    """(source on the host, place in the sandbox) for each interpreter path a hidden folder (or
    the sandbox's private /tmp) covers; bound read-only after those folders are blanked."""
    binds: list[tuple[Path, Path]] = []
    blanked = [Path("/tmp"), *hidden]
    for dest in interpreter_paths():
        inside = any(dest.is_relative_to(h) and dest != h for h in blanked)
        covered = any(dest.is_relative_to(b) for _, b in binds)
        if inside and not covered:
            binds.append((Path(os.path.realpath(dest)), dest))
    return binds


def tool(name: str) -> str:
    """The absolute path of a command found on PATH (the sandbox's tools are looked up there)."""
    found = shutil.which(name)
    if found is None:
        raise KernelError(f"{name} is not on PATH")
    return found


def _parents(dest: Path, hidden: list[Path], made: set[Path]) -> list[str]:
    """Make the blanked folders leading to a bind target world-traversable (bwrap would create
    them 0700, which the kernel's own uid could not enter)."""
    args = []
    for parent in reversed(dest.parents):
        blanked = any(parent.is_relative_to(h) and parent != h for h in [Path("/tmp"), *hidden])
        if blanked and parent not in made:
            args += ["--perms", "0755", "--dir", str(parent)]
            made.add(parent)
    return args


def _bwrap_args(scratch: Path, limits: Limits, uid: int | None = None) -> list[str]:
    args = [
        tool("bwrap"),
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--perms", "1777", "--size", str(limits.tmp_bytes), "--tmpfs", "/tmp",
    ]  # fmt: skip
    hidden = hidden_dirs()
    for d in hidden:
        args += ["--tmpfs", str(d)]
    # The venv, and the interpreter it points to, may live inside a hidden folder: bound back,
    # read-only (the editable install's .pth still points into the course: `import autograder`
    # fails in the kernel, as it should; the kernel needs numpy only).
    made: set[Path] = set()
    for src, dest in bind_back(hidden):
        args += [*_parents(dest, hidden, made), "--ro-bind", str(src), str(dest)]
    args += [
        *_parents(scratch, hidden, made),
        "--bind", str(scratch), str(scratch),
        "--chdir", str(scratch),
        "--unshare-pid", "--unshare-ipc", "--unshare-net", "--unshare-uts",
        "--die-with-parent",
        "--cap-drop", "ALL",
    ]  # fmt: skip
    if uid is not None:  # only what setpriv needs to become the kernel's uid; gone after it
        args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    return args


def own(scratch: Path, uid: int) -> None:
    """Give the kernel's uid its scratch folder. 0711: bwrap, root without capabilities by the
    time it changes into the folder, must be able to enter it; no other kernel can see it (each
    sandbox binds its own folder only)."""
    os.chown(scratch, uid, uid)
    os.chmod(scratch, 0o711)


def _setpriv_args(uid: int | None) -> list[str]:
    """Become the kernel's own uid inside the sandbox (after bwrap, as root, made its mounts)."""
    if uid is None:
        return []
    return [tool("setpriv"), f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs"]


def _prlimit_args(limits: Limits, uid: int | None = None) -> list[str]:
    args = [tool("prlimit"), f"--as={limits.memory_bytes}", f"--fsize={limits.file_bytes}"]
    return [*args, "--core=0", *([f"--nproc={limits.processes}"] if uid is not None else [])]


def no_sandbox_requested() -> bool:
    """The instructor opted out with COURSE_GRADE_NO_SANDBOX=1 (any other value: sandboxed)."""
    return os.environ.get("COURSE_GRADE_NO_SANDBOX") == "1"


FIXES = """\
What to do:
  * install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap);
  * allow unprivileged user namespaces (Ubuntu 23.10+ restricts them with AppArmor:
    sysctl kernel.apparmor_restrict_unprivileged_userns=0, or an AppArmor profile for bwrap;
    elsewhere: sysctl kernel.unprivileged_userns_clone=1 / user.max_user_namespaces > 0);
  * grade on Linux (macOS and Windows: a Linux VM or container that allows user namespaces);
  * or grade WITHOUT the sandbox, knowing that student code can then read the solutions and
    write files: make grade NO_SANDBOX=1 (or --no-sandbox, or COURSE_GRADE_NO_SANDBOX=1)."""


def refusal(why: str) -> str:
    """The message `make grade` stops with when the sandbox cannot start."""
    return f"error: the grading sandbox cannot start here, so nothing was graded.\nReason: {why}\n{FIXES}"


@lru_cache(maxsize=1)
def probe() -> tuple[bool, str]:
    """(True, "") when bubblewrap runs the kernel's interpreter here; (False, why) otherwise."""
    for name, pkg in (
        ("bwrap", "bubblewrap"),
        ("prlimit", "util-linux"),
        ("setpriv", "util-linux"),
    ):
        if shutil.which(name) is None:
            return False, f"{name} ({pkg}) is not installed or not on PATH"
    import tempfile

    with tempfile.TemporaryDirectory(prefix="course-probe-") as tmp:
        uid = kernel_uid()
        if uid is not None:
            own(Path(tmp), uid)
        cmd = [*_prlimit_args(Limits(), uid), *_bwrap_args(Path(tmp), Limits(), uid)]
        cmd += [*_setpriv_args(uid), sys.executable, "-c", "import numpy; print('ok')"]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return False, f"bubblewrap did not run: {exc}"
    if proc.returncode != 0 or proc.stdout.strip() != "ok":
        return (
            False,
            f"bubblewrap did not run (exit {proc.returncode}): {proc.stderr.strip()[:300]}",
        )
    return True, ""


def kernel_env(scratch: Path) -> dict[str, str]:
    """The kernel's whole environment: nothing of the grader's leaks in."""
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(scratch),
        "IPYTHONDIR": str(scratch / ".ipython"),
        "MPLCONFIGDIR": str(scratch / ".matplotlib"),
        "MPLBACKEND": "Agg",
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "NBGRADER_EXECUTION": "autograde",
        "TMPDIR": "/tmp",
    }
    for var in THREAD_VARS:
        env[var] = "1"
    return env


# A command that the kernel is started through when it runs WITHOUT bubblewrap, placed after
# prlimit. Empty for `make grade`. autograder.gradescope sets it in Gradescope's container (root,
# no user namespaces) to a command that drops root for an unprivileged user before the kernel
# starts; the command may use ``{connection_file}`` (filled in by jupyter_client like the rest).
UNSANDBOXED_KERNEL_WRAPPER: list[str] = []


# ipykernel's own launcher (python -m ipykernel_launcher), with one change: while the kernel
# starts, debugpy is not importable, so ipykernel does not load its debugger (debugpy and pydevd,
# about 140 modules and 0.1 s of CPU per kernel; nothing under grading sends a debug request).
KERNEL_LAUNCHER = """\
import sys
from pathlib import Path
if sys.path[0] == "" or Path(sys.path[0]) == Path.cwd():
    del sys.path[0]  # as ipykernel_launcher: IPKernelApp puts it back
sys.modules["debugpy"] = None
from ipykernel import kernelapp
kernelapp.launch_new_instance()
"""
# Run once the kernel is up, before any student cell: the student's own `import debugpy` works.
UNBLOCK_DEBUGPY = (
    "import sys as _course_sys; _course_sys.modules.get('debugpy', 0) is None and "
    "_course_sys.modules.pop('debugpy'); del _course_sys"
)


def kernel_argv(
    scratch: Path, limits: Limits, sandboxed: bool, uid: int | None = None
) -> list[str]:
    """The kernel command; ``{connection_file}`` is filled in by jupyter_client. With ``uid``
    (sandboxed only) the kernel runs as that uid, with its own process limit."""
    env = kernel_env(scratch)
    # No history database: one fewer SQLite file per kernel, and a faster start.
    py = [
        sys.executable,
        "-c",
        KERNEL_LAUNCHER,
        "-f",
        "{connection_file}",
        "--HistoryManager.enabled=False",
        # numpy is loaded while the kernel boots (no name is bound: the student's namespace is
        # as fresh as nbgrader's), so the student's `import numpy as np` costs nothing; then
        # debugpy becomes importable again (see KERNEL_LAUNCHER).
        "--IPKernelApp.exec_lines=import numpy as _course_preload; del _course_preload",
        f"--IPKernelApp.exec_lines={UNBLOCK_DEBUGPY}",
        # Then torch, jax and tensorflow stop importing, with a message that names the rule (the
        # graded functions use numpy only; Gradescope's environment has none of them).
        f"--IPKernelApp.exec_lines={blocker_line()}",
    ]
    if sandboxed:
        setenv = []
        for k, v in env.items():
            setenv += ["--setenv", k, v]
        # --clearenv also drops JPY_PARENT_PID: with --unshare-pid that pid is not visible, and
        # ipykernel would think its parent died and exit.
        sandbox = [*_prlimit_args(limits, uid), *_bwrap_args(scratch, limits, uid)]
        return [*sandbox, "--clearenv", *setenv, *_setpriv_args(uid), *py]
    # Without the sandbox, the kernel watches its parent (the worker) and exits with it.
    env["JPY_PARENT_PID"] = str(os.getpid())
    env_i = ["env", "-i", *(f"{k}={v}" for k, v in env.items())]
    return [*_prlimit_args(limits), *UNSANDBOXED_KERNEL_WRAPPER, *env_i, *py]


# ------------------------------------------------------------------------------------------
# The kernel
# ------------------------------------------------------------------------------------------
class OutputCap:
    """Caps what a cell may print: characters per output and per cell (lines are not enough)."""

    def __init__(self, per_output: int = 20_000, per_cell: int = 60_000):
        self.per_output = per_output
        self.left = per_cell
        self.dropped = 0

    def text(self, s: str) -> str:
        limit = min(self.per_output, self.left)
        if len(s) <= limit:
            self.left -= len(s)
            return s
        self.dropped += len(s) - limit
        self.left -= limit
        return s[:limit]


class SandboxKernel:
    """A sandboxed IPython kernel bound to one scratch folder."""

    def __init__(self, scratch: Path, limits: Limits, sandboxed: bool, log: Path | None = None):
        self.scratch = Path(scratch)
        self.log = log  # the kernel's own stdout/stderr go here (outside the scratch folder)
        self.limits = limits
        self.sandboxed = sandboxed
        self.km = None
        self.kc = None
        self.uid = kernel_uid() if sandboxed else None

    # -- life cycle ----------------------------------------------------------------------
    def start(self) -> float:
        """Start the kernel and wait until it answers; returns the seconds it took."""
        t0 = time.monotonic()
        self.launch()
        self.wait_ready()
        return time.monotonic() - t0

    def launch(self) -> None:
        """Start the kernel process without waiting for it (it boots in the background)."""
        from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
        from jupyter_client.manager import KernelManager

        spec = KernelSpec(
            argv=kernel_argv(self.scratch, self.limits, self.sandboxed, self.uid),
            display_name="Python 3 (grading sandbox)",
            language="python",
            interrupt_mode="message",  # with --unshare-pid a signal to the group misses the kernel
            env={},
        )

        class _OneSpec(KernelSpecManager):
            def get_kernel_spec(self, kernel_name):  # noqa: ARG002
                return spec

        uid = self.uid

        class _Manager(KernelManager):
            def write_connection_file(self, **kwargs):
                super().write_connection_file(**kwargs)
                if uid is not None:  # the kernel's own uid must read it (jupyter writes 0600)
                    os.chown(self.connection_file, uid, uid)

        if uid is not None:
            own(self.scratch, uid)
        self.km = _Manager(
            kernel_spec_manager=_OneSpec(),
            kernel_name="course-sandbox",
            transport="ipc",
            ip=str(self.scratch / "k"),
            connection_file=str(self.scratch / "kernel.json"),
        )
        out = open(self.log, "ab") if self.log else subprocess.DEVNULL  # noqa: SIM115
        try:
            self.km.start_kernel(
                env={}, cwd=str(self.scratch), stdout=out, stderr=subprocess.STDOUT
            )
        except Exception as exc:
            raise KernelError(f"the grading kernel could not be launched: {exc}") from exc
        finally:
            if out is not subprocess.DEVNULL:
                out.close()
        self.kc = self.km.client()
        self.kc.start_channels()

    def wait_ready(self) -> None:
        """Wait until the kernel answers on shell *and* publishes on iopub (no output is lost)."""
        kc, deadline = self.kc, time.monotonic() + self.limits.start_timeout
        shell_ok = False
        while time.monotonic() < deadline:
            if not self.km.is_alive():
                self.shutdown()
                raise KernelError(f"the grading kernel died while starting: {self._log_tail()}")
            msg_id = kc.kernel_info()
            if not shell_ok:
                try:
                    kc.get_shell_msg(timeout=0.1)
                    shell_ok = True
                except queue.Empty:
                    continue
            end = time.monotonic() + 0.2
            while time.monotonic() < end:
                try:
                    msg = kc.get_iopub_msg(timeout=0.02)
                except queue.Empty:
                    continue
                if msg.get("parent_header", {}).get("msg_id") == msg_id:
                    self._drain()
                    return
        self.shutdown()
        raise KernelError(
            f"the grading kernel did not answer within {self.limits.start_timeout:g} s"
        )

    def _log_tail(self) -> str:
        try:
            return (
                self.log.read_text(encoding="utf-8", errors="replace")[-800:].strip()
                if self.log
                else ""
            )
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.km is not None and self.km.is_alive()

    def shutdown(self) -> None:
        if self.kc is not None:
            try:
                self.kc.stop_channels()
            except Exception:  # noqa: BLE001
                pass
        if self.km is not None:
            # Kill the kernel's whole process group (prlimit/bwrap and the kernel inside) and reap
            # it: faster than jupyter_client's polite shutdown, and nothing is left behind.
            proc = getattr(self.km.provisioner, "process", None) if self.km.has_kernel else None
            if proc is not None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
            else:
                try:
                    if self.km.has_kernel:
                        self.km.shutdown_kernel(now=True)
                except Exception:  # noqa: BLE001
                    pass
            try:
                self.km.cleanup_resources()
            except Exception:  # noqa: BLE001
                pass
        self.km = self.kc = None

    # -- running code --------------------------------------------------------------------
    def execute(
        self,
        code: str,
        timeout: float,
        *,
        keep_outputs: bool = True,
        store_history: bool = True,
        cap: OutputCap | None = None,
    ) -> ExecResult:
        """Run ``code``; wait at most ``timeout`` seconds, then interrupt (and kill if need be)."""
        if not self.alive():
            return ExecResult("died")
        self._drain()
        cap = cap or OutputCap()
        t0 = time.monotonic()
        msg_id = self.kc.execute(
            code, store_history=store_history, allow_stdin=False, stop_on_error=False
        )
        res = ExecResult("ok")
        self._collect(res, msg_id, t0 + max(timeout, 0.05), cap, keep_outputs)
        res.seconds = time.monotonic() - t0
        res.dropped_chars = cap.dropped
        if keep_outputs and cap.dropped:
            text = f"\n[grader: {cap.dropped:,} characters of output were cut off]\n"
            res.outputs.append({"output_type": "stream", "name": "stderr", "text": text})
        return res

    def _stop(self, res: ExecResult) -> None:
        """The kernel ignored the interrupt or died: it is gone for good."""
        self.shutdown()
        res.status = "died" if res.status != "timeout" else "timeout"

    def _collect(self, res: ExecResult, msg_id: str, deadline: float, cap, keep: bool) -> None:
        """Read iopub until the request is idle, interrupting at the deadline."""
        interrupted_at = None
        while True:
            now = time.monotonic()
            if interrupted_at is None and now >= deadline:
                interrupted_at, res.status = now, "timeout"
                try:
                    self.km.interrupt_kernel()
                except Exception:  # noqa: BLE001
                    pass
            if interrupted_at is not None and now - interrupted_at > 3.0:
                # It ignored the interrupt (a bare except in a loop): stop it for good.
                self._stop(res)
                res.ename = res.ename or "TimeoutError"
                return
            try:
                msg = self.kc.get_iopub_msg(timeout=0.2)
            except queue.Empty:
                if not self.km.is_alive():
                    self._stop(res)
                    return
                continue
            if msg.get("parent_header", {}).get("msg_id") == msg_id and self._handle(
                res, msg, cap, keep
            ):
                return

    @staticmethod
    def _handle(res: ExecResult, msg: dict, cap, keep: bool) -> bool:
        """Record one iopub message of the request; True when the request is done."""
        mtype, content = msg["msg_type"], msg["content"]
        if mtype == "status":
            return content.get("execution_state") == "idle"
        if mtype == "execute_input":
            res.execution_count = content.get("execution_count")
            return False
        if mtype == "error":
            if res.status == "ok":
                res.status = "error"
            res.ename = str(content.get("ename"))[:200]
            res.evalue = str(content.get("evalue"))[:2000]
        out = _to_output(mtype, content, cap)  # counts characters even when nothing is kept
        if keep and out is not None:
            res.outputs.append(out)
        return False

    def _drain(self) -> None:
        for get in (self.kc.get_shell_msg, self.kc.get_iopub_msg):
            while True:
                try:
                    get(timeout=0)
                except queue.Empty:
                    break
                except Exception:  # noqa: BLE001
                    break


def _to_output(mtype: str, content: dict, cap: OutputCap) -> dict | None:
    """An nbformat output from an iopub message, with every string capped."""
    if mtype == "stream":
        return {
            "output_type": "stream",
            "name": content.get("name", "stdout"),
            "text": cap.text(str(content.get("text", ""))),
        }
    if mtype in ("execute_result", "display_data"):
        data = {}
        for mime, value in (content.get("data") or {}).items():
            text = value if isinstance(value, str) else str(value)
            if mime != "text/plain" and len(text) > cap.per_output:
                cap.dropped += len(text)
                continue  # a big image or HTML: dropped whole, the text form stays
            data[mime] = cap.text(text)
        if not data:
            data = {"text/plain": "[grader: output removed (too large)]"}
        out = {"output_type": mtype, "data": data, "metadata": {}}
        if mtype == "execute_result":
            out["execution_count"] = content.get("execution_count")
        return out
    if mtype == "error":
        # Only the student's own cells run in the kernel (test cells never do), so a traceback
        # quotes the student's code and libraries: kept, capped, to help them find the error.
        return {
            "output_type": "error",
            "ename": cap.text(str(content.get("ename", "Error"))[:200]),
            "evalue": cap.text(str(content.get("evalue", ""))[:2000]),
            "traceback": [
                cap.text(str(line)) for line in list(content.get("traceback") or [])[:60]
            ],
        }
    return None
