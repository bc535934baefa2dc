"""Reading answers out of final reply text (after the reasoning, D.8): normalised text and numbers (METRICS.md D.11),
the final numeric answer (``numeric_match``) and the option letter of an answer line (D.9)."""

from __future__ import annotations

import decimal
import re
import unicodedata
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

_DASHES = dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"), "-")
_WS = re.compile(r"\s+")


def normalise_text(text: str) -> str:
    """D.11 text normalisation: Unicode NFKC, every dash or minus sign to ``-``, whitespace runs to one space, stripped,
    case-folded."""
    t = unicodedata.normalize("NFKC", text or "").translate(_DASHES)
    return _WS.sub(" ", t).strip().casefold()


def _strip_currency(t: str) -> str:
    return "".join(ch for ch in t if unicodedata.category(ch) != "Sc").strip()


_PLAIN = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?")
_THOUSANDS = re.compile(r"[+-]?\d{1,3}(?:(?:,\d{3})+|(?: \d{3})+)(?:\.\d+)?")
_TIMES_TEN = re.compile(
    r"([+-]?(?:\d+\.?\d*|\.\d+))\s*(?:×|x|\*|\\times|·|\\cdot)\s*10\s*(?:\^|\*\*)\s*\{?\s*([+-]?\d+)\s*\}?"
)
_FRACTION = re.compile(r"([+-]?\d+)\s*/\s*(\d+)")
_POWER_OF_TEN = re.compile(r"([+-]?)10\s*(?:\^|\*\*)\s*\{?\s*([+-]?\d+)\s*\}?")


def parse_number(text: str) -> Decimal | Fraction | None:
    """The number the whole ``text`` writes, or None (D.11): a decimal (also with thousands separators, ``m × 10^e`` or
    ``10^e``) -> Decimal; ``p/q`` -> Fraction (``q`` > 0).  Currency symbols are dropped; ``0.25 mg`` is None."""
    t = _strip_currency(normalise_text(text))
    if not t:
        return None
    if _THOUSANDS.fullmatch(t):
        t = t.replace(",", "").replace(" ", "")
    m = _TIMES_TEN.fullmatch(t)
    if m:
        t = f"{m.group(1)}e{m.group(2)}"
    m = _POWER_OF_TEN.fullmatch(t)
    if m:
        t = f"{m.group(1)}1e{m.group(2)}"
    m = _FRACTION.fullmatch(t)
    if m:
        q = int(m.group(2))
        return Fraction(int(m.group(1)), q) if q else None
    if not _PLAIN.fullmatch(t):
        return None
    try:
        d = Decimal(t)
    except decimal.InvalidOperation:
        return None
    return d if d.is_finite() else None


def _numbers_equal(reference: Decimal | Fraction, prediction: Decimal | Fraction) -> bool:
    """D.11 number equality: a decimal reference rounds both numbers half-up to its decimal places as written; a
    fraction reference must equal the prediction exactly."""
    if isinstance(reference, Fraction):
        p = prediction if isinstance(prediction, Fraction) else Fraction(prediction)
        return p == reference
    quantum = Decimal(1).scaleb(int(reference.as_tuple().exponent))
    if isinstance(prediction, Fraction):
        with decimal.localcontext(prec=60):
            prediction = Decimal(prediction.numerator) / Decimal(prediction.denominator)
    with decimal.localcontext(prec=200):
        try:
            return prediction.quantize(quantum, rounding=ROUND_HALF_UP) == reference.quantize(
                quantum, rounding=ROUND_HALF_UP
            )
        except decimal.InvalidOperation:
            return False


def normalised_match(reference: str, prediction: str) -> bool:
    """True when ``prediction`` matches ``reference`` under D.11: equal normalised text, or equal numbers (units are
    not converted)."""
    r, p = normalise_text(reference), normalise_text(prediction)
    if r == p:
        return True
    rn, pn = parse_number(reference), parse_number(prediction)
    return rn is not None and pn is not None and _numbers_equal(rn, pn)


