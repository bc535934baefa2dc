"""The judge prompts of a run, kept once per distinct prompt (``prompts.jsonl``): a judge reply's evidence names its
prompt by ``prompt_hash``; the run store writes the prompt as sent (messages, tool definitions, response format) once
per hash, however many judges or resumes ask it."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Sequence

__all__ = ["PROMPT_HASH_CHARS", "prompt_hash", "prompt_record"]

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
        messages: the messages as sent, ``[{"role": "system"|"user"|"assistant"|"tool", "content": str | list,
            ...}, ...]`` (an assistant turn with its ``tool_calls``, a tool turn with its ``tool_call_id``).
        response_format: the ``response_format`` of a native structured-output call as sent (``{"type":
            "json_schema", "json_schema": {"name", "schema", ...}}``), or None for a plain prompt.
        tools: the tool definitions as the provider received them (OpenAI: ``[{"type": "function", "function":
            {"name", "description", "parameters"}}, ...]``); None or [] without tools.
        tool_choice: the ``tool_choice`` as sent (``{"type": "function", "function": {"name": ...}}``), or None.

    Returns:
        A lower-case hex string of :data:`PROMPT_HASH_CHARS` characters; equal prompts give equal hashes.
    """
    body: dict[str, Any] = {"messages": list(messages), "response_format": response_format}
    if tools:
        body["tools"] = list(tools)
    if tool_choice is not None:
        body["tool_choice"] = tool_choice
    data = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:PROMPT_HASH_CHARS]


def prompt_record(
    messages: Sequence[dict[str, Any]],
    response_format: dict[str, Any] | None = None,
    tools: Sequence[dict[str, Any]] | None = None,
    tool_choice: Any = None,
) -> dict[str, Any]:
    """One line of ``prompts.jsonl``: ``{"hash", "messages", "response_format", "tools", "tool_choice"}`` (the last
    three only when given or non-empty), hashed by :func:`prompt_hash`.

    Args:
        messages: as :func:`prompt_hash`.
        response_format: as :func:`prompt_hash`.
        tools: as :func:`prompt_hash`.
        tool_choice: as :func:`prompt_hash`.

    Returns:
        The record as a JSON-ready dict.
    """
    out: dict[str, Any] = {
        "hash": prompt_hash(messages, response_format, tools, tool_choice),
        "messages": [dict(m) for m in messages],
    }
    if response_format is not None:
        out["response_format"] = response_format
    if tools:
        out["tools"] = [dict(t) for t in tools]
    if tool_choice is not None:
        out["tool_choice"] = tool_choice
    return out
