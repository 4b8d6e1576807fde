"""Inline SVG charts, drawn on the server: no script, no CDN, readable at any width (viewBox scales)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

WIDTH, HEIGHT, PAD = 640, 240, 40
COLORS = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4d7c0f", "#be185d")


@dataclass(frozen=True)
class Series:
    name: str
    points: Sequence[tuple[float, float]]


def _scale(lo: float, hi: float, size: float, flip: bool) -> tuple[float, float]:
    span = hi - lo or 1.0
    k = size / span
    return (-k, PAD + size + lo * k) if flip else (k, PAD - lo * k)


def line_chart(series: Sequence[Series], x_label: str, y_label: str, title: str) -> str:
    """Lines with a dot per point; an empty chart says so in words."""
    pts = [p for s in series for p in s.points]
    head = (f'<svg class="chart" role="img" viewBox="0 0 {WIDTH} {HEIGHT + 2 * PAD}" '
            f'aria-label="{escape(title)}" data-points="{len(pts)}">')
    if not pts:
        return head + f'<text x="{WIDTH / 2}" y="{HEIGHT / 2 + PAD}" text-anchor="middle">no points yet</text></svg>'
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    inner_w, inner_h = WIDTH - 2 * PAD, HEIGHT
    kx, bx = _scale(min(xs), max(xs), inner_w, False)
    ky, by = _scale(min(ys), max(ys), inner_h, True)
    out = [head, f'<text x="{PAD}" y="{PAD - 12}" class="axis">{escape(y_label)} '
                 f'{max(ys):.4g} … {min(ys):.4g}</text>',
           f'<text x="{WIDTH - PAD}" y="{HEIGHT + 2 * PAD - 8}" text-anchor="end" class="axis">'
           f'{escape(x_label)} {min(xs):.0f} … {max(xs):.0f}</text>',
           f'<line x1="{PAD}" y1="{PAD + inner_h}" x2="{WIDTH - PAD}" y2="{PAD + inner_h}" class="grid"/>']
    for i, s in enumerate(series):
        color = COLORS[i % len(COLORS)]
        coords = [(kx * x + bx, ky * y + by) for x, y in sorted(s.points)]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{path}">'
                   f'<title>{escape(s.name)}</title></polyline>')
        out += [f'<circle class="pt" cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}"/>' for x, y in coords]
    legend = "".join(f'<tspan fill="{COLORS[i % len(COLORS)]}">■ {escape(s.name)}  </tspan>'
                     for i, s in enumerate(series))
    out.append(f'<text x="{PAD}" y="{HEIGHT + 2 * PAD - 8}" class="legend">{legend}</text></svg>')
    return "".join(out)


def bar_chart(bars: Sequence[tuple[int, int]], x_label: str, title: str) -> str:
    """One bar per (x, count)."""
    head = (f'<svg class="chart" role="img" viewBox="0 0 {WIDTH} {HEIGHT + 2 * PAD}" '
            f'aria-label="{escape(title)}" data-points="{len(bars)}">')
    if not bars:
        return head + f'<text x="{WIDTH / 2}" y="{HEIGHT / 2 + PAD}" text-anchor="middle">nothing yet</text></svg>'
    top = max(c for _, c in bars) or 1
    w = (WIDTH - 2 * PAD) / len(bars)
    out = [head]
    for i, (x, c) in enumerate(bars):
        h = HEIGHT * c / top
        out.append(f'<rect x="{PAD + i * w + 1:.1f}" y="{PAD + HEIGHT - h:.1f}" width="{max(w - 2, 1):.1f}" '
                   f'height="{h:.1f}" fill="{COLORS[0]}"><title>{escape(x_label)} {x}: {c}</title></rect>')
    out.append(f'<text x="{PAD}" y="{PAD - 12}" class="axis">max {top} per bucket</text>')
    out.append(f'<text x="{WIDTH - PAD}" y="{HEIGHT + 2 * PAD - 8}" text-anchor="end" class="axis">'
               f'{escape(x_label)} {bars[0][0]} … {bars[-1][0]}</text></svg>')
    return "".join(out)
