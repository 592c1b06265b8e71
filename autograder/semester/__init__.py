"""``make semester``: a whole class's term, from the samples to the LMS's import files.

:mod:`.cohort` decides who hands in what, :mod:`.lms` writes what Canvas and Moodle would give
the instructor, and :mod:`.cli` runs the instructor's own commands on it (collect, grade,
export, report) in a folder of its own, and times them. Nothing here is published to students.
"""
