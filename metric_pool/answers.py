"""Reading answers out of final reply text (callers pass the text after the reasoning, D.8): :func:`normalised_match`
(METRICS.md D.11), :func:`parse_number` / :func:`last_number` (``numeric_match``) and :func:`answer_line_letter` (D.9)."""

from __future__ import annotations

import decimal
import re
import unicodedata
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

_DASHES = dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"), "-")
_WS = re.compile(r"\s+")


def normalise_text(text: str) -> str:
    """D.11 text normalisation: Unicode NFKC (a decomposed ``A`` + combining ring and the angstrom sign both become
    ``Å``; full-width digits become ASCII), every dash or minus sign to ``-``, whitespace runs to one space, stripped,
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
    """The number ``text`` writes, or None (D.11). After :func:`normalise_text` and removing currency symbols: a plain
    decimal (``29.00``, ``-1e5``, ``.5``), one with thousands separators (``1,250``, ``1 250``, ``12,345.6``), ``m ×
    10^e`` (also ``x``, ``*``, ``\\times``, ``^{e}``, ``**e``) and a bare ``10^e`` -> Decimal; ``p/q`` -> Fraction
    (``q`` > 0). The whole text must be the number (``0.25 mg`` is None). Non-finite values are None."""
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


def _places(d: Decimal) -> int:
    return -int(d.as_tuple().exponent)


def _to_decimal(x: Decimal | Fraction) -> Decimal:
    if isinstance(x, Decimal):
        return x
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        return Decimal(x.numerator) / Decimal(x.denominator)


def numbers_equal(reference: Decimal | Fraction, prediction: Decimal | Fraction) -> bool:
    """D.11 number equality: a decimal reference rounds both numbers half-up to the reference's decimal places as
    written (``29`` -> 0 places, so ``29.00`` and ``29.4`` match, ``29.5`` does not; ``1e5`` -> to the
    hundred-thousand); a fraction reference must equal the prediction exactly."""
    if isinstance(reference, Fraction):
        p = prediction if isinstance(prediction, Fraction) else Fraction(prediction)
        return p == reference
    quantum = Decimal(1).scaleb(-_places(reference))
    with decimal.localcontext() as ctx:
        ctx.prec = 200
        try:
            return _to_decimal(prediction).quantize(quantum, rounding=ROUND_HALF_UP) == reference.quantize(
                quantum, rounding=ROUND_HALF_UP
            )
        except decimal.InvalidOperation:
            return False


def normalised_match(reference: str, prediction: str) -> bool:
    """True when ``prediction`` matches ``reference`` under D.11: equal after :func:`normalise_text`, or both are
    numbers (:func:`parse_number`) that are equal under :func:`numbers_equal`.  Units are not converted (``0.25 mg`` vs
    ``0.25`` is False)."""
    r, p = normalise_text(reference), normalise_text(prediction)
    if r == p:
        return True
    rn, pn = parse_number(reference), parse_number(prediction)
    return rn is not None and pn is not None and numbers_equal(rn, pn)


_NUMBER_IN_TEXT = re.compile(
    r"[+-]?10\s*(?:\^|\*\*)\s*\{?\s*[+-]?\d+\s*\}?(?!\d|\.\d)"
    r"|[+-]?(?:\d{1,3}(?:,\d{3})+|\d+\.?\d*|\.\d+)(?:\.\d+)?"
    r"(?:\s*(?:×|x|\*|\\times|·|\\cdot)\s*10\s*(?:\^|\*\*)\s*\{?\s*[+-]?\d+\s*\}?|e[+-]?\d+)?"
    r"(?:\s*/\s*\d+(?!\d|\.\d))?"
)
_EXPONENT_BEFORE = re.compile(r"(?:\^|\^\{|\^\(|(?<=[\w)\]])\s*\*\*)\s*$")


def _numbers_in(t: str) -> list[tuple[int, Decimal | Fraction]]:
    """(position, value) of every number in normalised ``t``, skipping exponents (``^``, ``10**5``) and numbers glued to
    a letter (``s^-1``, ``km2``, ``CO2``)."""
    out = []
    for m in _NUMBER_IN_TEXT.finditer(t):
        before = t[: m.start()]
        if _EXPONENT_BEFORE.search(before) or (before and before[-1].isalpha()):
            continue
        n = parse_number(m.group(0))
        if n is not None:
            out.append((m.start(), n))
    return out


def last_number(text: str) -> Decimal | Fraction | None:
    """The last number written in ``text``, or None. Scans the normalised text without currency symbols for decimals
    (with thousands commas, exponents, ``× 10^e`` forms) and fractions ``p/q`` (``i.e. 1/2.`` reads 1/2: a sentence's
    full stop is not a decimal point); exponents and numbers glued to a unit or symbol are not values
    (:func:`_numbers_in`: ``3.0e-4 s^-1`` -> 3.0e-4, ``6.02 × 10^23 mol⁻¹`` -> 6.02e23); returns the value of the last
    one (``"about $1,250.5 in total"`` -> 1250.5; ``"x = 3, so 2x = 6"`` -> 6)."""
    found = _numbers_in(_strip_currency(normalise_text(text)))
    return found[-1][1] if found else None


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


BOXED = "\\boxed{"


def boxed_spans(text: str) -> list[tuple[int, str]]:
    """``(position, content)`` of every ``\\boxed{...}`` in ``text``, in order, with balanced braces
    (``\\boxed{\\text{B}}`` -> ``\\text{B}``); an unclosed box is skipped."""
    out = []
    start = text.find(BOXED)
    while start >= 0:
        k = start + len(BOXED)
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
        start = text.find(BOXED, start + 1)
    return out


NEXT_TURN = re.compile(
    r"^[ \t>*#]*(?:question|q|problem|human|user)\s*\d*\s*(?:\*\*)?\s*[:：]", re.IGNORECASE | re.MULTILINE
)
"""A line that opens a new turn the model wrote for itself (``Question:``, ``Q:``, ``Problem 2:``, ``Human:``,
``User:``)."""
_HASHES = re.compile(r"####[ \t]*(.*)$", re.MULTILINE)
_ANSWER_LINE_MARK = re.compile(
    r"^[ \t>*#-]*(?:\*\*)?(?:final\s+)?answer\s*(?:\*\*)?\s*[:：]\s*(.*)$", re.IGNORECASE | re.MULTILINE
)
"""A line that starts with ``Answer:`` / ``Final answer:`` (after list or emphasis marks)."""
_ANSWER_PHRASE = re.compile(r"(?:final\s+answer|the\s+answer)(?:\s+is)?\s*[:：]?\s*(.*)$", re.IGNORECASE | re.MULTILINE)
"""``the answer is N`` / ``final answer: N`` inside a sentence: a marker only when a number follows at once."""


def cut_next_turn(text: str) -> str:
    """``text`` up to a turn the model went on to write for itself. Cut at the first :data:`NEXT_TURN` line that follows
    a number (a ``Question:`` restating the question before any number is kept), and right after the line of the first
    ``####`` answer (a later ``####`` belongs to a new turn): ``"... #### 1000\n\nQuestion: ...\n#### 37.5"`` -> ``"...
    #### 1000"``."""
    t = text or ""
    for m in NEXT_TURN.finditer(t):
        if _numbers_in(_strip_currency(normalise_text(t[: m.start()]))):
            t = t[: m.start()]
            break
    h = _HASHES.search(t)
    if h is not None:
        t = t[: h.end()]
    return t


