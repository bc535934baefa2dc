"""Model calls: every target, judge and agent call goes through :func:`ainvoke` (DESIGN.md "Conventions").

Per call, in order: call cache, budget, one semaphore per provider (held only while a request is in flight),
retries with backoff (408/409/429/5xx, timeouts, malformed replies; once without a rejected parameter; a truncated
judge reply once with twice the ``max_tokens``, METRICS.md D.10), accounting.  A call that still fails raises
:class:`ModelCallError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import time
import traceback
from typing import Any, Sequence

from langchain_core.exceptions import OutputParserException
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import SecretStr

from ..core import (
    CredentialsError,
    ModelCallError,
    RetriesExhausted,
    RetryPolicy,
    SecretValues,
    aretry,
    join_reasoning,
    redact_url,
    reply_status,
    split_reasoning,
    url_secrets,
)
from . import accounting as _acc
from . import cache as _cache
from .base import NamedModel
from .params import drop_param, rejected_param
from .context import current_call_context, current_prompt_scope

RETRYABLE_STATUS = frozenset({408, 409, 429})
"""HTTP statuses retried besides every 5xx."""

DEFAULT_TIMEOUT_S = 300.0
"""Seconds per attempt of a model call when neither the caller nor ``--timeout`` sets it."""


def set_max_concurrency(provider: str, n: int) -> None:
    """Bound in-flight calls to ``n`` for ``provider`` in the current call context (:meth:`CallContext.set_limit`)."""
    current_call_context().set_limit(provider, n)


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    if status is None:
        status = getattr(getattr(exc, "response", None), "status_code", None)
    try:
        return int(status) if status is not None else None
    except (TypeError, ValueError):
        return None


def credentials_error(model: NamedModel, status: int | None) -> CredentialsError:
    """The one-line error for a 401/403 to ``model``, naming the variable to set."""
    ref = model.ref
    prefix = (ref.provider if ref is not None else "") or model.provider
    var = (ref.key_var if ref is not None else None) or f"{prefix.upper()}_API_KEY"
    where = f"the OpenAI-compatible server at {redact_url(model.provider)}" if "://" in model.provider else prefix
    what = "refused the credentials" if status == 401 else "refused access (forbidden)"
    return CredentialsError(
        f"{where} {what} (HTTP {status}) for model {model.name}; the run stops here",
        what=model.name,
        fix=f"set {var} to a valid key for this model (or check --base-url), "
        "then run again (a kept run folder resumes with `sgieval resume`)",
    )


def _transport_errors() -> tuple[type[BaseException], ...]:
    """aiohttp's connection and truncated-body errors, when installed."""
    try:
        import aiohttp
    except ImportError:
        return ()
    return (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError)


class MalformedReply(Exception):
    """A reply arrived but is no usable chat completion; retried like a 5xx."""


TRANSPORT_MODULES = (
    "sgieval.models.openai_direct",
    "sgieval.models.openai_wire",
    "langchain_openai",
    "openai",
    "langchain_core.language_models",
)
"""Modules whose ValueError/KeyError/IndexError/TypeError means the reply could not be read."""


def malformed_reply(exc: BaseException) -> str | None:
    """Why ``exc`` (from a chat model's ``ainvoke``) means the server's reply was unusable, as a short phrase, or
    None for another error (a parser's OutputParserException included); decided by type and origin."""
    if isinstance(exc, OutputParserException):
        return None
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, (json.JSONDecodeError, UnicodeDecodeError)):
            return "the reply body is not JSON"
        e = e.__cause__ or e.__context__
    if isinstance(exc, ValueError) and exc.args and isinstance(exc.args[0], dict):
        return "an error object in an HTTP 200 reply"
    frames = [frame for frame, _ in traceback.walk_tb(exc.__traceback__)]  # the module that raised it: the last
    if not (str(frames[-1].f_globals.get("__name__", "")) if frames else "").startswith(TRANSPORT_MODULES):
        return None
    if isinstance(exc, (KeyError, IndexError)) or (isinstance(exc, TypeError) and "choices" in str(exc)):
        return "no choices in the reply"
    if isinstance(exc, ValueError) and "error" in str(exc).lower()[:200]:
        return "an error object in an HTTP 200 reply"
    return None


