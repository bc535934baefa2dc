"""How the report writes numbers, counts and reasons: one place for every table and sentence."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..core import MetricSpec


def fmt(x: float | None, digits: int = 2) -> str:
    """Numbers as the report prints them: integers without decimals, others with ``digits`` decimals; None/NaN "n/a".

    Args:
        x: a number.
        digits: decimals of a non-integer.

    Returns:
        The text.
    """
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if float(x).is_integer():
        return str(int(x))
    return f"{x:.{digits}f}"


def fmt2(x: float | None) -> str:
    """A statistic (mean, CI bound, difference) as the tables print it: always 2 decimals; None/NaN as "n/a".

    Args:
        x: a number.

    Returns:
        The text.
    """
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:.2f}"


def fmt_total(x: float | None, spec: MetricSpec) -> str:
    """A total: an integer for a count metric (unbounded range), else 2 decimals like the means.

    Args:
        x: a total.
        spec: its metric.

    Returns:
        The text.
    """
    return fmt(x) if math.isinf(spec.range[1]) else fmt2(x)


def fmt_p(p: float | None) -> str:
    """A p-value, every one alike: 4 decimals ("0.0012", "0.5625"), "< 0.0001" below that; None as "n/a".

    Args:
        p: a p-value in [0, 1].

    Returns:
        The text.
    """
    if p is None or math.isnan(p):
        return "n/a"
    return "< 0.0001" if p < 0.0001 else f"{p:.4f}"


def count_phrase(n: int, noun: str = "item") -> str:
    """``"1 item"``, ``"3 items"``.

    Args:
        n: the count.
        noun: the noun, singular.

    Returns:
        The phrase.
    """
    return f"{n} {noun}{'' if n == 1 else 's'}"


def ordinal(n: int) -> str:
    """``"1st"``, ``"2nd"``, ``"11th"``, ``"23rd"``.

    Args:
        n: a rank (>= 1).

    Returns:
        The ordinal.
    """
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


REASON_CHARS = 160

_CLOSING = {"(": ")", "[": "]", "{": "}"}


def clip_reason(text: str, width: int = REASON_CHARS) -> str:
    """A failure reason short enough for a table cell: whole when it fits in ``width`` characters, else cut at
    the last word boundary before ``width``, ending in "…" and closing every parenthesis or bracket left open.

    Args:
        text: the reason (one line; whitespace runs count as one space).
        width: the most characters of the reason kept before the "…" (>= 1).

    Returns:
        The reason, e.g. ``"no judge gave a valid reply (openai:gpt-4.1: unparsable…)"``.
    """
    one = " ".join(str(text).split())
    if len(one) <= width:
        return one
    cut = one[: width + 1]
    cut = cut[: cut.rfind(" ")] if " " in cut else one[:width]
    cut = cut.rstrip(" ,;:-([{")
    opened: list[str] = []
    for c in cut:
        if c in _CLOSING:
            opened.append(_CLOSING[c])
        elif opened and c == opened[-1]:
            opened.pop()
    return cut + "…" + "".join(reversed(opened))
