"""What a run will cost before it makes a call: token counting, :class:`RehearsalChat` (records the requests a
run would send, sends nothing) and the estimate per (model, role) priced with genai-prices.

Tokens: tiktoken for an OpenAI model when it loads offline, else one token per 4 characters
(https://platform.openai.com/tokenizer).
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, ConfigDict, Field

from ..core import ModelRef
from .accounting import price_call, price_source
from .openai_wire import json_schema_format, message_dict, to_messages
from .structured import native_structured


APPROXIMATION = "approximation: 1 token per 4 characters"
"""How tokens are counted when no tokenizer of the provider loads offline."""

TYPICAL_OUTPUT_TOKENS: dict[str, int] = {"sciaidanbench": 150, "sgi-bench": 700, "sfbench": 300, "jsonl": 250}
"""Typical target answer length in tokens per benchmark when neither the call cache nor stored answers give one."""

DEFAULT_TYPICAL_OUTPUT_TOKENS = 250
"""Typical target answer length (tokens) for a benchmark without its own figure."""

JUDGE_REPLY_TOKENS = 250
"""Typical output of one structured judge reply (tokens; a score and a rationale per criterion)."""

TOOL_TURN_TOKENS = 40
"""Typical output of one tool-calling turn (tokens: the tool name and its arguments)."""

TOOL_RESULT_TOKENS = 400
"""Typical input tokens of one tool result a judge reads back (offline web search: about 1,300 characters)."""

REAL_CALLER = "_sgieval_real_caller"
"""The binding keyword carrying the real judge bound the same way (for its call cache key); never sent."""

REHEARSAL_TOOL = "rehearsal_tool_round"
"""The tool a rehearsal judge calls in each tool round: offered to no one, so the tool loop refuses it."""


@dataclass(frozen=True)
class TokenCounter:
    """Counts tokens of a text: ``name`` says how (``tiktoken o200k_base`` or :data:`APPROXIMATION`)."""

    name: str
    encode: Callable[[str], list[int]] | None = None

    def count(self, text: str) -> int:
        """Tokens of ``text`` (>= 0): the encoding's, else ``ceil(len(text) / 4)``."""
        return len(self.encode(text)) if self.encode is not None else math.ceil(len(text) / 4)


@functools.lru_cache(maxsize=16)
def _tiktoken(model_name: str) -> TokenCounter:
    """tiktoken's encoding for an OpenAI model (default ``o200k_base``), else the approximation."""
    try:
        import tiktoken

        try:
            enc = tiktoken.encoding_for_model(model_name)
        except KeyError:
            enc = tiktoken.get_encoding("o200k_base")
    except Exception:  # noqa: BLE001 - no tiktoken, or no encoding file and no network: the approximation is used
        return TokenCounter(APPROXIMATION)
    return TokenCounter(f"tiktoken {enc.name}", functools.partial(enc.encode, disallowed_special=()))


def token_counter(model: str) -> TokenCounter:
    """The token counter of a model string: tiktoken for ``openai:`` models when it loads, else the approximation.

    Args:
        model: a model string.

    Returns:
        A :class:`TokenCounter`.
    """
    ref = ModelRef.parse(model, strict=False)
    return _tiktoken(ref.name.split("/")[-1]) if ref.provider.startswith("openai") else TokenCounter(APPROXIMATION)


def _content_text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else str(content)


def request_text(body: Mapping[str, Any]) -> str:
    """The text of an OpenAI chat-completions request body counted as its input tokens.

    Args:
        body: the request body (``messages``, optional ``tools``, ``response_format``).

    Returns:
        Roles, contents, tool calls, then the JSON of ``tools`` and ``response_format``, joined by newlines.
    """
    parts: list[str] = []
    for m in body.get("messages") or []:
        parts += [str(m.get("role", "")), _content_text(m.get("content"))]
        for tc in m.get("tool_calls") or []:
            fn = tc.get("function") or {}
            parts.append(f"{fn.get('name', '')} {fn.get('arguments', '')}")
    for key in ("tools", "response_format"):
        if body.get(key):
            parts.append(json.dumps(body[key], ensure_ascii=False, separators=(",", ":")))
    return "\n".join(parts)