def _retryable(exc: BaseException) -> bool:
    """True for 408/409/429/5xx, timeouts, connection errors and malformed replies."""
    if isinstance(exc, CallTimeSpent):
        return False
    if isinstance(exc, (MalformedReply, asyncio.TimeoutError, TimeoutError, ConnectionError, *_transport_errors())):
        return True
    status = _status(exc)
    if status is not None:
        return status in RETRYABLE_STATUS or status >= 500
    name = type(exc).__name__.lower()
    return any(k in name for k in ("timeout", "connection", "ratelimit", "serviceunavailable", "internalserver"))


def model_secrets(model: NamedModel) -> list[str]:
    """The secret values ``model`` sends.

    Args:
        model: the model.

    Returns:
        Its chat model's ``SecretStr`` fields, auth headers and base URL secrets; [] without a chat model.
    """
    chat = model.chat
    if chat is None:
        return []
    out: list[str] = []
    for name in getattr(type(chat), "model_fields", {}) or {}:
        v = getattr(chat, name, None)
        if isinstance(v, SecretStr):
            out.append(v.get_secret_value())
        elif isinstance(v, str) and name in ("openai_api_base", "base_url", "api_base"):
            out += url_secrets(v)
    headers = getattr(chat, "default_headers", None)
    if isinstance(headers, dict):
        for k, v in headers.items():
            if str(k).lower() in ("authorization", "api-key", "x-api-key") and isinstance(v, str):
                out.append(v.split(" ", 1)[-1])
    out += url_secrets(model.provider if "://" in (model.provider or "") else None)
    return [v for v in out if v]


class CallTimeSpent(Exception):
    """The total time of one call (all its attempts) is spent: no further attempt is made."""


def _reason(exc: BaseException, timeout_s: float, model: NamedModel) -> str:
    if isinstance(exc, asyncio.TimeoutError) and not str(exc):
        return f"timeout after {timeout_s:g} s"
    if isinstance(exc, CallTimeSpent):
        return str(exc)
    mask = SecretValues(model_secrets(model)).mask
    if isinstance(exc, MalformedReply):
        cause = exc.__cause__
        detail = f" ({type(cause).__name__}: {str(cause).replace(chr(10), ' ')})" if cause is not None else ""
        return mask(f"malformed reply: {exc}{detail}")[:300]
    status = _status(exc)
    text = mask(str(exc).replace("\n", " "))[:300]
    prefix = f"HTTP {status} " if status is not None else ""
    return f"{prefix}{type(exc).__name__}: {text}"


async def ainvoke(
    model: NamedModel,
    messages: Sequence[BaseMessage] | str,
    *,
    runnable: Any = None,
    max_attempts: int = 4,
    timeout_s: float | None = None,
    total_timeout_s: float | None = None,
    base_delay_s: float = 0.5,
    max_delay_s: float = 30.0,
    max_retry_after_s: float = 120.0,
    use_cache: bool | None = None,
    ledger: "_acc.Ledger | None" = None,
    role: str | None = None,
) -> Any:
    """Invoke ``runnable`` with ``messages`` through the steps of the module doc (reply info: :func:`call_info`).

    Args:
        model: the model called.
        messages: LangChain messages, or a string.
        runnable: what is invoked (default ``model.chat``; other runnables are not cached).
        max_attempts: most tries (>= 1).
        timeout_s: seconds per try (None: the run's ``--timeout``, else :data:`DEFAULT_TIMEOUT_S`).
        total_timeout_s: seconds for every try together (None: twice ``timeout_s``).
        base_delay_s: the first retry wait (s).
        max_delay_s: the longest retry wait (s).
        max_retry_after_s: the longest Retry-After honoured (s).
        use_cache: None caches calls at temperature 0 unless ``--no-cache``; True any temperature; False never.
        ledger: where the call is recorded (default the active :class:`Ledger`).
        role: the ledger's role (default ``model.role``).

    Returns:
        The runnable's output.

    Raises:
        ModelCallError: every attempt failed, or the error is not retryable (model name + last reason).
        BudgetExceeded: before the call, when the ledger's budget is spent.
    """
    target = runnable if runnable is not None else model.chat
    if target is None:
        raise ModelCallError("has no chat model to call", what=model.name)
    policy = RetryPolicy(max_attempts, base_delay_s, max_delay_s, max_retry_after_s)  # ValueError for < 1 attempt
    book = ledger if ledger is not None else _acc.current_ledger()
    who = role or model.role
    key = None
    if (runnable is None or runnable is model.chat) and _cache.should_cache(model, use_cache):
        key = _cache.cache_key_for(model, messages)
        hit = _cache.get_cache().get(key)
        if hit is not None:
            if book is not None:
                book.record(model.name, who, cached=True)
            _annotate(hit, latency_s=0.0, attempts=0, cached=True, cost=0.0)
            return hit
    if book is not None:
        book.check_budget(model.name, who)
    call = _Call(model, messages, book, who, timeout_s, total_timeout_s)
    return await call.run(target, key, policy)


