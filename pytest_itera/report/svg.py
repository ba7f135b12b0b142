"""A small SVG writer for the report's charts: our own, on purpose.

Why not matplotlib or a JS library: no dependency to install for a report (the plugin runs on a
rented machine), the same bytes for the same campaign (no timestamps, ids or font metrics
from the host: reports are diffed and sealed), every value escaped here once (campaign text is
hostile), and nothing fetched when the page opens (no script, no font, no URL).

Text never overlaps by estimate alone: each label is drawn in a monospace font with
``textLength`` set to its estimated width, so the browser draws it exactly as wide as the
layout reserved for it.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

from pytest_itera.core.text import clean
from pytest_itera.files.outputs import SVG_MARK

SVG_NS = "http" + "://www.w3.org/2000/svg"  # only in standalone .svg files
CHAR_W = 0.62  # a monospace glyph's advance, in ems (DejaVu Sans Mono: 0.602)


# The charts' styles: in the HTML page's <style>, and in each standalone .svg file.
STYLE = """
svg text{font-family:"DejaVu Sans Mono",monospace;fill:#222}
svg rect.bar{stroke:#fff;stroke-width:.5}
svg .planned{fill:#8fb3de}svg .actual{fill:#e6a157}svg .zero{fill:#b33}
svg .deviation{stroke:#c00;stroke-width:2}svg .lot{fill:#d9d2ec}
svg .uncommitted{fill:#e9f3e9}svg .window{stroke:#b00;stroke-width:2}
svg .threshold{stroke:#b00;stroke-width:2;stroke-dasharray:6 3}
svg .axis{stroke:#999;stroke-width:1}svg .grid{stroke:#eee;stroke-width:1}
svg .meets{fill:#2e7d32}svg .misses{fill:#9e9e9e}svg .novalue{fill:#fff;stroke:#999}
svg .series{fill:none;stroke:#1f5fa8;stroke-width:1.5}
svg .reference{fill:none;stroke:#e08a1e;stroke-width:3.5}
svg .resumed{stroke:#1f5fa8;stroke-width:1.5;stroke-dasharray:5 4}
svg .dot{fill:#1f5fa8;stroke:#fff;stroke-width:.75}
svg .mark{stroke:#7a1a10;stroke-width:1.5;stroke-dasharray:3 2}
svg .nonfinite{fill:#c00}
""".strip()


def esc(text: object) -> str:
    """Campaign text inside SVG/HTML: escaped, one line, '://' spelt so no URL appears."""
    return html.escape(clean(text), quote=True).replace("://", ":&#47;&#47;")


def text_width(text: str, size: float) -> float:
    return len(clean(text)) * size * CHAR_W


def num(value: float) -> str:
    """A coordinate: 2 decimals, no '-0.00'."""
    text = f"{value:.2f}"
    return "0.00" if text == "-0.00" else text


def short(value: float) -> str:
    """A value as a label: 4 significant digits."""
    return f"{value:.4g}"


class Canvas:
    """SVG elements in drawing order; :meth:`render` wraps them in one <svg>."""

    def __init__(self, width: float, height: float, css: str, title: str) -> None:
        self.width, self.height, self.css, self.title = width, height, css, title
        self.parts: list[str] = []

    def rect(self, x: float, y: float, w: float, h: float, cls: str, tip: str = "",
             data: str = "") -> None:
        extra = f' data-step="{esc(data)}"' if data else ""
        body = f"<title>{esc(tip)}</title></rect>" if tip else "</rect>"
        self.parts.append(f'<rect class="{cls}"{extra} x="{num(x)}" y="{num(y)}" '
                          f'width="{num(max(w, 0))}" height="{num(max(h, 0))}">{body}')

    def line(self, x1: float, y1: float, x2: float, y2: float, cls: str, tip: str = "") -> None:
        body = f"<title>{esc(tip)}</title></line>" if tip else "</line>"
        self.parts.append(f'<line class="{cls}" x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" '
                          f'y2="{num(y2)}">{body}')

    def text(self, x: float, y: float, text: str, cls: str = "", size: float = 10,
             anchor: str = "start", tip: str = "", max_width: float | None = None) -> float:
        """Draw ``text`` with its baseline at y; returns its width (fixed by textLength; a
        text wider than ``max_width`` is squeezed into it)."""
        width = text_width(text, size)
        if max_width is not None and width > max_width:
            width = max_width
        left = {"start": x, "middle": x - width / 2, "end": x - width}[anchor]
        css = f' class="{cls}"' if cls else ""
        title = f"<title>{esc(tip)}</title>" if tip else ""
        self.parts.append(
            f'<text{css} x="{num(left)}" y="{num(y)}" font-size="{size:g}" '
            f'textLength="{num(width)}" lengthAdjust="spacingAndGlyphs">{title}{esc(text)}</text>')
        return width

    def polyline(self, points: Sequence[tuple[float, float]], cls: str) -> None:
        coords = " ".join(f"{num(x)},{num(y)}" for x, y in points)
        self.parts.append(f'<polyline class="{cls}" points="{coords}"/>')

    def circle(self, x: float, y: float, r: float, cls: str, tip: str = "") -> None:
        body = f"<title>{esc(tip)}</title></circle>" if tip else "</circle>"
        self.parts.append(f'<circle class="{cls}" cx="{num(x)}" cy="{num(y)}" r="{r:g}">{body}')

    def render(self, standalone: bool = False) -> str:
        """Inline in HTML (no namespace: the page holds no URL), or ``standalone``: an .svg
        file, with its namespace and its own styles."""
        w, h = num(self.width), num(self.height)
        head = f'<svg xmlns="{SVG_NS}" ' if standalone else "<svg "
        style = [f"<style>{STYLE}</style>"] if standalone else []
        mark = [SVG_MARK] if standalone else []  # recognised inside a campaign (files.outputs)
        return "\n".join([
            *mark, f'{head}class="{self.css}" role="img" '
            f'width="{w}" height="{h}" viewBox="0 0 {w} {h}">',
            f"<title>{esc(self.title)}</title>", *style, *self.parts, "</svg>"])


class Scale:
    """A linear map from [lo, hi] onto [start, end] pixels (a flat range is widened)."""

    def __init__(self, lo: float, hi: float, start: float, end: float) -> None:
        if not (math.isfinite(lo) and math.isfinite(hi)):
            lo, hi = 0.0, 1.0
        if hi - lo <= abs(hi) * 1e-12 or hi <= lo:
            pad = abs(hi) * 0.05 or 1.0
            lo, hi = lo - pad, hi + pad
        self.lo, self.hi, self.start, self.end = lo, hi, start, end

    def __call__(self, value: float) -> float:
        return self.start + (value - self.lo) / (self.hi - self.lo) * (self.end - self.start)

    def ticks(self, count: int = 5) -> list[float]:
        """Round values inside the range, at most ``count + 1`` of them."""
        raw = (self.hi - self.lo) / count
        power = 10 ** math.floor(math.log10(raw))
        step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
        first = math.ceil(self.lo / step)
        return [k * step for k in range(first, first + count + 2)
                if self.lo - 1e-9 * step <= k * step <= self.hi + 1e-9 * step]
