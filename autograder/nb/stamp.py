"""The release stamp: which course release and which source notebook a released notebook came
from (``metadata.course`` of every notebook in exercises/)."""

from __future__ import annotations

import hashlib

from ..course import COURSE_RELEASE, source_notebook


def source_sha256(assignment: str) -> str:
    """The sha256 of an assignment's source notebook (the whole hex digest)."""
    return hashlib.sha256(source_notebook(assignment).read_bytes()).hexdigest()


def release_stamp(assignment: str) -> dict:
    """The stamp a notebook released from the current source carries."""
    return {"release": COURSE_RELEASE, "source_sha256": source_sha256(assignment)[:12]}


def stamp_label(stamp) -> str:
    """How reports name a stamp: ``2026.11+1a2b3c4d5e6f``; "unknown" when there is none."""
    if not isinstance(stamp, dict):
        return "unknown"
    return f"{str(stamp.get('release'))[:20]}+{str(stamp.get('source_sha256'))[:16]}"
