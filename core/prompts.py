"""The judge prompts of a run, kept once per distinct prompt (``prompts.jsonl``) and named by ``prompt_hash`` in a
judge reply's evidence."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Sequence

PROMPT_HASH_CHARS = 16
"""Hex characters of a prompt hash (the first 64 bits of its SHA-256)."""


def prompt_hash(
    messages: Sequence[dict[str, Any]],
    response_format: dict[str, Any] | None = None,
    tools: Sequence[dict[str, Any]] | None = None,
    tool_choice: Any = None,
) -> str:
    """The hash naming a prompt: SHA-256 of its canonical JSON (keys sorted, no spaces, UTF-8), first
    :data:`PROMPT_HASH_CHARS` hex characters; ``tools`` and ``tool_choice`` count only when given.

    Args:
        messages: the messages as sent (OpenAI chat format).
        response_format: the ``response_format`` of a native structured-output call as sent, or None.
        tools: the tool definitions as the provider received them; None or [] without tools.
        tool_choice: the ``tool_choice`` as sent, or None.

    Returns:
        A lower-case hex string; equal prompts give equal hashes.
    """
    return prompt_record(messages, response_format, tools, tool_choice)["hash"]


def prompt_record(
    messages: Sequence[dict[str, Any]],
    response_format: dict[str, Any] | None = None,
    tools: Sequence[dict[str, Any]] | None = None,
    tool_choice: Any = None,
) -> dict[str, Any]:
    """One line of ``prompts.jsonl``: ``{"hash", "messages", "response_format"?, "tools"?, "tool_choice"?}``.

    Args:
        messages: as :func:`prompt_hash`.
        response_format: as :func:`prompt_hash`.
        tools: as :func:`prompt_hash`.
        tool_choice: as :func:`prompt_hash`.

    Returns:
        The record as a JSON-ready dict.
    """
    body: dict[str, Any] = {"messages": [dict(m) for m in messages], "response_format": response_format}
    if tools:
        body["tools"] = [dict(t) for t in tools]
    if tool_choice is not None:
        body["tool_choice"] = tool_choice
    data = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    digest = hashlib.sha256(data.encode("utf-8")).hexdigest()[:PROMPT_HASH_CHARS]
    return {"hash": digest, **{k: v for k, v in body.items() if v is not None}}
