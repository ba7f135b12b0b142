"""What a conclusion's text says about the threshold: a reading of words, one table per
language (English, French, German, Spanish, Chinese). It advises — ``meets_threshold``
against the recomputed metrics decides the conclusion — except :func:`plainly_meets`, the one
exact reading: a sentence that names one run alone as meeting the threshold, with no
negation, hedge or question in it (``conclusion-consistent.named-unlisted`` when the list
does not hold the run).

The readings, from loosest to strictest:

- :func:`states_negative`: the text states a negative result (no variant meets it);
- :func:`claims_meeting` / :func:`claims_failing`: a clause naming the run says it meets /
  does not meet the threshold (a negation governs the verb or the threshold word when it is
  at most four words before it — after it too, for German ``nicht``);
- :func:`says_none_meets`: the text says no variant at all meets it;
- :func:`plainly_meets`: exact, see above.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pytest_itera.checks.prose.quotes import SENTENCE_END, mentions, numbers_in

__all__ = ["Threshold", "claims_failing", "claims_meeting", "clauses", "plainly_meets",
           "says_none_meets", "sentences", "states_negative"]


@dataclass(frozen=True)
class Threshold:
    """The plan's decision rule, for the numeric readings ("0.83 versus a threshold of
    0.85")."""

    value: float
    higher: bool  # higher is better

    def met_by(self, value: float) -> bool:
        return value >= self.value if self.higher else value <= self.value


# One table per language: the words for "meets", "reaches/exceeds" (which need a threshold
# word nearby), the threshold itself, negations, "below/short of" (a denial beside a
# threshold word), a negative result, "no variant meets it", contrast words (a clause ends),
# hedges (a sentence that is no plain statement), and negations that negate nothing here.
_MEET = (r"meets?|met|meeting|satisf(?:y|ies|ied|ying)|qualif(?:y|ies|ied)|"  # en
         r"satisfai\w*|remplit|remplissent|atteint|atteignent|atteindre|respecte\w*|"  # fr
         r"erreicht\w*|erf[üu]ll\w*|"  # de
         r"cumple\w*|alcanza\w*|alcanz[oó]|satisface\w*")  # es
_ACHIEVE = (r"reach(?:es|ed|ing)?|pass(?:es|ed|ing)?|beats?|beaten|clears?|cleared|"
            r"achieves?|achieved|tops?|franchi\w*|[üu]bertr\w*|bestanden|supera\w*|super[oó]")
# Above and below: which one meets depends on the decision's direction.
_UP = (r"above|over|exceed(?:s|ed|ing)?|surpass(?:es|ed)?|higher|"
       r"d[ée]pass\w*|au-dessus|sup[ée]rieure?s?|"
       r"[üu]berschr\w*|[üu]ber|oberhalb|h[öo]her|"
       r"encima|sobrepas\w*|mayor|superior\w*")
_DOWN = (r"below|under|beneath|lower|"
         r"sous|dessous|inf[ée]rieure?s?|"
         r"unter\w*|niedriger|"
         r"debajo|menor|inferior\w*")
_THRESHOLD = (r"thresholds?|targets?|bar|criteri(?:on|a)|cut-?off|goal|"
              r"seuils?|objectifs?|cibles?|crit[eè]res?|barre|"
              r"schwell\w*|grenzwert\w*|zielwert\w*|ziel|kriteri\w*|"
              r"umbral\w*|objetivos?|meta|criterios?|l[íi]mite")
# The words plainly_meets takes for the decision's threshold: not "target" or "goal" (a step
# target, a budget goal are ones too).
_EXACT_THRESHOLD = (r"thresholds?|bar|cut-?off|seuils?|schwell\w*|grenzwert\w*|umbral\w*")
_NEGATION = (r"no|not|none|neither|nor|never|nothing|without|cannot|can't|doesn't|don't|"
             r"didn't|isn't|wasn't|won't|fails?|failed|failing|"
             r"ne|n|pas|aucune?|jamais|ni|sans|"
             r"nicht|kein\w*|nie|niemals|weder|ohne|"
             r"ninguna?|ningún|nunca|tampoco|sin")
