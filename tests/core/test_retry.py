"""The one retry policy (sgieval.core.retry), used by model calls and web search."""

from __future__ import annotations

import asyncio

import pytest

from sgieval.core.retry import RetriesExhausted, RetryPolicy, aretry, retry


class Flaky(Exception):
    def __init__(self, msg: str = "flaky", headers: dict | None = None):
        super().__init__(msg)
        self.headers = headers or {}


def script(*steps):
    it = iter(steps)

    def fn():
        s = next(it)
        if isinstance(s, BaseException):
            raise s
        return s

    return fn


def test_sync_retry_counts_attempts_and_waits_with_backoff(monkeypatch):
    import random

    monkeypatch.setattr(random, "random", lambda: 0.5)  # U(0.5, 1.5) -> 1.0: waits are the bare formula
    waits: list[float] = []
    policy = RetryPolicy(max_attempts=4, base_delay_s=1.0, max_delay_s=3.0)
    out, attempts = retry(
        script(Flaky(), Flaky(), Flaky(), "ok"), policy, lambda e: isinstance(e, Flaky), sleep=waits.append
    )
    assert (out, attempts) == ("ok", 4)
    assert waits == [1.0, 2.0, 3.0]  # 1 * 2**0, 1 * 2**1, min(3, 1 * 2**2)


def test_retry_after_header_wins_over_a_shorter_backoff(monkeypatch):
    import random

    monkeypatch.setattr(random, "random", lambda: 0.5)
    waits: list[float] = []
    policy = RetryPolicy(max_attempts=3, base_delay_s=0.001, max_delay_s=1.0, max_retry_after_s=5.0)
    retry(
        script(Flaky(headers={"retry-after": "2"}), Flaky(headers={"retry-after": "60"}), "ok"),
        policy,
        lambda e: True,
        sleep=waits.append,
    )
    assert waits == [2.0, 5.0]  # the header's 2 s; 60 s capped at max_retry_after_s


def test_non_retryable_error_stops_at_once_and_exhaustion_names_the_attempts():
    with pytest.raises(RetriesExhausted) as e:
        retry(
            script(ValueError("bad request")),
            RetryPolicy(max_attempts=5),
            lambda e: isinstance(e, Flaky),
            sleep=lambda s: None,
        )
    assert e.value.attempts == 1 and isinstance(e.value.last, ValueError)
    with pytest.raises(RetriesExhausted) as e:
        retry(script(Flaky("a"), Flaky("b")), RetryPolicy(max_attempts=2), lambda e: True, sleep=lambda s: None)
    assert e.value.attempts == 2 and str(e.value.last) == "b"


async def test_async_retry():
    steps = iter([Flaky(), "done"])
    waits: list[float] = []

    async def fn():
        s = next(steps)
        if isinstance(s, BaseException):
            raise s
        return s

    async def sleep(s):
        waits.append(s)

    out, attempts = await aretry(fn, RetryPolicy(max_attempts=3, base_delay_s=0.1), lambda e: True, sleep=sleep)
    assert (out, attempts) == ("done", 2) and len(waits) == 1 and 0.05 <= waits[0] <= 0.15


def test_policy_rejects_zero_attempts():
    with pytest.raises(ValueError, match="max_attempts must be >= 1"):
        RetryPolicy(max_attempts=0)


def test_full_jitter_reader_and_hook_before_each_wait(monkeypatch):
    """Web search's policy: full jitter U(0, base * 2**(a-1)), its own Retry-After reader (uncapped), and
    ``on_retry`` called before each wait only (not after the last attempt)."""
    import random

    monkeypatch.setattr(random, "uniform", lambda a, b: (b - a) * 0.25)  # full jitter -> a quarter of the cap
    waits: list[float] = []
    seen: list[tuple[int, str, float]] = []
    policy = RetryPolicy(
        max_attempts=4,
        base_delay_s=2.0,
        max_delay_s=float("inf"),
        jitter="full",
        max_retry_after_s=float("inf"),
        retry_after=lambda e: 30.0 if "slow down" in str(e) else None,
    )
    with pytest.raises(RetriesExhausted) as e:
        retry(
            script(Flaky("a"), Flaky("slow down"), Flaky("c"), Flaky("d")),
            policy,
            lambda e: True,
            sleep=waits.append,
            on_retry=lambda a, exc, w: seen.append((a, str(exc), w)),
        )
    assert e.value.attempts == 4
    assert waits == [0.5, 30.0, 2.0]  # 2 * 2**0 / 4; the reader's 30 s over 1.0; 2 * 2**2 / 4
    assert seen == [(1, "a", 0.5), (2, "slow down", 30.0), (3, "c", 2.0)]


def test_success_at_first_attempt_leaves_no_reference_cycles():
    """The first attempt runs outside tenacity, whose retry state (AsyncRetrying, RetryCallState,
    Future, Condition...) forms reference cycles that the garbage collector must trace on every model call."""
    import gc

    async def ok() -> int:
        return 7

    async def many() -> list[tuple[int, int]]:
        return [await aretry(ok, RetryPolicy(), lambda e: True) for _ in range(200)]

    def sync_many() -> list[tuple[int, int]]:
        return [retry(lambda: 7, RetryPolicy(), lambda e: True) for _ in range(200)]

    gc.collect()
    gc.disable()
    try:
        out = asyncio.run(many()) + sync_many()
        collected = gc.collect()
    finally:
        gc.enable()
    assert out == [(7, 1)] * 400
    assert collected < 100  # the event loop's own few; through tenacity each call leaves ~60 objects in cycles
