"""Reading a model's reply before any answer is extracted from it (METRICS.md D.8, D.10).

Pure functions on reply text, shared by every folder (models keep the reply,
metrics extract answers from it, judges parse it):

- :func:`split_reasoning` separates the reasoning a model wrote inside
  ``<think>...</think>`` from its final text (D.8);
- :func:`final_text` is the text every answer extractor reads;
- :func:`reply_status` turns ``finish_reason`` and the final text into the
  ``truncated`` / ``empty`` statuses of D.10.
"""

from __future__ import annotations

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"

TRUNCATED_FINISH_REASONS = frozenset({"length", "max_tokens", "model_length"})
"""``finish_reason`` values meaning the reply was cut by the token limit
(OpenAI-compatible servers say ``length``; Anthropic says ``max_tokens``)."""


def split_reasoning(text: str | None) -> tuple[str | None, str]:
    """``(reasoning, final)`` of a reply (METRICS.md D.8).

    - ``</think>`` present: ``final`` is the text after the LAST ``</think>``
      with leading whitespace removed; ``reasoning`` is everything before it,
      without one opening ``<think>`` tag, stripped.
    - ``<think>`` present but no ``</think>`` (the model stopped while still
      reasoning): ``final`` is ``""`` (the reply has no answer) and
      ``reasoning`` is the text after the last ``<think>``, stripped.
    - neither tag: ``(None, text)`` unchanged (no stripping).

    Tags are matched case-sensitively.  ``None`` gives ``(None, "")``.

    >>> split_reasoning("<think>B? Wait, no... so D.\\n</think>\\n\\nD")
    ('B? Wait, no... so D.', 'D')
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
    """The part of a reply that answer extractors read (D.8): the text after the
    last ``</think>``; ``""`` for an unclosed ``<think>``; else ``text``."""
    return split_reasoning(text)[1]


def join_reasoning(*parts: str | None) -> str | None:
    """The non-empty parts joined by a blank line, or None when every part is empty
    (a server's separate ``reasoning_content`` first, then the ``<think>`` text)."""
    kept = [p.strip() for p in parts if p and p.strip()]
    return "\n\n".join(kept) if kept else None


def reply_status(finish_reason: str | None, final: str, *, has_tool_calls: bool = False) -> str:
    """``"truncated"`` when ``finish_reason`` says the token limit cut the reply
    (:data:`TRUNCATED_FINISH_REASONS`), else ``"empty"`` when the final text
    (after D.8) is empty or whitespace and the reply has no tool calls, else
    ``"ok"`` (METRICS.md D.10)."""
    if finish_reason is not None and str(finish_reason).lower() in TRUNCATED_FINISH_REASONS:
        return "truncated"
    if not (final or "").strip() and not has_tool_calls:
        return "empty"
    return "ok"