_NUMBER_IN_TEXT = re.compile(
    r"[+-]?10\s*(?:\^|\*\*)\s*\{?\s*[+-]?\d+\s*\}?(?!\d|\.\d)"
    r"|[+-]?(?:\d{1,3}(?:,\d{3})+|\d+\.?\d*|\.\d+)(?:\.\d+)?"
    r"(?:\s*(?:×|x|\*|\\times|·|\\cdot)\s*10\s*(?:\^|\*\*)\s*\{?\s*[+-]?\d+\s*\}?|e[+-]?\d+)?"
    r"(?:\s*/\s*\d+(?!\d|\.\d))?"
)
_EXPONENT_BEFORE = re.compile(r"(?:\^|\^\{|\^\(|(?<=[\w)\]])\s*\*\*)\s*$")


def _numbers_in(t: str) -> list[tuple[int, Decimal | Fraction]]:
    """(position, value) of every number in normalised ``t``, skipping exponents and numbers glued to a letter."""
    out = []
    for m in _NUMBER_IN_TEXT.finditer(t):
        before = t[: m.start()]
        if _EXPONENT_BEFORE.search(before) or (before and before[-1].isalpha()):
            continue
        n = parse_number(m.group(0))
        if n is not None:
            out.append((m.start(), n))
    return out


def _marker_number(content: str, *, leading_only: bool = False) -> Decimal | Fraction | None:
    """The number ``content`` starts with (after ``=``, ``~``, ``≈``, ``about``), else its last (not ``leading_only``)."""
    t = _strip_currency(normalise_text(content))
    found = _numbers_in(t)
    if not found:
        return None
    lead = re.match(r"^[\s=~≈:*$({\[]*(?:(?:about|approximately|approx\.?|roughly)\s+)?", t)
    if lead is not None and found[0][0] == lead.end():
        return found[0][1]
    return None if leading_only else found[-1][1]


_BOXED = "\\boxed{"


def boxed_spans(text: str) -> list[tuple[int, str]]:
    """``(position, content)`` of every closed ``\\boxed{...}`` in ``text``, with balanced braces."""
    out = []
    start = text.find(_BOXED)
    while start >= 0:
        k = start + len(_BOXED)
        depth = 1
        j = k
        while j < len(text) and depth:
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
            j += 1
        if depth == 0:
            out.append((start, text[k : j - 1]))
        start = text.find(_BOXED, start + 1)
    return out


_NEXT_TURN = re.compile(
    r"^[ \t>*#]*(?:question|q|problem|human|user)\s*\d*\s*(?:\*\*)?\s*[:：]", re.IGNORECASE | re.MULTILINE
)
_HASHES = re.compile(r"####[ \t]*(.*)$", re.MULTILINE)
_ANSWER_LINE_MARK = re.compile(
    r"^[ \t>*#-]*(?:\*\*)?(?:final\s+)?answer\s*(?:\*\*)?\s*[:：]\s*(.*)$", re.IGNORECASE | re.MULTILINE
)
_ANSWER_PHRASE = re.compile(r"(?:final\s+answer|the\s+answer)(?:\s+is)?\s*[:：]?\s*(.*)$", re.IGNORECASE | re.MULTILINE)


def cut_next_turn(text: str) -> str:
    """``text`` up to a turn the model went on to write for itself: cut at the first ``Question:``-like line after a
    number, and right after the line of the first ``####`` answer."""
    t = text or ""
    for m in _NEXT_TURN.finditer(t):
        if _numbers_in(_strip_currency(normalise_text(t[: m.start()]))):
            t = t[: m.start()]
            break
    h = _HASHES.search(t)
    if h is not None:
        t = t[: h.end()]
    return t


