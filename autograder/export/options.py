"""What the instructor asked of an export: keep or clear grades without a submission, leave or
set the LMS's points possible, raw points or points scaled to the LMS's maximum."""

from dataclasses import dataclass

from autograder.export.csvio import ExportError, format_points


@dataclass(frozen=True)
class Options:
    clear_missing: bool = False  # no submission: clear the LMS's grade (default: keep it)
    set_points_possible: bool = False  # write the gradebook's maximum as Canvas's Points Possible
    scale: bool = False  # scale raw points to the LMS's points possible
    scale_to: float | None = None  # scale raw points to this maximum

    def factor(self, name: str, maximum: float, lms_points: float | None) -> float:
        """What each raw score is multiplied by for ``name`` (1: raw points)."""
        target = self.scale_to if self.scale_to is not None else lms_points if self.scale else None
        if (self.scale or self.scale_to is not None) and target is None:
            raise ExportError(
                f"{name}: --scale needs the LMS's points possible for it, and the roster has "
                "none: give the maximum with --scale-to N"
            )
        if target is None:
            return 1.0
        if maximum <= 0 or target <= 0:
            raise ExportError(
                f"{name}: cannot scale {format_points(maximum)} points to {format_points(target)}"
            )
        return target / maximum
