"""Reading and writing the LMS's CSV files: BOM, CRLF, quoting and the delimiter.

Canvas writes its gradebook export with a byte-order mark when the user asks for Excel
compatibility, and with ``;`` instead of ``,`` in locales whose decimal mark is a comma (its
importer tells the two apart the same way: the delimiter that splits the first lines into the
most fields). Moodle's plain-text export lets the teacher pick comma, semicolon, tab, colon or
"|". Every file here is read as UTF-8 (a BOM is dropped) and parsed by :mod:`csv`, which handles
quoted fields, embedded newlines and CRLF line ends.
"""

import csv
import io
from dataclasses import dataclass
from pathlib import Path

DELIMITERS = (",", ";", "\t", ":", "|")


class ExportError(Exception):
    """A problem with the instructor's input (a file, an option): reported, exit status 2."""


@dataclass
class Table:
    """A CSV file: its header, its data rows (each padded to the header's width), its delimiter."""

    header: list[str]
    rows: list[list[str]]
    delimiter: str = ","

    def column(self, name: str) -> int | None:
        """The index of the first column whose header is ``name`` (case and spaces ignored)."""
        want = name.strip().casefold()
        for i, head in enumerate(self.header):
            if head.strip().casefold() == want:
                return i
        return None


def read_text(path: Path) -> str:
    """A file's text as UTF-8, without its byte-order mark."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ExportError(f"cannot read {path}: {e.strerror}") from e
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ExportError(
            f"{path} is not UTF-8 (byte {e.start}): export it again from the LMS, or save it "
            "from the spreadsheet as 'CSV UTF-8'"
        ) from e


def sniff_delimiter(text: str) -> str:
    """The delimiter that splits the first line into the most fields (``,`` on a tie)."""
    first = text.splitlines()[0] if text else ""
    best, best_count = ",", 0
    for delimiter in DELIMITERS:
        count = len(next(csv.reader([first], delimiter=delimiter), []))
        if count > best_count:
            best, best_count = delimiter, count
    return best


def parse(text: str, delimiter: str | None = None) -> Table:
    """Parse CSV text; blank lines are dropped, short rows are padded with empty cells."""
    delimiter = delimiter or sniff_delimiter(text)
    records = [r for r in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter) if r]
    if not records:
        return Table([], [], delimiter)
    header, width = records[0], len(records[0])
    rows = [r + [""] * (width - len(r)) for r in records[1:]]
    return Table(header, rows, delimiter)


def read_table(path: Path) -> Table:
    """Read a CSV file (UTF-8 with or without a BOM, any line ends, delimiter sniffed)."""
    return parse(read_text(path))


def write_table(path: Path, table: Table) -> None:
    """Write ``table`` as UTF-8 without a BOM, CRLF line ends, fields quoted only when needed."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f, delimiter=table.delimiter, lineterminator="\r\n")
            writer.writerow(table.header)
            writer.writerows(table.rows)
    except OSError as e:
        raise ExportError(f"cannot write {path}: {e.strerror}") from e


def format_points(points: float | None) -> str:
    """Raw points as the LMS reads them: ``7``, ``7.5``, ``0.3333``; ``None`` as an empty cell."""
    if points is None:
        return ""
    text = f"{points:.4f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text
