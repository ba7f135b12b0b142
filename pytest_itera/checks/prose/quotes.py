"""The numbers a text quotes for a run, judged against the run's measured metrics.

Two readings:

- :func:`exact_misquotes` (decides): a clause that names one run alone and one of its
  metrics by name ("variant-a's accuracy is 0.95"), quotes a number right after the run or
  the metric, and holds no number equal to that metric's value at the precision written.
  Any language: a run id and a metric name are not words of a language.
- :func:`loose_quotes` (advises): a decimal right after a run's id ("variant-a 0.8558",
  "control's 0.8654"; not one with a unit, a difference, a ratio or a setting after it), or
  a cell of a Markdown table row the run heads, under a column whose header words are in a
  metric's name. An honest text writes such numbers for a step, a split or a subset
  ("control (0.79 at step 500)", "0.91 on the train split"): they advise.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Quote", "equal", "exact_misquotes", "loose_misquotes", "mentions", "misquoted",
           "numbers_in", "shown_values"]


def mentions(text: str, run_id: str) -> bool:
    """Does ``text`` name the run ``run_id`` (as a whole word; any case for ids of 4+ chars)?"""
    pattern = rf"(?<![\w-]){re.escape(run_id)}(?![\w-])"
    flags = re.I if len(run_id) >= 4 else 0
    return re.search(pattern, text, flags) is not None


@dataclass(frozen=True)
class Quote:
    """A number a text quotes for a run, and where (1-based line)."""

    run: str
    written: str
    line: int
    metric: str | None = None  # the metric (exact) or the table column's header (loose)


# A decimal ("0.87", "0,87" as French, German and Spanish write it, "87.5 %"), or a whole
# percentage ("87 %"); not a part of a longer number, a version or a date.
_NUMBER = re.compile(r"(?<![\w.,\-])([+\-\u2212]?\d+(?:[.,]\d+)?)(\s*%)?(?![\w]|[.,]\d)")
_UNIT = re.compile(r"\s*(?:h|hours?|min|minutes?|s|sec|seconds?|days?|steps?|epochs?|[KMGT]i?B|"
                   r"USD|EUR|GBP|x|\$|\u20ac|heures?|jours?|[ée]tapes?|Stunden?|Tage?|"
                   r"Schritte?|horas?|d[íi]as?|pasos?|小时|天|步)(?!\w)", re.I)
# Nor is a number the next word says is something else: a difference or a ratio between runs
# ("variant-a 0.05 higher than control"), or a setting of the run ("control-noisy 0.1 noise",
# "variant-a 0.5 dropout"): an honest text writes these, and no metric holds them.
_SETTING = (r"higher|lower|better|worse|more|less|ahead|behind|points?|pts|pp|percentage|"
            r"times|fold|faster|slower|gain|drop|improvement|difference|delta|margin|dropout|"
            r"lr|learning|rate|noise|decay|momentum|temperature|warmup|beta\d?|alpha|lambda|"
            r"eps|epsilon|sigma|std|scale|ratio|weight|clip|smoothing|probability|mask|masking")
_NOT_A_VALUE = re.compile(
    rf"\s*(?:{_SETTING}|above|below|over|under|up|down|threshold)(?![\w-])", re.I)
# What a number beside a run is when it is no value of its own: a difference, a ratio, a
# setting ("0.05 higher", "1.3 times", "0.5 dropout"), whatever the direction words.
_NOT_ITS_VALUE = re.compile(
    rf"\s*(?:{_SETTING}|points?\s+de|Punkte?|puntos?|de\s+plus|de\s+moins|mehr|weniger|"
    r"m[áa]s|menos)(?![\w-])", re.I)
# What makes a number a value at a step, on a split or a subset, or one end of a range
# ("0.50 at step 1", "0.98 on the train split", "0.70-0.75", "0.70 to 0.75"): not the run's
# metric as measured.
_QUALIFIED = re.compile(
    r"\s*\)?\s*(?:[-\u2013\u2014]\s*\d|(?:to|à|bis|a|au|hasta)\s+\d|"
    r"\(?\s*(?:at|after|by|on|in|for|à|au|après|sur|pour|bei|nach|auf|für|im|en|tras|sobre|"
    r"para|在)\s+(?:the\s+|l['\u2019]|le\s+|la\s+|dem\s+|der\s+|el\s+)?"
    r"(?:steps?|epochs?|iterations?|batch\w*|train\w*|val\w*|dev\b|subset|split|fold|"
    r"[ée]tapes?|[ée]poques?|entra[îi]nement|Schritt\w*|Epoche\w*|Training\w*|"
    r"pasos?|[ée]pocas?|entrenamiento|第))", re.I)
# A word before a metric's name that makes it another measure ("train accuracy",
# "validation accuracy", "step accuracy"): the clause does not quote the metric.
_OTHER_MEASURE = re.compile(
    r"(?:train\w*|val\w*|dev|step|epoch|batch|subset|per-\w+|best|peak|max\w*|min\w*|"
    r"entra[îi]nement|Trainings?|entrenamiento)[\s_-]*$", re.I)
_STEP_COLUMN = re.compile(r"(?:steps?|epochs?|iterations?|split|subset|fold|phase|"
                          r"[ée]tapes?|[ée]poques?|Schritt|Epoche|paso|[ée]poca|步|轮)", re.I)
_QUOTED_NUMBER = (r"(?:['\u2019]s)?\s*(?:[:=]\s*|is\s+|at\s+|of\s+)?\(?"
                  r"([+\-\u2212]?\d+\.\d+)(?!\d)(\s*%)?")
# Where a sentence ends: ".", "!" or "?" before a space (a decimal point is none), ";", a line
# end, and their Chinese forms. The conclusion's readings cut sentences at the same marks.
SENTENCE_END = re.compile(r"[.!?](?=\s|$)|[;\n\u3002\uff01\uff1f\uff1b]")


def _value(written: str) -> tuple[float, int]:
    """(the value, its decimals) of a number as written ("87.5 %" is 0.875 to 3 places)."""
    text = written.replace("\u2212", "-").replace(",", ".").rstrip("% \u00a0")
    decimals = len(text.split(".")[1]) if "." in text else 0
    value = float(text)
    if written.rstrip().endswith("%"):
        value, decimals = value / 100, decimals + 2
    return value, decimals


def numbers_in(text: str) -> list[tuple[str, float]]:
    """The decimals and percentages ``text`` writes, as (written, value); not one followed by
    a unit ("2.5 h", "500 steps") or a word that makes it a difference or a setting ("0.05
    higher", "0.5 dropout"), and no bare whole number."""
    out = []
    for hit in _NUMBER.finditer(text):
        written = hit.group(1) + (hit.group(2) or "")
        if hit.group(2) is None and not re.search(r"[.,]", hit.group(1)):
            continue  # a whole number is a count, a step, a year
        if _UNIT.match(text, hit.end()) or _NOT_ITS_VALUE.match(text, hit.end()):
            continue
        out.append((written, _value(written)[0]))
    return out


def equal(written: str, value: float) -> bool:
    """Is ``value`` the number ``written`` ("0.8654", "0,87", "86.5 %"), at the precision
    written? ValueError when ``written`` is no number."""
    if not re.fullmatch(r"\s*[+\-\u2212]?\d+(?:[.,]\d+)?(?:[eE][+-]?\d+)?\s*%?\s*", written):
        raise ValueError(f"not a number: {written!r}")
    if re.search(r"[eE]", written):
        quoted = float(written.replace("\u2212", "-"))
        return abs(value - quoted) <= abs(quoted) * 1e-9 + 1e-12
    quoted, decimals = _value(written.strip())
    return abs(value - quoted) <= 10.0 ** -decimals + 1e-12


def misquoted(quote: Quote, values: Mapping[str, float]) -> bool:
    """Does the quoted number differ, at the precision written, from every metric of the run
    it names (in a table, from the metrics whose name holds the column's words)? A number
    that cannot be matched with a metric is not judged."""
    if quote.metric is not None:
        words = [w for w in re.split(r"[^a-z0-9]+", quote.metric.lower()) if w]
        values = {k: v for k, v in values.items()
                  if words and all(w in k.lower().split("_") for w in words)}
    if not values:
        return False
    return all(not equal(quote.written, v) for v in values.values())


def _metric_pattern(name: str) -> re.Pattern[str]:
    """A metric's name as a text writes it: ``eval_accuracy`` as itself or "eval accuracy"."""
    parts = [re.escape(p) for p in re.split(r"[_\s]+", name) if p]
    return re.compile(r"(?<![\w-])" + r"[_\s-]?".join(parts) + r"(?![\w-])", re.I)


def _clauses(text: str) -> list[tuple[int, str]]:
    out = []
    for number, line in enumerate(text.splitlines() or [text], 1):
        out += [(number, c) for c in SENTENCE_END.split(line) if c and c.strip()]
    return out


# What may stand between a run's id or a metric's name and the number said to be its value:
# a possessive, ":", "=", "(", a verb or a preposition of being ("is", "was", "reached", "of",
# "est", "de", "ist", "von", "es", "fue"…), at most two of them.
_LINK = re.compile(
    r"(?:['\u2019]s)?(?:\s*(?:[:=(]|\bis\b|\bwas\b|\bof\b|\bat\b|\bwith\b|\breach(?:es|ed)\b|"
    r"\bscor(?:es|ed)\b|\bgot\b|\bends?\b|\bended\b|\best\b|\bvaut\b|\bde\b|\bdu\b|\bà\b|"
    r"\bavec\b|\bist\b|\bwar\b|\bvon\b|\bbetr[äa]gt\b|\bmit\b|\bbei\b|\bes\b|\bfue\b|"
    r"\bcon\b|\bdel\b|\bque\b|为|是|达到)){0,2}\s*$", re.I)
# A number the next words give to the threshold ("the 0.8 accuracy threshold") is none of
# the run's.
_THRESHOLD_AFTER = re.compile(
    r"\s*(?:[^\W\d_]+\s+)?(?:thresholds?|bar|target|cut-?off|seuil|Schwell\w*|umbral|阈值)",
    re.I)


def _near_after(clause: str, end: int) -> re.Match[str] | None:
    """The number right after ``end`` in ``clause`` (a link word or two between)."""
    hit = _NUMBER.search(clause, end)
    if hit is None or not _LINK.match(clause[end:hit.start()]):
        return None
    if _THRESHOLD_AFTER.match(clause, hit.end()) or _QUALIFIED.match(clause, hit.end()):
        return None
    return hit


def exact_misquotes(text: str, values: Mapping[str, Mapping[str, float]],
                    ignore: Sequence[float] = ()) -> list[tuple[Quote, float]]:
    """Exact (decides): in a clause naming one run alone and one of its metrics, the number
    right after the metric's name or the run's id (a link word or two between: "is", ":",
    "of", "est", "ist"…; no unit after it, nor a threshold word),
    when no number of the clause equals that metric's value at the precision written.
    ``values``: {run: {metric: value}}; ``ignore``: numbers that are no run's value (the
    threshold). (quote, the metric's value) per misquote."""
    out: list[tuple[Quote, float]] = []
    for line, clause in _clauses(text):
        named = [r for r in values if mentions(clause, r)]
        if len(named) != 1:
            continue
        run = named[0]
        numbers = [w for w, v in numbers_in(clause)
                   if not any(abs(v - i) < 1e-12 for i in ignore)]
        if not numbers:
            continue
        for metric, value in values[run].items():
            found = _metric_pattern(metric).search(clause)
            if found is None or any(equal(w, value) for w in numbers):
                continue
            if _OTHER_MEASURE.search(clause[:found.start()]):
                continue  # "train accuracy": another measure than the metric
            run_at = re.search(rf"(?<![\w-]){re.escape(run)}(?![\w-])", clause,
                               re.I if len(run) >= 4 else 0)
            for anchor in (found.end(), run_at.end() if run_at else None):
                hit = _near_after(clause, anchor) if anchor is not None else None
                if hit is None:
                    continue
                written = hit.group(1) + (hit.group(2) or "")
                if written in numbers:
                    out.append((Quote(run, written, line, metric), value))
                    break
    return out


def loose_quotes(text: str, run_ids: Sequence[str]) -> list[Quote]:
    """Decimal numbers ``text`` quotes right after a run's id ("variant-a 0.8558",
    "control's 0.8654"; not one with a unit, a difference, a ratio or a setting after it),
    and, in a Markdown table whose first cell is a run's id, each decimal cell under a header
    (the header kept to match it with a metric's name)."""
    out: list[Quote] = []
    ordered = sorted(run_ids, key=len, reverse=True)
    header: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        cells = [c.strip().strip("`*_ ") for c in line.strip().strip("|").split("|")] \
            if line.lstrip().startswith("|") else []
        if cells and all(re.fullmatch(r":?-{3,}:?", c) for c in cells if c):
            continue  # the separator under a header
        if cells and cells[0] not in run_ids:
            header = cells
            continue
        if cells and any(_STEP_COLUMN.fullmatch(h) for h in header):
            continue  # a row per step or split: its values are not the run's measured ones
        if cells:
            for column, cell in enumerate(cells[1:], 1):
                hit = re.fullmatch(r"([+\-\u2212]?\d+\.\d+)(\s*%)?", cell)
                if hit is not None and column < len(header):
                    out.append(Quote(cells[0], cell, number, header[column]))
            continue
        for run_id in ordered:
            pattern = rf"(?<![\w-]){re.escape(run_id)}(?![\w-]){_QUOTED_NUMBER}"
            for hit in re.finditer(pattern, line):
                if _UNIT.match(line, hit.end()) or _NOT_A_VALUE.match(line, hit.end()) \
                        or _QUALIFIED.match(line, hit.end()):
                    continue
                out.append(Quote(run_id, hit.group(1) + (hit.group(2) or ""), number))
    return out


def loose_misquotes(text: str, values: Mapping[str, Mapping[str, float]]
                    ) -> list[tuple[Quote, Mapping[str, float]]]:
    """The numbers :func:`loose_quotes` reads for a run that none of its metrics hold."""
    return [(q, values[q.run]) for q in loose_quotes(text, list(values))
            if misquoted(q, values[q.run])]


def shown_values(values: Mapping[str, float]) -> str:
    """The run's metrics, as a finding shows them."""
    shown = ", ".join(f"{k} {v:g}" for k, v in sorted(values.items()))
    return shown if len(shown) <= 200 else shown[:199] + "…"
