"""How a batch is graded: the limits and the folders every worker shares."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .sandbox import Limits


@dataclass
class Settings:
    run_root: Path  # per-run folder under /tmp holding one scratch folder per submission
    grading_dir: Path  # autograded/ and feedback/ are written below it
    limits: Limits = field(default_factory=Limits)
    cell_timeout: float = 20.0
    notebook_budget: float = 60.0
    sandboxed: bool = True