class _Call:
    """One call of :func:`ainvoke` past the cache and the budget: its attempts, clock and accounting."""

    def __init__(self, model: NamedModel, messages: Any, book: Any, who: str, timeout_s: Any, total_s: Any):
        self.model, self.messages, self.book, self.who = model, messages, book, who
        self.batched = _batched(model)
        # noted before the request goes out: a process killed before the outcome is recorded still accounts for
        # it (a batched request is noted in the run's batch journal and billed once, when a run collects it)
        self.call_id = book.begin(model.name, who) if book is not None and not self.batched else None
        self.started = time.perf_counter()
        self.timeout_s = timeout_s if timeout_s is not None else current_call_context().timeout_s or DEFAULT_TIMEOUT_S
        self.sem: Any = contextlib.nullcontext()
        self.tag: Any = contextlib.nullcontext  # the request's batch tag
        if self.batched:  # waits for its batch, not for a connection: no semaphore slot, the batch window as timeout
            from .batch_collector import BATCH_WAIT_S, request_tag

            self.timeout_s, total_s = max(self.timeout_s, BATCH_WAIT_S), None
            self.tag = functools.partial(request_tag, f"repeat={model.repeat}" if model.repeat else "")
        else:
            self.sem = current_call_context().semaphore(model.provider or model.name, model.max_in_flight)
        self.total_s = total_s if total_s is not None else 2.0 * self.timeout_s
        self.deadline: float | None = None  # set when the first request goes out
        self.sent, self.options = prompt_cache_options(model, messages, current_prompt_scope())

    async def attempt(self, target: Any, extra: dict[str, Any]) -> Any:
        """One request, bounded by the per-attempt timeout and what is left of the call's total time."""
        queued = time.perf_counter()
        if self.deadline is not None and queued >= self.deadline:
            raise CallTimeSpent(
                f"the call's total time of {self.total_s:g} s is spent (timeout {self.timeout_s:g} s per attempt)"
            )
        async with self.sem:  # held only while a request is in flight, never during backoff sleeps
            now = time.perf_counter()
            self.deadline = now + self.total_s if self.deadline is None else self.deadline + (now - queued)
            try:
                async with asyncio.timeout(min(self.timeout_s, self.deadline - now)):
                    with self.tag():
                        return await target.ainvoke(self.sent, **extra)
            except (ValueError, KeyError, IndexError, TypeError) as e:
                why = malformed_reply(e)
                if why is None:
                    raise
                raise MalformedReply(why) from e

    async def run(self, target: Any, key: str | None, policy: RetryPolicy) -> Any:
        """Rounds of the retry policy until a reply."""
        model, attempt, allowed, dropped_one = self.model, 0, policy.max_attempts, False
        longer: dict[str, Any] = {}
        while True:
            left = dataclasses.replace(policy, max_attempts=max(1, allowed - attempt))
            try:
                out, n = await aretry(
                    functools.partial(self.attempt, target, {**self.options, **longer}), left, _retryable
                )
            except RetriesExhausted as e:
                attempt += e.attempts
                if not dropped_one and not _retryable(e.last) and _status(e.last) == 400:
                    retry_target = _without_rejected_param(model, target, e.last)
                    if retry_target is not None:  # once, without the parameter
                        dropped_one, target, allowed = True, retry_target, allowed + 1
                        key = _cache.cache_key_for(model, self.messages) if key is not None else None
                        continue
                raise self.failed(e.last, attempt) from None
            attempt += n
            raw = out.get("raw") if isinstance(out, dict) else out  # with_structured_output(include_raw=True)
            status = read_reply(raw)["status"] if isinstance(raw, BaseMessage) else "ok"
            if status == "truncated" and self.who == "judge":
                if longer:
                    raise ModelCallError(
                        f"judge reply cut by the token limit again with max_tokens "
                        f"{longer['max_tokens']} (finish_reason {finish_reason(raw)!r})",
                        what=model.name,
                    )
                longer = {"max_tokens": _twice_max_tokens(model, target, raw)}
                allowed += 1
                continue
            if key is not None and isinstance(out, BaseMessage) and status == "ok":
                _cache.get_cache().put(key, _masked(out), model=model.name)  # never a truncated or empty reply
            return self.answered(out, raw, attempt)

    def failed(self, last: BaseException, attempts: int) -> Exception:
        """Record the failed call; the error to raise."""
        reason = _reason(last, self.timeout_s, self.model)
        if self.book is not None:
            latency = time.perf_counter() - self.started
            self.book.record(
                self.model.name, self.who, latency_s=latency, error=reason, call_id=self.call_id, batch=self.batched
            )
        if _status(last) in (401, 403):
            return credentials_error(self.model, _status(last))
        return ModelCallError(f"call failed after {attempts} attempt(s): {reason}", what=self.model.name)

    def answered(self, out: Any, raw: Any, attempts: int) -> Any:
        """Record the reply (tokens, latency, cost) and annotate it."""
        latency, u = time.perf_counter() - self.started, usage(out)
        if self.book is not None:
            entry = self.book.record(
                self.model.name, self.who, usage=u, latency_s=latency, call_id=self.call_id, batch=self.batched
            )
            cost = entry.cost
        else:
            cost = _acc.price_call(self.model.name, u, batch=self.batched) if u else None
        fr = finish_reason(raw) if isinstance(raw, BaseMessage) else None
        _annotate(out, latency_s=latency, attempts=attempts, cached=False, cost=cost, finish_reason=fr)
        return out