def request_tokens(body: Mapping[str, Any], counter: TokenCounter) -> int:
    """Input tokens of a request body: ``counter.count(request_text(body))``."""
    return counter.count(request_text(body))


class RehearsalStop(Exception):
    """Raised by a rehearsal judge call after it was recorded (never retried)."""


@dataclass
class CallPlan:
    """One call the run would make; ``kind``: ``answer``, ``tool_round`` or ``reply``."""

    model: str
    role: str
    body: dict[str, Any]
    input_tokens: int
    output_tokens: int
    max_tokens: int | None
    cached: bool = False
    kind: str = "reply"


@dataclass
class Rehearsal:
    """Records the calls of one rehearsal; ``cache`` and ``cache_key``: the run's call cache, looked up only."""

    counter_for: Callable[[str], TokenCounter] = token_counter
    calls: list[CallPlan] = field(default_factory=list)
    cache: Any = None
    cache_key: Callable[[Any, Sequence[BaseMessage]], str] | None = None
    _fillers: dict[tuple[str, int], tuple[str, int]] = field(default_factory=dict, repr=False)

    def _cached(self, caller: Any, messages: Sequence[BaseMessage]) -> Any:
        """The call cache's reply to ``caller`` (a NamedModel) for ``messages``; None without one or without a cache."""
        if self.cache is None or self.cache_key is None or caller is None:
            return None
        return self.cache.get(self.cache_key(caller, messages))

    def _filler_and_tokens(self, model: str, tokens: int) -> tuple[str, int]:
        """A stand-in answer of about ``tokens`` tokens and its token count, made once per (model, tokens)."""
        key = (model, tokens)
        if key not in self._fillers:
            counter = self.counter_for(model)
            words = max(1, tokens)
            text = " ".join(["result"] * words)
            n = counter.count(text)
            if n and n != tokens:
                text = " ".join(["result"] * max(1, round(words * tokens / n)))
            self._fillers[key] = (text, counter.count(text))
        return self._fillers[key]