_SHORT = (r"short|shy|miss(?:es|ed|ing)?|insufficient|lacks?|behind|"
          r"[ée]choue\w*|manque\w*|"
          r"verfehl\w*|scheiter\w*|"
          r"falla\w*|fall[oó]")
_CONTRAST = (r"but|however|whereas|although|though|while|yet|except|unlike|"
             r"mais|cependant|toutefois|alors que|tandis que|bien que|sauf|contrairement|"
             r"aber|jedoch|w[äa]hrend|obwohl|doch|sondern|au[ßs]er|im gegensatz|"
             r"pero|sin embargo|mientras|aunque|excepto|salvo|a diferencia")
_HEDGE = (r"if|would|could|might|may|should|expect\w*|hope\w*|likely|probably|perhaps|"
          r"maybe|whether|si|serait|pourrait|devrait|peut-être|probablement|"
          r"wenn|falls|würde\w*|könnte\w*|sollte\w*|vielleicht|wahrscheinlich|ob|"
          r"podr[íi]a\w*|deber[íi]a\w*|quiz[áa]s?|tal vez|probablemente")
_NOT_NEGATING = re.compile(
    r"\b(?:not\s+only|not\s+just|no\s+(?:other|regressions?|extra|additional|loss|drop|"
    r"degradation|increase|change)|non\s+seulement|pas\s+seulement|sans\s+(?:r[ée]gression|"
    r"co[uû]t|surco[uû]t|perte)|aucune?\s+(?:autre|r[ée]gression)|nicht\s+nur|keine?\s+"
    r"(?:andere\w*|regression\w*|zus[äa]tzlich\w*)|ohne\s+(?:regression|zus[äa]tzlich\w*|"
    r"mehrkosten)|no\s+s[óo]lo|ninguna?\s+otra|sin\s+(?:regresi[óo]n|coste|costo|"
    r"p[ée]rdida)|with\s+no)\b", re.I)
_NEGATIVE_RESULT = re.compile(
    r"\bnegative\s+(?:result|outcome|finding|answer|conclusion)\b|"
    r"\b(?:result|outcome|answer|conclusion)\s+is\s+negative\b|"
    r"r[ée]sultat\s+(?:est\s+)?n[ée]gatif|\bn[ée]gatif\b|"
    r"negative[sn]?\s+ergebnis|ergebnis\s+ist\s+negativ|"
    r"resultado\s+(?:es\s+)?negativo|"
    r"阴性结果|负面结果|否定(?:的)?结果|结果为阴性|结论为否定", re.I)
_NONE_MEETS = re.compile(
    rf"\bnegative\s+result\b|r[ée]sultat\s+n[ée]gatif|negatives\s+ergebnis|"
    rf"resultado\s+negativo|"
    rf"\bno\s+(?!other\b)(?:\w+\s+)?variants?\s+(?:\w+\s+)?(?:{_MEET}|{_ACHIEVE})\b|"
    rf"\bnone\s+of\s+the\s+(?:\w+\s+)?variants\b|\bneither\s+variant\b|"
    rf"\baucune\s+(?:des\s+)?(?:\w+\s+)?variantes?\b|"
    rf"\bkeine\s+(?:der\s+)?(?:\w+\s+)?varianten?\b|"
    rf"\bninguna\s+(?:de\s+las\s+)?(?:\w+\s+)?variantes?\b|"
    r"没有(?:任何)?(?:一个)?变体|所有变体(?:均|都)(?:未|没有)|无一变体|(?:均|都)未达到", re.I)

# Chinese is not written in words: its readings are patterns of characters.
_ZH_MEET = re.compile(r"(?:达到|超过|超出|满足|高于|达标|通过)")
_ZH_THRESHOLD = re.compile(r"(?:阈值|门槛|标准|目标|界限)")
_ZH_DENY = re.compile(r"(?:未|没有|没|不|无法|未能)(?:能|曾)?.{0,3}?(?:达到|超过|满足|达标|通过)|"
                      r"低于.{0,8}?(?:阈值|门槛|标准|目标)|(?:阈值|门槛|标准|目标).{0,4}?以下")