def _batched(model: NamedModel) -> bool:
    """Whether ``model``'s calls go in provider batches (``--batch``; :mod:`sgieval.models.batch`)."""
    chat = model.chat
    if chat is None or "batch" not in type(getattr(chat, "bound", chat)).__name__.lower():
        return False  # no import of the batch module for the direct calls of every other run
    from .batch import is_batched

    return is_batched(model)


OPENAI_CHAT_CLASSES = frozenset({"ChatOpenAI", "ChatOpenAIDirect", "AzureChatOpenAI", "BatchChatOpenAI"})

ANTHROPIC_CHAT_CLASSES = frozenset(
    {"ChatAnthropic", "ChatAnthropicVertex", "ChatAnthropicBedrock", "ChatAnthropicBatch"}
)

CACHE_CONTROL = {"type": "ephemeral"}


def prompt_cache_options(
    model: NamedModel, messages: Sequence[BaseMessage] | str, scope: str | None
) -> tuple[Sequence[BaseMessage] | str, dict[str, Any]]:
    """The messages and call keywords that let a provider cache a family of prompts.

    Args:
        model: the model called.
        messages: the call's messages (a string is left alone).
        scope: the prompt family (e.g. ``sgieval:*/rigor``), None outside any.

    Returns:
        ``(messages, keywords)``: OpenAI gets ``prompt_cache_key``, Anthropic a ``cache_control`` system block.
    """
    if not scope:
        return messages, {}
    cls = type(getattr(model.chat, "bound", model.chat)).__name__  # a binding (tools, structured output) or not
    if cls in OPENAI_CHAT_CLASSES:
        return messages, {"prompt_cache_key": scope}
    anthropic = cls in ANTHROPIC_CHAT_CLASSES or (model.ref is not None and model.ref.provider == "anthropic")
    if anthropic and not isinstance(messages, str):
        out = list(messages)
        i = next((i for i, m in enumerate(out) if m.type == "system"), None)
        if i is not None and isinstance(out[i].content, str) and out[i].content:
            block = {"type": "text", "text": out[i].content, "cache_control": dict(CACHE_CONTROL)}
            out[i] = out[i].model_copy(update={"content": [block]})
        return out, {}
    return messages, {}


def _masked(msg: BaseMessage) -> BaseMessage:
    """``msg`` with the run's secret values masked in its text content, for the call cache."""
    secrets = current_call_context().secrets
    content = getattr(msg, "content", None)
    if not secrets or not isinstance(content, str) or not secrets.holds_any(content):
        return msg
    return msg.model_copy(update={"content": secrets.mask(content)})


DEFAULT_RETRY_MAX_TOKENS = 4096
"""``max_tokens`` of the retry of a truncated judge reply when neither limit nor output tokens are known."""


def _twice_max_tokens(model: NamedModel, target: Any, reply: Any) -> int:
    """Twice the limit that cut ``reply`` (METRICS.md D.10), else twice its output tokens, else the default."""
    bound = (getattr(target, "kwargs", None) or {}).get("max_tokens")
    for v in (bound, getattr(model.chat, "max_tokens", None), getattr(model.chat, "max_completion_tokens", None)):
        if isinstance(v, int) and v > 0:
            return 2 * v
    u = usage(reply)
    if u and u.get("output", 0) > 0:
        return 2 * u["output"]
    return DEFAULT_RETRY_MAX_TOKENS


