"""Similar answers, found with copydetect (winnowed fingerprints of the tokenised code, as MOSS).

Per assignment, each student's answer cells are fingerprinted one function at a time, after the
released stub of that cell and the notebook's given code are removed as boilerplate (what every
student received is no evidence). copydetect tokenises the code first: names become ``V``/``F``,
strings ``S``, comments and layout vanish, so renamed locals, reformatting and new comments do not
hide a copy; fingerprints are a set, so reordered functions do not either.

copydetect gives two fractions per pair (the share of each answer's fingerprinted tokens that lie
in passages both share). ``similarity`` is one symmetric number in [0, 1]: the shared tokens of
both answers over all their fingerprinted tokens, summed over the functions both answered,
``(shared_a + shared_b) / (tokens_a + tokens_b)``. A pair is flagged at ``THRESHOLD`` or more
(fixed from measurements on the samples: see README, "Copied work"). An answer with fewer than
``MIN_TOKENS`` fingerprinted tokens left (the stub, a one-liner) is too short to judge: such
functions are listed, not scored. A flag is a reason to look, never a verdict.
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass
from itertools import combinations

from copydetect import CodeFingerprint
from copydetect.defaults import GUARANTEE_THRESHOLD, NOISE_THRESHOLD
from copydetect.utils import find_fingerprint_overlap, get_copied_slices

K = NOISE_THRESHOLD  # 25 characters of tokenised code: shorter matches are noise
WINDOW = GUARANTEE_THRESHOLD - NOISE_THRESHOLD + 1
MIN_TOKENS = 60  # fingerprinted characters of tokenised code a function needs to be judged
THRESHOLD = 0.75  # independent answers measured up to 0.69, planted copies from 0.77


@dataclass
class Pair:
    student_a: str
    student_b: str
    similarity: float
    functions: list  # the functions compared

    @property
    def flagged(self) -> bool:
        return self.similarity >= THRESHOLD


def boilerplate(texts: list[str]) -> list[int]:
    """The fingerprints of code every student was given (stubs, given cells)."""
    hashes: set = set()
    for i, text in enumerate(texts):
        fp = _fingerprint(f"given{i}", text, [])
        hashes |= fp.hashes
    return sorted(hashes)


def _fingerprint(name: str, text: str, given: list[int]) -> CodeFingerprint:
    logging.getLogger().disabled, was = True, logging.getLogger().disabled
    try:
        return CodeFingerprint(
            f"{name}.py", K, WINDOW, boilerplate=given, language="python", fp=io.StringIO(text)
        )
    finally:
        logging.getLogger().disabled = was


def fingerprints(answers: dict[str, dict[str, str]], given: list[int]) -> tuple[dict, dict]:
    """student -> {function: fingerprint} for answers long enough to judge, and
    student -> [functions too short to judge]."""
    prints, short = {}, {}
    for student, funcs in answers.items():
        for function, text in funcs.items():
            fp = _fingerprint(f"{student}_{function}", text, given)
            if fp.token_coverage >= MIN_TOKENS:
                prints.setdefault(student, {})[function] = fp
            else:
                short.setdefault(student, []).append(function)
    return prints, short


def _overlaps(fa: CodeFingerprint, fb: CodeFingerprint) -> tuple[int, int]:
    """The tokens of each answer inside passages the two share (copydetect's token overlap,
    before it maps them back onto the raw code)."""
    ia, ib = find_fingerprint_overlap(fa.hashes, fb.hashes, fa.hash_idx, fb.hash_idx)
    out = []
    for idx in (ia, ib):
        sl = get_copied_slices(idx, K)
        out.append(int((sl[1] - sl[0]).sum()) if sl.shape[1] else 0)
    return out[0], out[1]


def similarity(a: dict, b: dict) -> tuple[float, list[str]] | None:
    """The symmetric similarity of two students' fingerprinted answers, or None when they share
    no judged function."""
    common = sorted(set(a) & set(b))
    shared = total = 0
    for f in common:
        shared += sum(_overlaps(a[f], b[f]))
        total += a[f].token_coverage + b[f].token_coverage
    if not total:
        return None
    return min(1.0, shared / total), common


def pairs(prints: dict) -> list[Pair]:
    """Every pair of students with a judged function in common, most similar first."""
    out = []
    for sa, sb in combinations(sorted(prints), 2):
        got = similarity(prints[sa], prints[sb])
        if got is not None:
            out.append(Pair(sa, sb, got[0], got[1]))
    return sorted(out, key=lambda p: (-p.similarity, p.student_a, p.student_b))