class RehearsalChat(BaseChatModel):
    """A chat model that records each request instead of sending it; ``real``: the NamedModel it stands for.

    A target's plain call gets its cached reply or a filler; a judge call with tools a call to
    :data:`REHEARSAL_TOOL` (an upper bound); any other judge call raises :class:`RehearsalStop`.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    rehearsal: Any
    label: str
    role: str = "target"
    answer_tokens: int = DEFAULT_TYPICAL_OUTPUT_TOKENS
    real: Any = None
    max_tokens: int | None = None

    @property
    def _llm_type(self) -> str:
        return "sgieval-rehearsal"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        """This model with ``tools`` bound as OpenAI tool dicts.

        Args:
            tools: LangChain tools (or tool dicts).
            kwargs: further binding options (a falsy ``tool_choice`` is not recorded).

        Returns:
            The bound runnable.
        """
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def with_structured_output(self, schema: Any = None, **kwargs: Any) -> Any:
        """This model bound to a ``json_schema`` ``response_format`` for ``schema``, piped into a JSON parser.

        Args:
            schema: the pydantic model (or JSON schema) of the reply.
            kwargs: ignored.

        Returns:
            The runnable.
        """
        extra: dict[str, Any] = {}
        if self.real is not None and self.rehearsal.cache is not None:
            got = native_structured(self.real, schema)  # the real judge bound as the run binds it: its cache key
            if got is not None and got[1] == "json_schema":
                extra[REAL_CALLER] = got[0]
        return self.bind(response_format=json_schema_format(schema), **extra) | JsonOutputParser()

    def _record(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> ChatResult:
        body: dict[str, Any] = {"model": self.label, "messages": [message_dict(m) for m in messages]}
        body |= {k: kwargs[k] for k in ("tools", "tool_choice", "response_format") if kwargs.get(k)}
        rh: Rehearsal = self.rehearsal
        counter = rh.counter_for(self.label)
        n_in = request_tokens(body, counter)
        for m in body["messages"]:  # a refused rehearsal tool round stands for a tool result of typical length
            if m.get("role") == "tool" and REHEARSAL_TOOL in _content_text(m.get("content")):
                n_in += TOOL_RESULT_TOKENS - counter.count(_content_text(m.get("content")))
        structured = "response_format" in body or bool(body.get("tool_choice"))
        if self.role == "target" and not body.get("tools") and not structured:
            hit = rh._cached(self.real, messages)
            if hit is None:
                text, n_out = rh._filler_and_tokens(self.label, self.answer_tokens)
            else:
                text = _content_text(getattr(hit, "content", ""))
                n_out = counter.count(text)
            cached = hit is not None
            rh.calls.append(CallPlan(self.label, self.role, body, n_in, n_out, self.max_tokens, cached, kind="answer"))
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])
        if body.get("tools") and not structured:
            rh.calls.append(
                CallPlan(self.label, self.role, body, n_in, TOOL_TURN_TOKENS, self.max_tokens, kind="tool_round")
            )
            call = {"name": REHEARSAL_TOOL, "args": {}, "id": f"rehearsal_{len(rh.calls)}"}
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content="", tool_calls=[call]))])
        # the call the run sends: the real model bound to the same response format (json_schema), or the real
        # model itself (a text-format verdict); its reply in the call cache is served, not called
        caller = kwargs.get(REAL_CALLER) if "response_format" in body else None if structured else self.real
        cached = self.real is not None and rh._cached(caller, messages) is not None
        rh.calls.append(CallPlan(self.label, self.role, body, n_in, JUDGE_REPLY_TOKENS, self.max_tokens, cached))
        raise RehearsalStop(f"rehearsal: the {self.role} call of {self.label} was recorded, not sent")

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        return self._record(messages, kwargs)

    async def ainvoke(self, input: Any, config: Any = None, *, stop: Any = None, **kwargs: Any) -> Any:
        """The recorded call's reply, without LangChain's callbacks.

        Args:
            input: the messages.
            config: unused.
            stop: unused.
            kwargs: the call's keywords (tools, ``response_format``...), recorded.

        Returns:
            The stand-in AIMessage.

        Raises:
            RehearsalStop: after recording a judge call.
        """
        return self._record(to_messages(input), kwargs).generations[0].message


class RoleEstimate(BaseModel):
    """The estimate of one (model, role): ``output_bound`` at ``max_tokens`` (None: none sent); ``usd`` (None:
    price unknown) at the typical output, ``usd_bound`` at the bound; ``done_calls`` made before, in ``calls``."""

    model: str
    role: str
    calls: int = 0
    cached_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    output_bound: int | None = None
    usd: float | None = None
    usd_bound: float | None = None
    price_source: str | None = None
    done_calls: int = 0
    note: str = ""

    def line(self) -> str:
        """The row as one line.

        Returns:
            ``openai:judge (judge): 100 calls, 83,000 input tokens, about 25,000 output tokens (...), 0.4563 USD``.
        """
        usd = "n/a (price unknown)" if self.usd is None else f"{self.usd:.4f} USD"
        bound = (
            f"at most {self.output_bound:,} at max_tokens" if self.output_bound is not None else "no max_tokens sent"
        )
        cached = f" (+{self.cached_calls} from the call cache)" if self.cached_calls else ""
        return (
            f"{self.model} ({self.role}): {self.calls} calls{cached}, {self.input_tokens:,} input tokens, "
            f"about {self.output_tokens:,} output tokens ({bound}), {usd}" + (f"; {self.note}" if self.note else "")
        )


class Estimate(BaseModel):
    """The estimate of a run before any call: one row per (model, role), targets first."""

    rows: list[RoleEstimate] = Field(default_factory=list)
    items: int = 0
    tokenizer: str = ""
    typical_output: str = ""
    notes: list[str] = Field(default_factory=list)

    @property
    def calls(self) -> int:
        """Calls in all (cache hits excluded)."""
        return sum(r.calls for r in self.rows)

    @property
    def input_tokens(self) -> int:
        return sum(r.input_tokens for r in self.rows)

    @property
    def output_tokens(self) -> int:
        """Typical output tokens in all (cache hits excluded)."""
        return sum(r.output_tokens for r in self.rows)

    @property
    def usd(self) -> float | None:
        """USD in all at the typical output; None when no row has a known price."""
        known = [r.usd for r in self.rows if r.usd is not None]
        return sum(known) if known else None

    def lines(self) -> list[str]:
        """The estimate as lines for the confirmation and ``--dry-run``.

        Returns:
            One line per (model, role), the total, how tokens were counted, the notes.
        """
        if not any(r.calls or r.cached_calls for r in self.rows):
            live = [r for r in self.rows if r.role == "target"]
            if not live:
                return [
                    f"no model call on the {self.items} items: every target is replayed and no metric of the plan "
                    "asks a judge (or no judge is configured)"
                ] + self.notes
            return (
                [f"no model call on the {self.items} items: the live targets would not be called"]
                + [f"{r.model} (target): {r.note or 'no call'}" for r in live]
                + self.notes
            )
        out = [r.line() for r in self.rows]
        usd = self.usd
        unknown = [r.model for r in self.rows if r.usd is None and r.calls]
        total = "n/a" if usd is None else f"{usd:.4f} USD"
        out.append(
            f"total: {self.calls} calls, {self.input_tokens:,} input tokens, about {self.output_tokens:,} output "
            f"tokens, {total}"
            + (f" (no price for {', '.join(dict.fromkeys(unknown))})" if unknown and usd is not None else "")
        )
        out.append(f"tokens counted with {self.tokenizer}; {self.typical_output}")
        out += self.notes
        return out


def priced(row: RoleEstimate, prices: Mapping[str, tuple[float, float]] | None, *, batch: bool = False) -> RoleEstimate:
    """``row`` priced with :func:`sgieval.models.accounting.price_call`.

    Args:
        row: the estimate of one (model, role).
        prices: user prices by model; None: the library's only.
        batch: the calls go through a batch API.

    Returns:
        ``row`` with ``usd``, ``usd_bound`` and ``price_source`` set.
    """
    row.price_source = price_source(row.model, prices)
    row.usd = price_call(row.model, {"input": row.input_tokens, "output": row.output_tokens}, prices, batch=batch)
    if row.output_bound is not None:
        row.usd_bound = price_call(
            row.model, {"input": row.input_tokens, "output": row.output_bound}, prices, batch=batch
        )
    return row


def summarise(
    calls: Sequence[CallPlan],
    order: Sequence[tuple[str, str]],
    prices: Mapping[str, tuple[float, float]] | None,
    *,
    batch: bool = False,
) -> list[RoleEstimate]:
    """Price the recorded calls per (model, role); cached calls are counted apart.

    Args:
        calls: the recorded calls.
        order: (model, role) pairs that come first, even without a call.
        prices: the run's user prices, or None.
        batch: target and judge calls go through batch APIs.

    Returns:
        One :class:`RoleEstimate` per (model, role), in ``order`` then first-call order.
    """
    rows: dict[tuple[str, str], RoleEstimate] = {k: RoleEstimate(model=k[0], role=k[1]) for k in order}
    unbounded: set[tuple[str, str]] = set()
    for c in calls:
        r = rows.setdefault((c.model, c.role), RoleEstimate(model=c.model, role=c.role))
        if c.cached:
            r.cached_calls += 1
            continue
        r.calls += 1
        r.input_tokens += c.input_tokens
        r.output_tokens += c.output_tokens
        r.output_bound = (r.output_bound or 0) + (c.max_tokens or 0)
        if c.max_tokens is None:
            unbounded.add((c.model, c.role))
    for key, r in rows.items():
        if key in unbounded or not r.calls:
            r.output_bound = None
        priced(r, prices, batch=batch and r.role in ("target", "judge"))
    return list(rows.values())
