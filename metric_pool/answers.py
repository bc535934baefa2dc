"""Reading answers out of final reply text: normalised text, numbers and option letters.

Pure functions used by the JSONL benchmark's metrics (:mod:`sgieval.metric_pool.generic`):

- :func:`normalise_text` and :func:`normalised_match`: METRICS.md D.11
  (Unicode NFKC, dashes and minus signs to ``-``, whitespace collapsed,
  case-folded; numbers compared as numbers after removing currency symbols and
  thousands separators, ``1/2`` and ``6.02 × 10^23`` forms included, rounded
  half-up to the reference's decimal places);
- :func:`parse_number` / :func:`last_number`: one number, or the last number
  in a text (``numeric_match``);
- :func:`answer_line_letter`: METRICS.md D.9, a final ``ANSWER: X`` line.

Every function reads the text it is given; callers pass the final text
after the reasoning (D.8).
"""

from __future__ import annotations

import decimal
import re
import unicodedata
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

_DASHES = dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"), "-")
_WS = re.compile(r"\s+")


def normalise_text(text: str) -> str:
    """D.11 text normalisation: Unicode NFKC (a decomposed ``A`` + combining ring
    and the angstrom sign both become ``Å``; full-width digits become ASCII),
    every dash or minus sign to ``-``, whitespace runs to one space, stripped,
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


def parse_number(text: str) -> Decimal | Fraction | None:
    """The number ``text`` writes, or None (D.11).

    After :func:`normalise_text` and removing currency symbols: a plain decimal
    (``29.00``, ``-1e5``, ``.5``), one with thousands separators (``1,250``,
    ``1 250``, ``12,345.6``), ``m × 10^e`` (also ``x``, ``*``, ``\\times``,
    ``^{e}``, ``**e``) -> Decimal; ``p/q`` -> Fraction (``q`` > 0).  The whole
    text must be the number (``0.25 mg`` is None).  Non-finite values are None."""
    t = _strip_currency(normalise_text(text))
    if not t:
        return None
    if _THOUSANDS.fullmatch(t):
        t = t.replace(",", "").replace(" ", "")
    m = _TIMES_TEN.fullmatch(t)
    if m:
        t = f"{m.group(1)}e{m.group(2)}"
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
    """D.11 number equality: a decimal reference rounds both numbers half-up to
    the reference's decimal places as written (``29`` -> 0 places, so ``29.00``
    and ``29.4`` match, ``29.5`` does not; ``1e5`` -> to the hundred-thousand);
    a fraction reference must equal the prediction exactly."""
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
    """True when ``prediction`` matches ``reference`` under D.11: equal after
    :func:`normalise_text`, or both are numbers (:func:`parse_number`) that are
    equal under :func:`numbers_equal`.  Units are not converted
    (``0.25 mg`` vs ``0.25`` is False)."""
    r, p = normalise_text(reference), normalise_text(prediction)
    if r == p:
        return True
    rn, pn = parse_number(reference), parse_number(prediction)
    return rn is not None and pn is not None and numbers_equal(rn, pn)


_NUMBER_IN_TEXT = re.compile(
    r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+\.?\d*|\.\d+)(?:\.\d+)?"
    r"(?:\s*(?:×|x|\*|\\times|·|\\cdot)\s*10\s*(?:\^|\*\*)\s*\{?\s*[+-]?\d+\s*\}?|e[+-]?\d+)?"
    r"(?:\s*/\s*\d+(?![\d.]))?"
)


def last_number(text: str) -> Decimal | Fraction | None:
    """The last number written in ``text`` (``numeric_match``), or None.

    Scans the normalised text without currency symbols for decimals (with
    thousands commas, exponents, ``× 10^e`` forms) and fractions ``p/q``;
    returns the value of the last one (``"about $1,250.5 in total"`` ->
    1250.5; ``"x = 3, so 2x = 6"`` -> 6)."""
    t = _strip_currency(normalise_text(text))
    found = [m.group(0) for m in _NUMBER_IN_TEXT.finditer(t)]
    for raw in reversed(found):
        n = parse_number(raw)
        if n is not None:
            return n
    return None


def close_enough(reference: Decimal | Fraction, prediction: Decimal | Fraction, rel_tol: float) -> bool:
    """``|p - r| <= rel_tol * |r|`` (exactly equal when ``r`` is 0)."""
    r, p = Fraction(reference), Fraction(prediction)
    return abs(p - r) <= Fraction(rel_tol) * abs(r)


_ANSWER_LINE = re.compile(r"^\s*(?:\*\*)?answer\s*(?:\*\*)?\s*[:：]\s*(?:\*\*(?=\s))?\s*(.*?)\s*$", re.IGNORECASE)


def unwrap_letter(value: str) -> str | None:
    """One option letter from ``value`` after removing a trailing period and
    ``$X$``, ``**X**``, ``(X)`` wrappers (in any nesting), or None when anything
    else is left (``I don't know``, ``B and C``)."""
    t = value.strip()
    for _ in range(4):
        t = t.rstrip(".").strip()
        for a, b in (("$", "$"), ("**", "**"), ("(", ")"), ("\\(", "\\)")):
            if len(t) > len(a) + len(b) - 1 and t.startswith(a) and t.endswith(b):
                t = t[len(a) : len(t) - len(b)].strip()
    return t if re.fullmatch(r"[A-Za-z]", t) else None


def answer_line_letter(text: str) -> str | None:
    """D.9: the letter of a final ``ANSWER: X`` line (the last non-empty line;
    any case of ``answer``, optional ``**`` around it, ``$X$`` / ``**X**`` /
    ``(X)`` wrappers, trailing period).  The letter must stand alone:
    ``ANSWER: I don't know`` is no answer (None), not option I."""
    lines = [ln for ln in (text or "").splitlines() if ln.strip()]
    if not lines:
        return None
    m = _ANSWER_LINE.match(lines[-1])
    if not m:
        return None
    value = m.group(1)
    if lines[-1].lstrip().startswith("**") and value.endswith("**") and not value.startswith("**"):
        value = value[:-2]  # the whole line in bold: **ANSWER: D**
    return unwrap_letter(value)
