"""One retry policy for every call that may fail for a while: model calls
(:func:`sgieval.models.calls.ainvoke`) and web search (:mod:`sgieval.tools.search`)
(issue 10 item 5: one retry loop; DESIGN.md "Conventions").

Built on tenacity.  A failed attempt whose exception ``retryable(exc)``
accepts is retried after a jittered exponential backoff

    wait = min(max_delay_s, base_delay_s * 2**(attempt-1)) * U(0.5, 1.5)      seconds

and, when the error carries a ``Retry-After`` / ``retry-after-ms`` header, at
least that long (capped at ``max_retry_after_s``).  At most ``max_attempts``
tries; a non-retryable error ends the loop at once.  Whatever ends the loop
is raised as :class:`RetriesExhausted` carrying the last exception and the
number of attempts, so callers can word their own error.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from dataclasses import dataclass
from typing import Awaitable, Callable, TypeVar

import tenacity

T = TypeVar("T")

__all__ = ["RetryPolicy", "RetriesExhausted", "aretry", "retry", "backoff_s", "retry_after_s"]


def backoff_s(attempt: int, base_delay_s: float, max_delay_s: float, rng: random.Random | None = None) -> float:
    """Jittered exponential backoff after failed attempt ``attempt`` (1-based):
    ``min(max_delay_s, base_delay_s * 2**(attempt-1)) * U(0.5, 1.5)`` seconds."""
    r = (rng or random).random()
    return min(max_delay_s, base_delay_s * (2 ** (attempt - 1))) * (0.5 + r)


def retry_after_s(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms`` or
    ``Retry-After`` as seconds or an HTTP date), or None."""
    headers = getattr(getattr(exc, "response", None), "headers", None) or getattr(exc, "headers", None)
    if not headers:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000.0)
        ra = headers.get("retry-after")
    except Exception:  # noqa: BLE001 - odd header containers
        return None
    if ra is None:
        return None
    try:
        return max(0.0, float(ra))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(ra)
        return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, IndexError):
        return None


@dataclass(frozen=True)
class RetryPolicy:
    """``max_attempts`` (>= 1) tries; backoff ``base_delay_s``/``max_delay_s``
    seconds (module formula); a Retry-After header is honoured up to
    ``max_retry_after_s`` seconds.  Raises ValueError for ``max_attempts < 1``."""

    max_attempts: int = 4
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    max_retry_after_s: float = 120.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts}")

    def wait_s(self, attempt: int, exc: BaseException | None) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1-based) that raised ``exc``."""
        wait = backoff_s(attempt, self.base_delay_s, self.max_delay_s)
        ra = retry_after_s(exc) if exc is not None else None
        if ra is not None:
            wait = max(wait, min(ra, self.max_retry_after_s))
        return wait


class RetriesExhausted(Exception):
    """The loop ended without a result: ``last`` is the last exception,
    ``attempts`` the number of tries made (fewer than the policy's maximum
    when ``last`` was not retryable)."""

    def __init__(self, last: BaseException, attempts: int):
        super().__init__(f"failed after {attempts} attempt(s): {type(last).__name__}: {last}")
        self.last = last
        self.attempts = attempts


def _wait(policy: RetryPolicy) -> Callable[[tenacity.RetryCallState], float]:
    def wait(state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        return policy.wait_s(state.attempt_number, exc)

    return wait


async def aretry(fn: Callable[[], Awaitable[T]], policy: RetryPolicy,
                 retryable: Callable[[BaseException], bool], *,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> tuple[T, int]:
    """``(await fn(), attempts)`` under ``policy``; ``fn`` is called once per attempt.
    ``asyncio.CancelledError`` is never retried.  Raises :class:`RetriesExhausted`."""
    attempts = 0
    try:
        async for attempt in tenacity.AsyncRetrying(
                stop=tenacity.stop_after_attempt(policy.max_attempts), wait=_wait(policy), sleep=sleep,
                retry=tenacity.retry_if_exception(lambda e: not isinstance(e, asyncio.CancelledError) and retryable(e)),
                reraise=True):
            with attempt:
                attempts = attempt.retry_state.attempt_number
                out = await fn()
    except asyncio.CancelledError:
        raise
    except Exception as e:  # noqa: BLE001 - handed to the caller with the attempt count
        raise RetriesExhausted(e, attempts) from e
    return out, attempts


def retry(fn: Callable[[], T], policy: RetryPolicy, retryable: Callable[[BaseException], bool], *,
          sleep: Callable[[float], None] = time.sleep) -> tuple[T, int]:
    """Synchronous :func:`aretry`: ``(fn(), attempts)``.  Raises :class:`RetriesExhausted`."""
    attempts = 0
    try:
        for attempt in tenacity.Retrying(stop=tenacity.stop_after_attempt(policy.max_attempts), wait=_wait(policy),
                                         sleep=sleep, retry=tenacity.retry_if_exception(retryable), reraise=True):
            with attempt:
                attempts = attempt.retry_state.attempt_number
                out = fn()
    except Exception as e:  # noqa: BLE001 - handed to the caller with the attempt count
        raise RetriesExhausted(e, attempts) from e
    return out, attempts
