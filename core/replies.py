"""Pure functions reading a model's reply before any answer is extracted (METRICS.md D.8, D.10, D.17): reasoning apart
from the final text, reply statuses, and a judge's refusal, verdict word and score field read strictly."""

from __future__ import annotations

import math
import re
import unicodedata

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"

TRUNCATED_FINISH_REASONS = frozenset({"length", "max_tokens", "model_length"})
"""``finish_reason`` values of a reply cut by the token limit (``length``, Anthropic ``max_tokens``)."""


def split_reasoning(text: str | None) -> tuple[str | None, str]:
    """``(reasoning, final)`` of a reply (METRICS.md D.8): ``final`` is the text after the last ``</think>`` (``""``
    with only ``<think>``: stopped while reasoning), ``reasoning`` the text before it without its ``<think>``; neither
    tag: ``(None, text)``.

    Args:
        text: a reply text.

    Returns:
        ``(reasoning or None, final)``.
    """
    if text is None:
        return None, ""
    end = text.rfind(THINK_CLOSE)
    if end >= 0:
        head = text[:end]
        start = head.find(THINK_OPEN)
        if start >= 0 and not head[:start].strip():
            head = head[start + len(THINK_OPEN) :]
        return head.strip(), text[end + len(THINK_CLOSE) :].lstrip()
    start = text.rfind(THINK_OPEN)
    if start >= 0:
        return text[start + len(THINK_OPEN) :].strip(), ""
    return None, text


def final_text(text: str | None) -> str:
    """The part of a reply answer extractors read (D.8): after the last ``</think>``; ``""`` if unclosed; else ``text``.

    Args:
        text: a reply text.

    Returns:
        The final text.
    """
    return split_reasoning(text)[1]


def join_reasoning(*parts: str | None) -> str | None:
    """The non-empty reasoning parts joined by a blank line.

    Args:
        parts: reasoning texts.

    Returns:
        The joined text, or None when every part is empty.
    """
    kept = [p.strip() for p in parts if p and p.strip()]
    return "\n\n".join(kept) if kept else None


def reply_status(finish_reason: str | None, final: str, *, has_tool_calls: bool = False) -> str:
    """The reply's status (METRICS.md D.10).

    Args:
        finish_reason: the provider's finish reason.
        final: the final text (after D.8).
        has_tool_calls: the reply calls tools.

    Returns:
        ``"truncated"`` (cut by the token limit), ``"empty"`` (blank final text, no tool calls) or ``"ok"``.
    """
    if finish_reason is not None and str(finish_reason).lower() in TRUNCATED_FINISH_REASONS:
        return "truncated"
    if not (final or "").strip() and not has_tool_calls:
        return "empty"
    return "ok"


def refusal_text(msg: object) -> str | None:
    """The refusal a provider returned instead of an answer (METRICS.md D.17): OpenAI's ``refusal`` field or content
    block, or a ``refusal`` stop/finish reason (Anthropic: the content).

    Args:
        msg: a reply message.

    Returns:
        The refusal text, or None.
    """
    extra = getattr(msg, "additional_kwargs", None) or {}
    got = extra.get("refusal") if isinstance(extra, dict) else None
    if isinstance(got, str) and got.strip():
        return got.strip()
    content = getattr(msg, "content", None)
    if isinstance(content, list):
        for b in content:
            if isinstance(b, dict) and b.get("type") == "refusal":
                return str(b.get("refusal") or b.get("text") or "").strip()
    meta = getattr(msg, "response_metadata", None) or {}
    if isinstance(meta, dict) and "refusal" in (str(meta.get("stop_reason")), str(meta.get("finish_reason"))):
        return content.strip() if isinstance(content, str) else ""
    return None


def verdict_word(value: object) -> object:
    """A judge's verdict word as compared (METRICS.md D.12, D.17).

    Args:
        value: the judge's verdict field.

    Returns:
        Stripped, case-folded, trailing punctuation removed; a non-string as it is.
    """
    if not isinstance(value, str):
        return value
    t = value.strip().casefold()
    while t and unicodedata.category(t[-1]).startswith("P") and t[-1] not in ")]}\"'":
        t = t[:-1].rstrip()
    return t


_NUMERIC_TEXT = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def judge_number(value: object, *, integer: bool) -> int | float:
    """A judge's score field, strictly (METRICS.md D.4, D.17): a number or a string that is exactly one; never coerced.

    Args:
        value: the judge's field.
        integer: an integer is required.

    Returns:
        The number.

    Raises:
        ValueError: anything else, naming the value.
    """
    v = value
    if isinstance(v, bool) or v is None or not isinstance(v, (int, float, str)):
        kind = "the boolean" if isinstance(v, bool) else "null" if v is None else f"a {type(v).__name__}"
        raise ValueError(f"score must be a number, got {kind} {value!r}")
    if isinstance(v, str):
        t = v.strip()
        if not _NUMERIC_TEXT.fullmatch(t):
            raise ValueError(f"score must be a number, got the string {value!r}")
        v = float(t) if any(c in t for c in ".eE") else int(t)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"score must be a finite number, got {value!r}")
        if integer:
            if not v.is_integer():
                raise ValueError(f"score must be an integer, got the decimal {value!r}")
            return int(v)
    return v