def numeric_answer(text: str) -> tuple[Decimal | Fraction | None, str]:
    """``(number, how it was found)`` of a reply's final answer (``numeric_match``), the reply cut at a self-written
    next turn: the last final-answer marker holding a number (``<answer>``, ``####``, ``\\boxed{}``, an ``Answer:``
    line, a ``the answer is N`` phrase), else the last number; ``(None, reason)`` when there is none."""
    from .sgi.common import extract_answer_tag

    t = cut_next_turn(text or "")
    tagged = extract_answer_tag(t)
    marks: list[tuple[int, str, str]] = [] if tagged is None else [(t.rfind("<answer>"), "<answer> tag", tagged)]
    marks += [(m.start(), "#### line", m.group(1)) for m in _HASHES.finditer(t)]  # (position, kind, content)
    marks += [(at, "\\boxed{}", box) for at, box in boxed_spans(t)]
    marks += [(m.start(), "answer line", m.group(1)) for m in _ANSWER_LINE_MARK.finditer(t)]
    phrases = (m for m in _ANSWER_PHRASE.finditer(t) if _marker_number(m.group(1), leading_only=True) is not None)
    marks += [(m.start(), "answer phrase", m.group(1)) for m in phrases]
    if marks:
        for _pos, kind, content in sorted(marks, key=lambda x: x[0], reverse=True):
            n = _marker_number(content, leading_only=kind == "answer phrase")
            if n is not None:
                return n, kind
        return None, "a final-answer marker without a number"
    found = _numbers_in(_strip_currency(normalise_text(t)))  # no marker: the last number written
    return (found[-1][1], "last number") if found else (None, "no number found")


def close_enough(reference: Decimal | Fraction, prediction: Decimal | Fraction, rel_tol: float) -> bool:
    """``|p - r| <= rel_tol * |r|`` (exactly equal when ``r`` is 0)."""
    r, p = Fraction(reference), Fraction(prediction)
    return abs(p - r) <= Fraction(rel_tol) * abs(r)


_ANSWER_LINE = re.compile(r"^\s*(?:\*\*)?answer\s*(?:\*\*)?\s*[:：]\s*(?:\*\*(?=\s))?\s*(.*?)\s*$", re.IGNORECASE)


_LETTER_WRAPPERS = tuple(
    zip(("$", "**", "__", "*", "_", "(", "[", "\\("), ("$", "**", "__", "*", "_", ")", "]", "\\)"))
)
_TEX_LETTER = re.compile(r"^\\(?:text|textbf|mathrm|mathbf)\s*\{([^{}]*)\}$")


def unwrap_letter(value: str) -> str | None:
    """One option letter from ``value`` after removing a trailing period and wrappers (``$X$``, ``**X**``, ``(X)``,
    ``\\text{X}``...), or None when anything else is left (D.9)."""
    t = value.strip()
    for _ in range(6):
        t = t.rstrip(".").strip()
        m = _TEX_LETTER.match(t)
        if m:
            t = m.group(1).strip()
        for a, b in _LETTER_WRAPPERS:
            if len(t) > len(a) + len(b) - 1 and t.startswith(a) and t.endswith(b):
                t = t[len(a) : len(t) - len(b)].strip()
                break
    return t if re.fullmatch(r"[A-Za-z]", t) else None


def final_line(text: str) -> tuple[int, str] | None:
    """``(position, line)`` of the last non-empty line of ``text``, or None."""
    t = text or ""
    end = len(t.rstrip())
    if end == 0:
        return None
    start = t.rfind("\n", 0, end) + 1
    return start, t[start:end]


def answer_line_letter(text: str) -> str | None:
    """D.9: the letter of a final ``ANSWER: X`` line (any case, optional ``**``, wrappers); None unless it stands
    alone."""
    last = final_line(text)
    if last is None:
        return None
    line = last[1]
    m = _ANSWER_LINE.match(line)
    if not m:
        return None
    value = m.group(1)
    if line.lstrip().startswith("**") and value.endswith("**") and not value.startswith("**"):
        value = value[:-2]  # the whole line in bold: **ANSWER: D**
    return unwrap_letter(value)
