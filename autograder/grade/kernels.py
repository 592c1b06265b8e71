"""A worker process's kernels: fresh scratch folders, and the spare kernel it launches ahead of
time (it boots while the worker judges the last submission). Per-process state: one thread only.
"""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from .sandbox import KernelError, SandboxKernel
from .settings import Settings

_SPARE: tuple[SandboxKernel, Path] | None = None
_SEQ = itertools.count()
# Set by a worker that knows whether more submissions will follow (the local pool): when a
# submission takes the spare, the next one's kernel is launched at once and boots while this one
# runs (not after it, when the worker would wait for it).
_AHEAD: tuple[Settings, Callable[[], bool]] | None = None


def launch_ahead(settings: Settings, more: Callable[[], bool]) -> None:
    global _AHEAD
    _AHEAD = (settings, more)


def log_path(settings: Settings, scratch: Path) -> Path:
    """The kernel's own stdout/stderr go here, outside its scratch folder."""
    return settings.run_root / f"{scratch.name}.log"


def new_scratch(settings: Settings) -> Path:
    """A fresh private folder for one kernel (and so one submission)."""
    d = settings.run_root / f"w{os.getpid()}-{next(_SEQ):04d}"
    d.mkdir(mode=0o700)
    return d


def new_kernel(settings: Settings, scratch: Path) -> SandboxKernel:
    return SandboxKernel(
        scratch, settings.limits, settings.sandboxed, log=log_path(settings, scratch)
    )


def launch_spare(settings: Settings) -> None:
    """Launch the next submission's kernel now; it boots while this worker does other work."""
    global _SPARE
    scratch = new_scratch(settings)
    kernel = new_kernel(settings, scratch)
    try:
        kernel.launch()
    except KernelError:
        shutil.rmtree(scratch, ignore_errors=True)
        return
    _SPARE = (kernel, scratch)


def take_spare() -> tuple[SandboxKernel, Path] | None:
    """The spare kernel for this submission (None if there is none); with :func:`launch_ahead`,
    the next submission's kernel is launched now."""
    global _SPARE
    spare, _SPARE = _SPARE, None
    if spare is not None and _AHEAD is not None and _AHEAD[1]():
        launch_spare(_AHEAD[0])
    return spare


def has_spare() -> bool:
    return _SPARE is not None


def drop_spare() -> None:
    global _SPARE
    spare, _SPARE = _SPARE, None
    if spare is not None:
        spare[0].shutdown()
        shutil.rmtree(spare[1], ignore_errors=True)
