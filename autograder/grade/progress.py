"""A plain-text progress bar on stderr (one line per tenth when stderr is not a terminal)."""

from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, total: int):
        self.total, self.done, self.bad, self.t0 = total, 0, 0, time.monotonic()
        self.tty = sys.stderr.isatty()
        self.last_pct = -1
        self.last_at: float | None = None  # when the latest result came (the run's timings)

    def line(self, who: str) -> str:
        elapsed = time.monotonic() - self.t0
        eta = elapsed / max(self.done, 1) * (self.total - self.done)
        fill = int(30 * self.done / max(self.total, 1))
        return (
            f"[{'#' * fill}{'.' * (30 - fill)}] {self.done}/{self.total} ({self.bad} bad)  "
            f"{elapsed:.0f}s elapsed, ~{eta:.0f}s left  {who}"
        )

    def step(self, result) -> None:
        self.last_at = time.monotonic()
        self.done += 1
        self.bad += result.status != "graded"
        line = self.line(f"{result.student}/{result.assignment}")
        if self.tty:
            sys.stderr.write("\r" + line[:150].ljust(150))
            if self.done == self.total:
                sys.stderr.write("\n")
        else:
            pct = 10 * self.done // max(self.total, 1)
            if pct != self.last_pct or self.done == self.total:
                self.last_pct = pct
                sys.stderr.write(line + "\n")
        sys.stderr.flush()
