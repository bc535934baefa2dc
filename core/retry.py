"""One retry policy (on tenacity) for every call that may fail for a while (model calls, web search): a failure
``retryable(exc)`` accepts is retried after ``min(max_delay_s, base_delay_s * 2**(attempt-1))`` seconds times
``U(0.5, 1.5)`` ("equal jitter", default) or ``U(0, 1)`` (``jitter="full"``), and at least a ``Retry-After`` /
``retry-after-ms`` the error carries (capped at ``max_retry_after_s``). At most ``max_attempts`` tries; whatever ends
the loop is raised as :class:`RetriesExhausted`."""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from contextlib import suppress
from dataclasses import dataclass
from typing import Awaitable, Callable, Literal, TypeVar

import tenacity

T = TypeVar("T")

Jitter = Literal["equal", "full"]


def backoff_s(
    attempt: int, base_delay_s: float, max_delay_s: float, rng: random.Random | None = None, jitter: Jitter = "equal"
) -> float:
    """Jittered exponential backoff after failed attempt ``attempt`` (the module's formula; "full" is AWS full jitter).

    Args:
        attempt: the failed attempt (1-based).
        base_delay_s: the first wait (s).
        max_delay_s: the longest wait (s).
        rng: the random source.
        jitter: ``"equal"`` or ``"full"``.

    Returns:
        Seconds.
    """
    cap = min(max_delay_s, base_delay_s * (2 ** (attempt - 1)))
    if jitter == "full":
        return (rng or random).uniform(0.0, cap)
    return cap * (0.5 + (rng or random).random())


def retry_after_s(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms`` or ``Retry-After`` as seconds or an HTTP date), or None.

    Args:
        exc: the failure.

    Returns:
        Seconds, or None.
    """
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
    with suppress(ValueError):
        return max(0.0, float(ra))
    try:
        when = email.utils.parsedate_to_datetime(ra)
        return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, IndexError):
        return None


@dataclass(frozen=True)
class RetryPolicy:
    """``max_attempts`` (>= 1) tries, the module's backoff; the server's wait (``retry_after(exc)``, default
    :func:`retry_after_s`) is honoured up to ``max_retry_after_s`` s."""

    max_attempts: int = 4
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    max_retry_after_s: float = 120.0
    jitter: Jitter = "equal"
    retry_after: Callable[[BaseException], float | None] | None = None

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts}")

    def wait_s(self, attempt: int, exc: BaseException | None) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1-based) that raised ``exc``.

        Args:
            attempt: the failed attempt (1-based).
            exc: its exception.

        Returns:
            Seconds.
        """
        wait = backoff_s(attempt, self.base_delay_s, self.max_delay_s, jitter=self.jitter)
        ra = (self.retry_after or retry_after_s)(exc) if exc is not None else None
        if ra is not None:
            wait = max(wait, min(ra, self.max_retry_after_s))
        return wait


class RetriesExhausted(Exception):
    """The loop ended without a result: ``last`` is the last exception, ``attempts`` the number of tries made."""

    def __init__(self, last: BaseException, attempts: int):
        super().__init__(f"failed after {attempts} attempt(s): {type(last).__name__}: {last}")
        self.last = last
        self.attempts = attempts


OnRetry = Callable[[int, BaseException, float], None]
"""``on_retry(attempt, exc, wait_s)``: called after failed attempt ``attempt`` (1-based), before waiting ``wait_s``."""


def _wait(policy: RetryPolicy) -> Callable[[tenacity.RetryCallState], float]:
    def wait(state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        return policy.wait_s(state.attempt_number + 1, exc)  # +1: the first attempt ran before tenacity's loop

    return wait


def _before_sleep(on_retry: OnRetry | None) -> Callable[[tenacity.RetryCallState], None] | None:
    """tenacity's ``before_sleep`` hook (runs only when another attempt follows) calling ``on_retry``."""
    if on_retry is None:
        return None

    def hook(state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        if exc is not None:
            on_retry(state.attempt_number + 1, exc, state.upcoming_sleep)

    return hook


def _after_first(policy: RetryPolicy, retryable: Callable[[BaseException], bool], exc: Exception) -> float:
    """The wait (s) before attempt 2 after ``exc``; RetriesExhausted when none (not retryable, or 1 attempt)."""
    if policy.max_attempts <= 1 or not retryable(exc):
        raise RetriesExhausted(exc, 1) from exc
    return policy.wait_s(1, exc)


async def aretry(
    fn: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    retryable: Callable[[BaseException], bool],
    *,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> tuple[T, int]:
    """``(await fn(), attempts)`` under ``policy``; ``CancelledError`` is never retried. The first attempt runs outside
    tenacity, so a call that succeeds at once builds no retry state (reference cycles).

    Args:
        fn: the attempt.
        policy: the retry policy.
        retryable: whether an exception is retried.
        sleep: the sleep function.

    Returns:
        ``(result, attempts)``.

    Raises:
        RetriesExhausted: the last failure.
    """
    try:
        return await fn(), 1
    except asyncio.CancelledError:
        raise
    except Exception as e:  # noqa: BLE001 - retried below or handed to the caller with the attempt count
        wait = _after_first(policy, retryable, e)
    await sleep(wait)
    attempts = 1
    try:
        async for attempt in tenacity.AsyncRetrying(
            stop=tenacity.stop_after_attempt(policy.max_attempts - 1),
            wait=_wait(policy),
            sleep=sleep,
            retry=tenacity.retry_if_exception(lambda e: not isinstance(e, asyncio.CancelledError) and retryable(e)),
            reraise=True,
        ):
            with attempt:
                attempts = attempt.retry_state.attempt_number + 1
                out = await fn()
    except asyncio.CancelledError:
        raise
    except Exception as e:  # noqa: BLE001 - handed to the caller with the attempt count
        raise RetriesExhausted(e, attempts) from e
    return out, attempts


def retry(
    fn: Callable[[], T],
    policy: RetryPolicy,
    retryable: Callable[[BaseException], bool],
    *,
    sleep: Callable[[float], None] = time.sleep,
    on_retry: OnRetry | None = None,
) -> tuple[T, int]:
    """Synchronous :func:`aretry`: ``(fn(), attempts)``.  Raises :class:`RetriesExhausted`."""
    try:
        return fn(), 1
    except Exception as e:  # noqa: BLE001 - retried below or handed to the caller with the attempt count
        wait = _after_first(policy, retryable, e)
        if on_retry is not None:
            on_retry(1, e, wait)
    sleep(wait)
    attempts = 1
    try:
        for attempt in tenacity.Retrying(
            stop=tenacity.stop_after_attempt(policy.max_attempts - 1),
            wait=_wait(policy),
            sleep=sleep,
            before_sleep=_before_sleep(on_retry),
            retry=tenacity.retry_if_exception(retryable),
            reraise=True,
        ):
            with attempt:
                attempts = attempt.retry_state.attempt_number + 1
                out = fn()
    except Exception as e:  # noqa: BLE001 - handed to the caller with the attempt count
        raise RetriesExhausted(e, attempts) from e
    return out, attempts