def _without_rejected_param(model: NamedModel, target: Any, exc: BaseException) -> Any:
    """The runnable to retry with when HTTP 400 ``exc`` names a parameter sent (then dropped), else None."""
    bound = getattr(target, "kwargs", None) if hasattr(target, "bound") else None
    sent = [*model.params, *(bound or {}), *model.dropped]
    param = rejected_param(exc, sent)
    if param is None:
        return None
    reason = f"rejected by the server: {_reason(exc, 0.0, model)[:200]}"
    # a concurrent call may have dropped it already: then this call was sent before and just retries
    changed = drop_param(model, param, reason) or (param in model.dropped and param not in model.params)
    if bound and param in bound:
        target = target.bound.bind(**{k: v for k, v in bound.items() if k != param})
        model.params.pop(param, None)
        model.dropped[param] = reason
        changed = True
    return target if changed else None


def _annotate(out: Any, **info: Any) -> None:
    if isinstance(out, AIMessage):
        with contextlib.suppress(Exception):  # frozen/odd metadata: skip annotation
            out.response_metadata["sgieval"] = info


def call_info(msg: Any) -> dict[str, Any]:
    """What :func:`ainvoke` attached to a reply.

    Args:
        msg: a reply.

    Returns:
        ``{"latency_s", "attempts", "cached", "cost" (USD), "finish_reason"}``, or {}.
    """
    meta = getattr(msg, "response_metadata", None)
    return dict(meta.get("sgieval") or {}) if isinstance(meta, dict) else {}


def message_text(msg: Any) -> str:
    """Text content of an AIMessage (joins content blocks); str passes through.

    Args:
        msg: an AIMessage, or a string.

    Returns:
        The text.
    """
    content = getattr(msg, "content", msg)
    if isinstance(content, list):
        return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return str(content)


def finish_reason(msg: Any) -> str | None:
    """The reply's ``finish_reason`` (or Anthropic's ``stop_reason``), or None."""
    meta = getattr(msg, "response_metadata", None)
    if not isinstance(meta, dict):
        return None
    v = meta.get("finish_reason") or meta.get("stop_reason") or meta.get("done_reason")
    return str(v) if v is not None else None


def _separate_reasoning(msg: Any) -> list[str]:
    """Reasoning a server returned apart from the content (METRICS.md D.8): its ``reasoning_content``, then its
    thinking blocks."""
    extra = getattr(msg, "additional_kwargs", None) or {}
    content = getattr(msg, "content", None)
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    parts = [extra.get("reasoning_content") if isinstance(extra, dict) else None]
    parts += [
        b.get("thinking") or b.get("reasoning") or b.get("text")
        for b in blocks
        if b.get("type") in ("thinking", "reasoning")
    ]
    return [p for p in parts if isinstance(p, str)]


def read_reply(msg: Any) -> dict[str, Any]:
    """What a reply says, read once for a record (METRICS.md D.8, D.10).

    Args:
        msg: a reply.

    Returns:
        ``{"text" (after the last </think>), "reasoning", "finish_reason", "status" (ok, truncated, empty)}``.
    """
    think, final = split_reasoning(message_text(msg))
    fr = finish_reason(msg)
    return {
        "text": final,
        "reasoning": join_reasoning(*_separate_reasoning(msg), think),
        "finish_reason": fr,
        "status": reply_status(fr, final, has_tool_calls=bool(getattr(msg, "tool_calls", None))),
    }


def usage(msg: Any) -> dict[str, int] | None:
    """Token usage of an AIMessage, from LangChain's ``usage_metadata``.

    Args:
        msg: a reply.

    Returns:
        ``{"input", "output"}`` and, when reported, ``cache_read``, ``cache_write``, ``reasoning``; or None.
    """
    meta = getattr(msg, "usage_metadata", None)
    if isinstance(msg, AIMessage) and meta:
        out = {"input": int(meta.get("input_tokens", 0)), "output": int(meta.get("output_tokens", 0))}
        for key, details, field in (
            ("cache_read", "input_token_details", "cache_read"),
            ("cache_write", "input_token_details", "cache_creation"),
            ("reasoning", "output_token_details", "reasoning"),
        ):
            n = (meta.get(details) or {}).get(field)
            if n:
                out[key] = int(n)
        return out
    return None
