"""The state of one submission's grading: its kernel, its scratch folder, its time budget."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from .. import nb
from .assignment import AssignmentInfo, cases_for, student_cells
from .exchange import (
    HARNESS_GONE,
    HarnessError,
    harness_code,
    new_paths,
    read_outcomes,
    write_new,
)
from .kernels import new_kernel, new_scratch, take_spare
from .refused import refusal, with_hint
from .results import Job
from .sandbox import GIB, KernelError
from .settings import Settings

MAX_RESTARTS = 8  # kernel restarts per submission after a death during the checks (and the budget)


class Run:
    """One submission being graded: run its cells, then its checks, in one sandboxed kernel."""

    def __init__(
        self, job: Job, settings: Settings, info: AssignmentInfo, notebook: dict, raw: bytes
    ):
        self.job, self.settings, self.info, self.nb = job, settings, info, notebook
        # A kernel the worker launched ahead of time (it booted while the last one was judged),
        # in its own fresh scratch folder; else a new folder and a kernel started below.
        spare = take_spare()
        if spare is not None:
            self.kernel, self.scratch, self.spare_fresh = spare[0], spare[1], True
        else:
            self.kernel, self.scratch, self.spare_fresh = None, new_scratch(settings), False
        self.raw = raw
        self.old_scratch: list[Path] = []
        try:
            write_new(self.scratch / f"{info.name}.ipynb", raw)
        except OSError:
            self.close()
            raise
        self.cells = student_cells(notebook, info)
        self.cell_results: dict[int, object] = {}
        self.notes: list[str] = []
        self.fatal: str | None = None  # why no further check can run
        self.first_error: str | None = None
        self.errors: dict[str, str] = {}  # answer cell (grade_id) -> what its cell raised
        self.refused: list[str] = []  # what the kernel refused to import, as the student reads it
        self.restarts = 0
        self.deadline = None
        self.phases: dict[str, float] = {}  # seconds per phase (the benchmark's breakdown)
        self.harness_in = None  # the kernel that holds the check harness (exchange.harness_code)

    def _clock(self, phase: str, t0: float) -> None:
        self.phases[phase] = self.phases.get(phase, 0.0) + time.perf_counter() - t0

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def _use_spare(self) -> bool:
        if not self.spare_fresh:
            return False
        self.spare_fresh = False
        try:
            self.kernel.wait_ready()
            return True
        except KernelError:
            return False  # start one the ordinary way

    def start_kernel(self) -> None:
        t0 = time.perf_counter()
        try:
            self._start_kernel()
        finally:
            self._clock("kernel", t0)

    def _start_kernel(self) -> None:
        if self._use_spare():
            return
        if self.kernel is not None:
            # A restart gets a fresh folder: the dead kernel's student code may have planted
            # links or files in the old one.
            self.kernel.shutdown()
            self.old_scratch.append(self.scratch)
            self.scratch = new_scratch(self.settings)
            write_new(self.scratch / f"{self.info.name}.ipynb", self.raw)
        for attempt in range(2):  # one retry: a start can fail when the machine is overloaded
            self.kernel = new_kernel(self.settings, self.scratch)
            try:
                self.kernel.start()
                return
            except KernelError:
                if attempt:
                    raise

    def label(self, i: int) -> str:
        """How a student finds cell i: its position in the notebook, and its name if it has one."""
        gid = nb.grade_id(self.nb["cells"][i])
        return f"cell {i + 1} ({gid})" if gid in self.info.answer_ids else f"cell {i + 1}"

    def _cell_error(self, i: int, n: str, res) -> None:
        """Remember what cell i raised: for the message of its function's checks and, when the
        kernel refused an import (:mod:`.refused`), as a note that names the rule."""
        said = f"{n} raised {res.ename}: {(res.evalue or '')[:200]}"
        self.first_error = self.first_error or said
        gid = nb.grade_id(self.nb["cells"][i])
        if gid in self.info.answer_ids:
            self.errors.setdefault(gid, said)
        note = refusal(n, res.ename, res.evalue)
        if note and note not in self.notes:
            self.refused.append(note)
            self.notes.append(note)

    def _after_cell(self, i: int, res, timeout: float) -> None:
        n = self.label(i)
        if res.status == "timeout":
            self.notes.append(f"your {n} ran longer than {timeout:.0f} s and was stopped")
            self.first_error = self.first_error or f"{n} was stopped after {timeout:.0f} s"
        elif res.status == "error":
            self._cell_error(i, n, res)
        if self.kernel.alive():
            return
        if res.status == "timeout":
            self.fatal = (
                f"your {n} ran longer than {timeout:.0f} s and did not stop when interrupted"
            )
        else:
            self.fatal = (
                f"the kernel died while running your {n} (os._exit, a crash, or more memory "
                f"than the {self.settings.limits.memory_bytes / GIB:g} GiB limit)"
            )
        self.notes.append(self.fatal)

    def run_cells(self, record: bool) -> None:
        """Run the student's cells in order; stop only if the kernel dies or time runs out."""
        t0 = time.perf_counter()
        try:
            self._run_cells(record)
        finally:
            self._clock("cells", t0)

    def _run_cells(self, record: bool) -> None:
        for i in self.cells:
            n = self.label(i)
            left = self.remaining()
            if left <= 0.2:
                budget = self.settings.notebook_budget
                self.fatal = f"the notebook used up its time budget ({budget:g} s) before your {n}"
                return
            timeout = min(self.settings.cell_timeout, left)
            res = self.kernel.execute(nb.source(self.nb["cells"][i]), timeout, keep_outputs=record)
            if record:
                self.cell_results[i] = res
            self._after_cell(i, res, timeout)
            if self.fatal:
                return

    def revive(self) -> bool:
        """After the kernel died during a check: a fresh kernel with the student's cells rerun."""
        if self.restarts >= MAX_RESTARTS or self.remaining() < 1.0:
            return False
        self.restarts += 1
        self.start_kernel()
        self.run_cells(record=False)
        return self.fatal is None and self.kernel.alive()

    def _ready(self) -> str | None:
        """Why no check can run now, or None."""
        if self.fatal:
            return self.fatal
        if not self.kernel.alive() and not self.revive():
            self.fatal = self.fatal or "the kernel could not be restarted after it died"
            return self.fatal
        if self.remaining() <= 0.2:
            self.fatal = (
                f"the notebook used up its time budget ({self.settings.notebook_budget:g} s)"
            )
            return self.fatal
        return None

    def run_check(self, gid: str) -> tuple[bool, str, str]:
        """(passed, message, mistake) for one test cell, judged here from what the kernel hands
        back; ``mistake``: the ids of the mistakes the judge recognised ("" when none)."""
        why = self._ready()
        if why:
            return False, why, ""
        t0 = time.perf_counter()
        check = self.info.checks[gid]
        cases, data = cases_for(self.info.name, gid)
        in_path, out_json, out_npz = new_paths(self.scratch)
        write_new(in_path, data)
        timeout = min(self.settings.cell_timeout, self.remaining())
        res = self._exchange(check.function, in_path, out_json, out_npz, timeout)
        problem = self._exchange_problem(check.function, res, timeout)
        if problem:
            self._clock("exchange", t0)
            self.harness_in = None  # the next check defines it again
            return False, problem, ""
        self.harness_in = self.kernel
        try:
            outcomes = read_outcomes(cases, out_json, out_npz)
        except HarnessError as exc:
            return False, self._harness_message(check.function, str(exc)), ""
        finally:
            self._clock("exchange", t0)
        n = len(outcomes)
        if n < len(cases) and not (n and outcomes[-1].error_type == "NotImplementedError"):
            return False, f"{check.function} did not report on every hidden case.", ""
        t0 = time.perf_counter()
        result = check.verdict(outcomes, cases[:n])
        self._clock("judge", t0)
        if result.passed:
            return True, "", ""
        message = f"{check.what}: " + "\n".join(result.messages)
        message = with_hint(message, self.refused, "raised NameError" in message)
        return False, message, result.mistake

    def _exchange(self, fn: str, in_path, out_json, out_npz, timeout: float):
        """Run the harness on one check's inputs: defined in this kernel by its first check, and
        again (once) if the student's code removed it before the student's function was called."""
        define = self.harness_in is not self.kernel
        code = harness_code(fn, in_path, out_json, out_npz, define)
        res = self.kernel.execute(code, timeout, keep_outputs=False, store_history=False)
        if not define and res.status == "error" and res.evalue == HARNESS_GONE:
            code = harness_code(fn, in_path, out_json, out_npz, True)
            res = self.kernel.execute(code, timeout, keep_outputs=False, store_history=False)
        return res

    def _exchange_problem(self, fn: str, res, timeout: float) -> str | None:
        if res.status == "timeout":
            return f"{fn} ran longer than {timeout:.0f} s on the hidden cases and was stopped (an endless loop?)"
        if res.status == "died" or not self.kernel.alive():
            return (
                f"the kernel died while {fn} ran on the hidden cases (os._exit, a crash, or more "
                f"memory than the {self.settings.limits.memory_bytes / GIB:g} GiB limit)"
            )
        if res.status == "error":
            return f"{fn} could not be graded: {res.ename}: {(res.evalue or '')[:300]}"
        return None

    def _harness_message(self, fn: str, why: str) -> str:
        if why == "missing":
            said = self.errors.get(fn) or self.first_error
            hint = f" ({said})" if said else ""
            return f"your notebook defines no function named {fn}{hint}."
        if why.startswith("not_callable:"):
            return f"{fn} is a {why.split(':', 1)[1]}, not a function."
        return f"the results of {fn} could not be read: {why}."

    def close(self) -> None:
        if self.kernel is not None:
            self.kernel.shutdown()
        for d in [*self.old_scratch, self.scratch]:
            shutil.rmtree(d, ignore_errors=True)