_ZH_NEGATION = re.compile(r"未|没有|没|不|无|非")
_ZH_HEDGE = re.compile(r"如果|若|可能|也许|或许|是否|应该|预计|希望")
_ZH_CONTRAST = re.compile(r"但是|但|然而|而|虽然|尽管|除了|不过")

_PRONOUN = re.compile(
    r"\b(?:meets?|met|satisf\w*|reach\w*|exceed\w*|pass\w*|clears?|beats?)\s+it\b|"
    r"\bl['\u2019](?:atteint|atteignent|d[ée]pass\w*|franchi\w*|satisfai\w*)|"
    r"\b(?:lo|la)\s+(?:alcanza|supera|cumple|satisface)\w*|"
    r"\b(?:erreicht|erreichen|[üu]bertrifft|[üu]berschreitet|erf[üu]llt)\s+(?:sie|ihn|es)\b",
    re.I)
# A target that is no threshold: of steps, of a budget, of a deadline ("its step target",
# "训练目标步数").
_OTHER_TARGET = re.compile(
    r"\b(?:steps?|budget|time|training|deadline|cost|token|epoch|data)\s+(?:targets?|goals?)\b|"
    r"\b(?:targets?|goals?)\s+(?:of|for)\s+(?:\d+\s+)?(?:steps?|epochs?|tokens?|hours?)\b|"
    r"目标步数|训练目标|预算目标|objectif\s+(?:de\s+)?(?:budget|temps|pas)|"
    r"(?:Schritt|Budget|Zeit)ziel\w*|objetivo\s+de\s+(?:pasos|presupuesto|tiempo)", re.I)


def _unthreshold(text: str) -> str:
    return _OTHER_TARGET.sub(" ", text)


_WORD = re.compile(r"[^\W\d_]+(?:['\u2019-][^\W\d_]+)*", re.U)
_ZH_UP = re.compile(r"高于|超过|超出|以上")
_ZH_DOWN = re.compile(r"低于|以下|不足")


def _words(pattern: str) -> re.Pattern[str]:
    return re.compile(rf"(?:{pattern})", re.I)


_MEET_W, _ACHIEVE_W, _THRESHOLD_W = _words(_MEET), _words(_ACHIEVE), _words(_THRESHOLD)
_EXACT_THRESHOLD_W = _words(_EXACT_THRESHOLD)
_ZH_EXACT_THRESHOLD = re.compile(r"阈值|门槛")
# "Out of reach", "hors d'atteinte": a denial in a phrase.
_DENIAL_PHRASE = re.compile(
    r"\bout\s+of\s+reach\b|\bhors\s+d['\u2019]atteinte\b|\bau[ßs]er\s+reichweite\b|"
    r"\bunerreich\w*|\bfuera\s+de\s+(?:su\s+)?alcance\b|\bfalls\s+short\b|"
    r"\bnot\s+(?:quite\s+)?there\b|可望而不可及", re.I)
# "0.75 < 0.8", "1.00 ≥ 0.8": a comparison written with its sign.
_COMPARED = re.compile(r"([+\-\u2212]?\d+(?:[.,]\d+)?)\s*(<=|>=|≤|≥|<|>)\s*"
                       r"([+\-\u2212]?\d+(?:[.,]\d+)?)")
_UP_W, _DOWN_W = _words(_UP), _words(_DOWN)
_NEGATION_W, _SHORT_W, _HEDGE_W = _words(_NEGATION), _words(_SHORT), _words(_HEDGE)
_CONTRAST_SPLIT = re.compile(rf"\b(?:{_CONTRAST})\b|{_ZH_CONTRAST.pattern}", re.I)
_WINDOW = 4
_HIGHER = Threshold(0.0, True)


def _ended(text: str) -> list[tuple[str, str]]:
    """Each sentence of the text (cut at :data:`SENTENCE_END`) and the mark that ends it ("" at
    the end of the text)."""
    out, start = [], 0
    for end in SENTENCE_END.finditer(text):
        out.append((text[start:end.start()].strip(), end.group(0)))
        start = end.end()
    out.append((text[start:].strip(), ""))
    return [(sentence, mark) for sentence, mark in out if sentence]


