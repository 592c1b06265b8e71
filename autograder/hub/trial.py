"""One trial hub: its folders, users and address, and the record of what it changed.

The hub's folder (``HUB_DIR``, default ``/srv/embedding-tables-hub``) holds everything the hub
makes outside the repository::

    state/        root's alone (0700): JupyterHub's database, cookie secret, logs, the passwords,
                  and record.json: every user made and every mode changed, so that stopping (or
                  ``make hub-down`` after a crash) undoes exactly those
    python/ env/  the environment the users' servers run in (autograder/hub/env.py)
    config/       one Jupyter configuration folder per role (autograder/hub/access.py)
    exchange/     nbgrader's exchange
    course        only where the repository is out of other users' reach: a bind mount of it
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..course import ROOT

ROLES = ("instructor", "student")


@dataclass
class Trial:
    home: Path
    ip: str = "127.0.0.1"
    port: int = 8000
    instructor: str = "instructor"
    students: list[str] = field(default_factory=lambda: ["student1", "student2", "student3"])
    grading: Path = ROOT / "grading-hub"

    def __post_init__(self):
        self.home = Path(os.path.abspath(self.home))
        self.grading = Path(os.path.abspath(self.grading))

    @property
    def users(self) -> list[str]:
        return [self.instructor, *self.students]

    def role(self, user: str) -> str:
        return "instructor" if user == self.instructor else "student"

    @property
    def url(self) -> str:
        return f"http://{self.ip}:{self.port}/"

    @property
    def state(self) -> Path:
        return self.home / "state"

    @property
    def exchange(self) -> Path:
        return self.home / "exchange"

    @property
    def mount(self) -> Path:
        return self.home / "course"

    def config(self, role: str) -> Path:
        return self.home / "config" / role

    @property
    def record_path(self) -> Path:
        return self.state / "record.json"


@dataclass
class Record:
    """What a trial changed, written after every change (a crash leaves an accurate record)."""

    path: Path
    users: list[str] = field(default_factory=list)
    uids: list[int] = field(default_factory=list)  # theirs: files they leave behind go to root
    # path -> [mode, gid] before the trial changed it (the repository, the grading folder)
    modes: dict[str, list[int]] = field(default_factory=dict)
    # the grading folder whose tree was given the instructor's group, and its owner and group
    shared_tree: list = field(default_factory=list)
    mounted: str = ""
    made: list[str] = field(default_factory=list)  # folders of the hub's own, removed at the end

    @classmethod
    def load(cls, path: Path) -> Record | None:
        if not path.is_file():
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(path=path, **{k: v for k, v in data.items() if k != "path"})

    def save(self) -> None:
        data = {k: v for k, v in asdict(self).items() if k != "path"}
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
        os.replace(tmp, self.path)
