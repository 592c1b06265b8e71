"""`make report`: the instructor's view of the class, built from what `make grade` recorded.

Reads ``<grading>/runs/<assignment>.json`` (written by every grading run) and the submitted
notebooks; writes ``<grading>/report/``: ``index.html`` (one self-contained page: figures are
inline SVG, no script, no external file), the same numbers as CSV beside it, and
``similarity.csv`` (:mod:`.similarity`). Downstream of autograder.grade; nothing here is shown
to students.
"""