def sentences(text: str) -> list[str]:
    """The text cut at sentence ends ("." before a space, "!", "?", ";", a line end, and their
    Chinese forms); a decimal point is no end."""
    return [sentence for sentence, _ in _ended(text)]


_COLON = re.compile(r"\s?:(?=\s|$)|\uff1a")


def clauses(text: str) -> list[str]:
    """The sentences cut again at a colon (a head, then its list) and at contrast words
    ("but", "mais", "aber", "pero", "但"…)."""
    return [c.strip() for s in sentences(text) for part in _COLON.split(s)
            for c in _CONTRAST_SPLIT.split(part) if c and c.strip()]


def _tokens(clause: str) -> list[str]:
    # "n'atteint" is two words: the elision ("ne") and the verb.
    return [w.casefold() for w in _WORD.findall(re.sub(r"\b[nN]['\u2019]", "ne ", clause))]


def _is(pattern: re.Pattern[str], word: str) -> bool:
    return pattern.fullmatch(word) is not None


def _toward(threshold: Threshold | None) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(the words that meet, those that fail) of "above"/"below", in the rule's direction."""
    return (_UP_W, _DOWN_W) if (threshold or _HIGHER).higher else (_DOWN_W, _UP_W)


def _meeting_word(word: str, threshold: Threshold | None) -> bool:
    return _is(_MEET_W, word) or _is(_ACHIEVE_W, word) or _is(_toward(threshold)[0], word)


def _governed(words: Sequence[str], threshold: Threshold | None) -> bool:
    """Does a negation govern a "meets", "reaches", "above" or threshold word: at most four
    words before it (German ``nicht`` after it too)?"""
    targets = [i for i, w in enumerate(words)
               if _meeting_word(w, threshold) or _is(_THRESHOLD_W, w)]
    for i, word in enumerate(words):
        if not _is(_NEGATION_W, word):
            continue
        if any(i < t <= i + _WINDOW for t in targets):
            return True
        if word == "nicht" and any(i - _WINDOW <= t < i for t in targets):
            return True
    return False


def _has(pattern: re.Pattern[str], words: Sequence[str]) -> bool:
    return any(_is(pattern, w) for w in words)


def _threshold_named(clause: str) -> bool:
    return _has(_THRESHOLD_W, _tokens(clause)) or _ZH_THRESHOLD.search(clause) is not None


def _numbers_deny(clause: str, threshold: Threshold | None) -> bool | None:
    """A clause with a threshold word, the threshold's number and one other: does that other
    number fail the threshold (True), meet it (False)? None when it does not say."""
    if threshold is None:
        return None
    for left, _sign, right in _COMPARED.findall(clause):
        a, b = (float(x.replace(",", ".").replace("\u2212", "-")) for x in (left, right))
        if abs(b - threshold.value) < 1e-9 and abs(a - threshold.value) >= 1e-9:
            return not threshold.met_by(a)
        if abs(a - threshold.value) < 1e-9 and abs(b - threshold.value) >= 1e-9:
            return not threshold.met_by(b)
    if not _threshold_named(clause):
        return None
    values = [v for _, v in numbers_in(clause)]
    if not any(abs(v - threshold.value) < 1e-9 for v in values):
        return None
    others = [v for v in values if abs(v - threshold.value) >= 1e-9]
    if len(others) != 1:
        return None
    return not threshold.met_by(others[0])


def _zh_denies(clause: str, threshold: Threshold | None) -> bool:
    if _ZH_DENY.search(clause):
        return (threshold or _HIGHER).higher or not _ZH_DOWN.search(clause)
    failing = _ZH_DOWN if (threshold or _HIGHER).higher else _ZH_UP
    return failing.search(clause) is not None and _ZH_THRESHOLD.search(clause) is not None


