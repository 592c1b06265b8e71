"""Reading an LMS's submissions zip without trusting it.

Nothing is ever extracted by the names the zip gives: :mod:`.place` writes each chosen notebook
to a path made from the roster (``<grading>/submitted/<id>/<A>/<A>.ipynb``). Still, a member
whose name could not be a plain file of a plain download (an absolute name, a ``..`` part, a
drive letter, a symbolic link, an encrypted or oversized member) is refused with the reason, so
the instructor sees that the archive was not what the LMS writes. Members are read with a bound
on what is decompressed, whatever the header claims (a zip bomb stops at the limit).
"""

from __future__ import annotations

import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

MAX_MEMBER_BYTES = 20 * 1024**2  # the grader refuses larger notebooks too (grade/submission.py)
MAX_MEMBERS = 20_000


class ArchiveError(Exception):
    """The file cannot be read as a zip at all: reported, exit status 2."""


@dataclass
class Member:
    """One file in the zip: its name as stored, the parts of that name, its zip entry."""

    name: str
    parts: tuple[str, ...]
    info: zipfile.ZipInfo

    @property
    def basename(self) -> str:
        return self.parts[-1]


def unsafe_name(info: zipfile.ZipInfo) -> str | None:
    """Why this entry cannot be a plain file of a download, or None."""
    name = info.filename
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        return "an absolute name"
    parts = name.replace("\\", "/").split("/")
    if any(p == ".." for p in parts):
        return "a name that climbs out of its folder (..)"
    if "\x00" in name:
        return "a name with a NUL byte"
    if info.flag_bits & 0x1:
        return "an encrypted member"
    if info.file_size > MAX_MEMBER_BYTES:
        return f"larger than {MAX_MEMBER_BYTES // 1024**2} MB ({info.file_size / 1024**2:.0f} MB)"
    return None


def members(path: Path) -> tuple[list[Member], list[tuple[str, str]]]:
    """The zip's files (folders left out) and the refused entries as (name, why)."""
    try:
        zf = zipfile.ZipFile(path)
    except FileNotFoundError as e:
        raise ArchiveError(f"no such file: {path}") from e
    except (zipfile.BadZipFile, OSError) as e:
        raise ArchiveError(f"{path} is not a zip file ({e})") from e
    with zf:
        infos = zf.infolist()
    if len(infos) > MAX_MEMBERS:
        raise ArchiveError(f"{path} has {len(infos)} entries (more than {MAX_MEMBERS})")
    good, refused = [], []
    for info in infos:
        if info.is_dir():
            continue
        why = unsafe_name(info)
        if why:
            refused.append((info.filename, why))
            continue
        parts = tuple(p for p in PurePosixPath(info.filename.replace("\\", "/")).parts if p != ".")
        if parts and not parts[0].startswith("__MACOSX"):
            good.append(Member(info.filename, parts, info))
    return good, refused


def read_member(path: Path, member: Member) -> bytes:
    """The member's bytes, never more than the limit decompressed (ValueError beyond it)."""
    with zipfile.ZipFile(path) as zf, zf.open(member.info) as f:
        data = f.read(MAX_MEMBER_BYTES + 1)
    if len(data) > MAX_MEMBER_BYTES:
        raise ValueError(f"it decompresses to more than {MAX_MEMBER_BYTES // 1024**2} MB")
    return data
