"""The score distribution as inline SVG: one bar per score band, labelled, with a text summary
(``<title>`` and ``aria-label``) for screen readers. No script, no external file."""

from __future__ import annotations

import math
from html import escape

W, H, PAD_L, PAD_B, PAD_T = 560, 220, 44, 40, 12


def histogram(scores: list[float], max_score: float) -> list[tuple[str, int]]:
    """(label, students) per score band: one band per whole score up to 12 points (a fractional
    score counts in the band of its whole part), else ten equal bands, the last one closed."""
    whole = max_score == int(max_score) and max_score <= 12
    n = int(max_score) + 1 if whole else 10
    counts = [0] * n
    for s in scores:
        i = int(s) if whole else int(s / max_score * n) if max_score > 0 else 0
        counts[min(max(i, 0), n - 1)] += 1
    if whole:
        return [(f"{i}", c) for i, c in enumerate(counts)]
    step = max_score / n
    return [(f"{i * step:.3g}-{(i + 1) * step:.3g}", c) for i, c in enumerate(counts)]


def score_svg(title: str, scores: list[float], max_score: float) -> str:
    bars = histogram(scores, max_score)
    top = max((c for _, c in bars), default=0) or 1
    plot_w, plot_h = W - PAD_L - 8, H - PAD_B - PAD_T
    bw = plot_w / len(bars)
    text = f"{title}: " + ", ".join(f"{c} scored {label}" for label, c in bars if c)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="hist" viewBox="0 0 {W} {H}" '
        f'role="img" aria-label="{escape(text)}"><title>{escape(text)}</title>'
    ]
    for k in range(0, top + 1, max(1, math.ceil(top / 5))):
        y = PAD_T + plot_h - plot_h * k / top
        parts.append(f'<line x1="{PAD_L}" x2="{W - 8}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
        parts.append(f'<text x="{PAD_L - 6}" y="{y + 4:.1f}" text-anchor="end">{k}</text>')
    for i, (label, c) in enumerate(bars):
        x, h = PAD_L + i * bw, plot_h * c / top
        parts.append(
            f'<rect x="{x + 2:.1f}" y="{PAD_T + plot_h - h:.1f}" width="{bw - 4:.1f}" '
            f'height="{h:.1f}" class="bar"><title>{c} scored {escape(label)}</title></rect>'
        )
        parts.append(
            f'<text x="{x + bw / 2:.1f}" y="{H - PAD_B + 16}" text-anchor="middle">{escape(label)}</text>'
        )
    parts.append(
        f'<text x="{PAD_L + plot_w / 2:.1f}" y="{H - 6}" text-anchor="middle">'
        f"score (of {max_score:g}); bars: students</text></svg>"
    )
    return "".join(parts)
