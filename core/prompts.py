"""The judge prompts of a run, kept once per distinct prompt (``prompts.jsonl`` in the run folder).

A judge reply's evidence (:class:`~sgieval.core.JudgeReplyEvidence`) names the prompt it answered by
``prompt_hash``; the prompt itself, the messages exactly as sent and, for a native structured call, the
response format, is written once per hash by the run store, so a run that asks the same prompt of several
judges, or again on resume, stores it once.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Sequence

__all__ = ["PROMPT_HASH_CHARS", "prompt_hash", "prompt_record"]

PROMPT_HASH_CHARS = 16
"""Hex characters of a prompt hash (the first 64 bits of its SHA-256)."""


def prompt_hash(messages: Sequence[dict[str, Any]], response_format: dict[str, Any] | None = None) -> str:
    """The hash naming a prompt: SHA-256 of its canonical JSON (keys sorted, no spaces, UTF-8), first
    :data:`PROMPT_HASH_CHARS` hex characters.

    Args:
        messages: the messages as sent, ``[{"role": "system"|"user"|"assistant", "content": str | list}, ...]``.
        response_format: the native structured-output format sent with them (``{"mode": "json_schema"|
            "function_calling", "name": schema name, "schema": JSON schema}``), or None for a plain prompt.

    Returns:
        A lower-case hex string of :data:`PROMPT_HASH_CHARS` characters; equal prompts give equal hashes.
    """
    body = {"messages": list(messages), "response_format": response_format}
    data = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:PROMPT_HASH_CHARS]


def prompt_record(messages: Sequence[dict[str, Any]], response_format: dict[str, Any] | None = None) -> dict[str, Any]:
    """One line of ``prompts.jsonl``: ``{"hash", "messages", "response_format"}`` (``response_format``
    only when given), the hash by :func:`prompt_hash`.

    Args:
        messages: as :func:`prompt_hash`.
        response_format: as :func:`prompt_hash`.

    Returns:
        The record as a JSON-ready dict.
    """
    out: dict[str, Any] = {"hash": prompt_hash(messages, response_format), "messages": [dict(m) for m in messages]}
    if response_format is not None:
        out["response_format"] = response_format
    return out