def numeric_answer(text: str) -> tuple[Decimal | Fraction | None, str]:
    """``(number, how it was found)`` of a reply's final answer (``numeric_match``). The reply is cut at a
    self-generated next turn (:func:`cut_next_turn`). An explicit final-answer marker then wins: the last of
    ``<answer>...</answer>``, ``#### N``, a ``\\boxed{...}``, a line starting ``Answer:`` / ``Final answer:``, whose
    content holds a number (:func:`_marker_number`), or a ``the answer is N`` / ``final answer: N`` phrase followed at
    once by a number. Without a marker holding a number, the last number of the cut text (:func:`last_number`). ``(None,
    reason)`` when there is none; a marker without any number (``Answer: I don't know``) is no answer."""
    from .sgi.common import extract_answer_tag

    t = cut_next_turn(text or "")
    marks: list[tuple[int, str, str]] = []  # (position, kind, content)
    tagged = extract_answer_tag(t)
    if tagged is not None:
        marks.append((t.rfind("<answer>"), "<answer> tag", tagged))
    for m in _HASHES.finditer(t):
        marks.append((m.start(), "#### line", m.group(1)))
    for at, box in boxed_spans(t):
        marks.append((at, "\\boxed{}", box))
    for m in _ANSWER_LINE_MARK.finditer(t):
        marks.append((m.start(), "answer line", m.group(1)))
    for m in _ANSWER_PHRASE.finditer(t):
        if _marker_number(m.group(1), leading_only=True) is not None:
            marks.append((m.start(), "answer phrase", m.group(1)))
    if marks:
        for _pos, kind, content in sorted(marks, key=lambda x: x[0], reverse=True):
            n = _marker_number(content, leading_only=kind == "answer phrase")
            if n is not None:
                return n, kind
        return None, "a final-answer marker without a number"
    n = last_number(t)
    return (n, "last number") if n is not None else (None, "no number found")


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
    """One option letter from ``value`` after removing a trailing period and ``$X$``, ``**X**``, ``*X*``, ``_X_``,
    ``(X)``, ``[X]``, ``\\text{X}`` wrappers (in any nesting: ``*B*.`` -> B), or None when anything else is left
    (``I don't know``, ``B and C``): the letter must stand alone (D.9)."""
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
    """D.9: the letter of a final ``ANSWER: X`` line (the last non-empty line; any case of ``answer``, optional ``**``
    around it, ``$X$`` / ``**X**`` / ``*X*`` / ``_X_`` / ``(X)`` wrappers, trailing period).  The letter must stand
    alone: ``ANSWER: I don't know`` is no answer (None), not option I."""
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
