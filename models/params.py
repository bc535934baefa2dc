"""Sampling parameters per role and per model family (DESIGN.md "Models and roles"): what a family rejects is not
sent, and a parameter an HTTP 400 names is dropped (recorded in ``NamedModel.dropped``).
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from ..core import ModelRef
from .base import NamedModel


_NO_SAMPLING = (
    (re.compile(r"^o\d"), "OpenAI o-series models reject it"),
    (re.compile(r"^gpt-5(?!.*chat)"), "gpt-5 reasoning models reject it"),
    (re.compile(r"^deepseek-(reasoner|r1)"), "deepseek-reasoner ignores it"),
)
_NON_REASONING = re.compile(r"^(gpt-4|gpt-3\.5|chatgpt-)")

CHAT_ATTRIBUTES = {
    "temperature": "temperature",
    "top_p": "top_p",
    "reasoning_effort": "reasoning_effort",
    "max_tokens": "max_tokens",
    "max_completion_tokens": "max_tokens",
    "seed": "seed",
}
"""Request parameter -> attribute of a LangChain chat model holding it."""


def sampling_params(
    spec: str, *, temperature: float | None = None, reasoning_effort: str | None = None, openai_compatible: bool = True
) -> tuple[dict[str, Any], dict[str, str]]:
    """``(sent, dropped)`` for model string ``spec``: the parameters to send (those not None) and, for each one its
    family does not get, the reason; ``reasoning_effort`` goes to OpenAI-compatible models only."""
    name = ModelRef.identity_of(spec)
    sent: dict[str, Any] = {}
    dropped: dict[str, str] = {}
    if temperature is not None:
        why = next((w for rx, w in _NO_SAMPLING if rx.search(name)), None)
        if why:
            dropped["temperature"] = f"{why} (asked {temperature:g})"
        else:
            sent["temperature"] = temperature
    if reasoning_effort is not None:
        if not openai_compatible:
            dropped["reasoning_effort"] = f"only OpenAI-compatible models take it (asked {reasoning_effort})"
        elif _NON_REASONING.search(name):
            dropped["reasoning_effort"] = f"{name} is not a reasoning model (asked {reasoning_effort})"
        else:
            sent["reasoning_effort"] = reasoning_effort
    return sent, dropped


_REJECT_WORDS = re.compile(
    r"unsupported|not supported|unrecognized|unrecognised|unknown|not allowed|"
    r"does not support|extra inputs|extra_forbidden|not permitted|invalid",
    re.IGNORECASE,
)


def rejected_param(exc: BaseException, sent: Iterable[str]) -> str | None:
    """The parameter of ``sent`` an HTTP 400 reply says the model rejects (its ``param`` field, else the message)."""
    sent = [p for p in sent]
    body = getattr(exc, "body", None)
    err = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(err, dict) and err.get("param") in sent:
        return str(err["param"])
    text = str(exc)
    if isinstance(err, dict) and isinstance(err.get("message"), str):
        text += " " + err["message"]
    if not _REJECT_WORDS.search(text):
        return None
    return next((p for p in sent if re.search(rf"(?<![\w]){re.escape(p)}(?![\w])", text)), None)


def drop_param(model: NamedModel, param: str, reason: str) -> bool:
    """Stop sending ``param`` to ``model`` (recorded in ``model.dropped``); False when nothing changed."""
    attr = CHAT_ATTRIBUTES.get(param, param)
    chat = model.chat
    if chat is None or not hasattr(chat, attr) or getattr(chat, attr) is None:
        return False
    try:
        setattr(chat, attr, None)
    except (AttributeError, TypeError, ValueError):
        return False
    model.params.pop(param, None)
    model.dropped[param] = reason
    return True