def _denies(clause: str, threshold: Threshold | None = None) -> bool:
    """The clause says the threshold is not met."""
    clause = _unthreshold(clause)
    if _zh_denies(clause, threshold):
        return True
    cleaned = _NOT_NEGATING.sub(" ", clause)
    words = _tokens(cleaned)
    if _governed(words, threshold):
        return True
    if _DENIAL_PHRASE.search(cleaned):
        return True
    failing = _toward(threshold)[1]
    shorts = [i for i, w in enumerate(words) if _is(_SHORT_W, w) or _is(failing, w)]
    marks = [i for i, w in enumerate(words) if _is(_THRESHOLD_W, w)]
    if any(0 < t - i <= _WINDOW for i in shorts for t in marks):
        return True  # "below the 0.8 threshold", "shy of the bar"
    if any(0 < i - t <= 2 for i in shorts for t in marks):
        return True  # "the threshold is missed", "le seuil manqué"
    return _numbers_deny(clause, threshold) is True


def _meets(clause: str, threshold: Threshold | None = None) -> bool:
    """The clause says something meets the threshold (whatever negation it holds): a
    "meets"/"reaches"/"above" word with a threshold word, or with "it" standing for one
    ("meets it", "l'atteint", "erreicht ihn", "lo supera")."""
    clause = _unthreshold(clause)
    if _ZH_MEET.search(clause) and _ZH_THRESHOLD.search(clause):
        return True
    words = _tokens(clause)
    verb = _has(_MEET_W, words) or _has(_ACHIEVE_W, words) \
        or _has(_toward(threshold)[0], words)
    if verb and (_has(_THRESHOLD_W, words) or _PRONOUN.search(clause)):
        return True
    return _numbers_deny(clause, threshold) is False


def states_negative(text: str, threshold: Threshold | None = None) -> bool:
    """The text says the threshold is not met (a negative result)."""
    if _NEGATIVE_RESULT.search(text) or says_none_meets(text):
        return True
    return any(_denies(c, threshold) for c in clauses(text))


def says_none_meets(text: str) -> bool:
    """The text says no variant at all meets the threshold."""
    return _NONE_MEETS.search(text) is not None


def claims_meeting(text: str, run_id: str, threshold: Threshold | None = None) -> str | None:
    """The clause naming ``run_id`` that says it meets the threshold (and does not deny it),
    or None."""
    for clause in clauses(text):
        if mentions(clause, run_id) and _meets(clause, threshold) \
                and not _denies(clause, threshold):
            return clause
    return None


def claims_failing(text: str, run_id: str, threshold: Threshold | None = None) -> str | None:
    """The clause naming ``run_id`` that says it does not meet the threshold, or None."""
    for clause in clauses(text):
        if mentions(clause, run_id) and _denies(clause, threshold):
            return clause
    return None


def plainly_meets(text: str, run_id: str, runs: Iterable[str],
                  threshold: Threshold | None = None) -> str | None:
    """Exact: the sentence that names ``run_id`` and no other run, says "meets" ("reaches",
    "above"…) with the word "threshold" ("bar", "seuil", "Schwelle", "umbral", "阈值"), and
    holds no negation, "below"-word, contrast, hedge, question or negative result; None when
    no sentence says it so plainly."""
    others = [r for r in runs if r != run_id]
    for sentence, mark in _ended(text):
        if not mentions(sentence, run_id) or any(mentions(sentence, r) for r in others):
            continue
        if mark in ("?", "\uff1f"):
            continue  # a question is no statement
        if _NEGATIVE_RESULT.search(sentence) or says_none_meets(sentence):
            continue  # the sentence also says no variant meets it: not plain
        sentence = _unthreshold(sentence)
        if _CONTRAST_SPLIT.search(sentence):
            continue
        if _ZH_MEET.search(sentence) and _ZH_EXACT_THRESHOLD.search(sentence):
            if not (_ZH_NEGATION.search(sentence) or _ZH_HEDGE.search(sentence)
                    or _zh_denies(sentence, threshold)):
                return sentence
            continue
        words = _tokens(sentence)
        if not (_has(_EXACT_THRESHOLD_W, words) and (
                _has(_MEET_W, words) or _has(_ACHIEVE_W, words)
                or _has(_toward(threshold)[0], words))):
            continue
        if _DENIAL_PHRASE.search(sentence):
            continue
        failing = _toward(threshold)[1]
        if any(_is(_NEGATION_W, w) or _is(_SHORT_W, w) or _is(_HEDGE_W, w) or _is(failing, w)
               for w in words):
            continue
        if _numbers_deny(sentence, threshold) is True:
            continue
        return sentence
    return None
