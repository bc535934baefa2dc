"""Model calls with retries: every target, judge and agent call goes through
:func:`ainvoke` so retry, concurrency and accounting live in one place.

A call that still fails after ``max_attempts`` raises :class:`ModelCallError`
with the last reason; callers record it as a failed Response/Score, never a zero.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import defaultdict
from typing import Any, Sequence

from langchain_core.messages import AIMessage, BaseMessage

from ..core import ModelCallError
from .base import NamedModel

_SEMAPHORES: dict[tuple[int, str], asyncio.Semaphore] = {}
MAX_CONCURRENCY = defaultdict(lambda: 16)


def _semaphore(provider: str) -> asyncio.Semaphore:
    loop_id = id(asyncio.get_running_loop())
    key = (loop_id, provider)
    if key not in _SEMAPHORES:
        _SEMAPHORES[key] = asyncio.Semaphore(MAX_CONCURRENCY[provider])
    return _SEMAPHORES[key]


def _retryable(exc: BaseException) -> bool:
    status = getattr(exc, "status_code", None) or getattr(getattr(exc, "response", None), "status_code", None)
    if status is not None:
        return status == 429 or status >= 500 or status == 408
    name = type(exc).__name__.lower()
    return any(k in name for k in ("timeout", "connection", "ratelimit", "apierror", "server"))


async def ainvoke(
    model: NamedModel,
    messages: Sequence[BaseMessage] | str,
    *,
    runnable: Any = None,
    max_attempts: int = 4,
    timeout_s: float = 300.0,
    base_delay_s: float = 0.5,
) -> Any:
    """Invoke ``runnable`` (default ``model.chat``) with ``messages``.

    Retries 429/5xx/timeouts/connection errors with jittered exponential
    backoff (base ``base_delay_s``, doubling), at most ``max_attempts`` tries,
    each bounded by ``timeout_s`` seconds.  Returns the runnable's output
    (an ``AIMessage`` for a chat model).  Raises ModelCallError naming the
    model and the last reason.
    """
    target = runnable if runnable is not None else model.chat
    if target is None:
        raise ModelCallError("has no chat model to call", what=model.name)
    last: BaseException | None = None
    for attempt in range(1, max_attempts + 1):
        try:
            async with _semaphore(model.provider or model.name):
                return await asyncio.wait_for(target.ainvoke(messages), timeout=timeout_s)
        except asyncio.TimeoutError as e:
            last = e
        except Exception as e:  # noqa: BLE001 - classified below
            last = e
            if not _retryable(e):
                break
        if attempt < max_attempts:
            await asyncio.sleep(base_delay_s * (2 ** (attempt - 1)) * (0.5 + random.random()))
    reason = f"{type(last).__name__}: {last}" if last else "unknown error"
    raise ModelCallError(f"call failed after {attempt} attempt(s): {reason}", what=model.name)


def message_text(msg: Any) -> str:
    """Text content of an AIMessage (joins content blocks); str passes through."""
    if isinstance(msg, str):
        return msg
    content = getattr(msg, "content", msg)
    if isinstance(content, list):
        return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return str(content)


def usage(msg: Any) -> dict[str, int] | None:
    """Token usage {"input", "output"} of an AIMessage when the provider reports it."""
    meta = getattr(msg, "usage_metadata", None)
    if isinstance(msg, AIMessage) and meta:
        return {"input": int(meta.get("input_tokens", 0)), "output": int(meta.get("output_tokens", 0))}
    return None


class Stopwatch:
    """Wall-clock seconds since construction (``elapsed``)."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.t0
