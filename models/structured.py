"""Structured replies from chat models: one parse-and-retry loop for judges and agents (:func:`ask_structured`;
DESIGN.md "Contracts", METRICS.md D.4, D.8).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Literal, Sequence, TypeVar

import json_repair
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, convert_to_openai_messages
from pydantic import BaseModel, ValidationError

from ..core import ModelCallError, final_text, prompt_record, refusal_text, split_reasoning
from .base import NamedModel
from .calls import ainvoke, message_text
from .openai_wire import json_schema_format


T = TypeVar("T")

StructuredMode = Literal["json_schema", "function_calling", "prompt", "text"]
"""How a structured reply was asked for: a native mode, the ``prompt``-embedded schema, or ``text`` the caller
parses."""


def schema_instruction(schema: type[BaseModel]) -> str:
    """The prompt-embedded schema of the fallback path (models without native structured output).

    Args:
        schema: the pydantic model.

    Returns:
        The instruction text.
    """
    return "Reply with a single JSON object and nothing else, matching this JSON schema:\n" + json.dumps(
        schema.model_json_schema(), ensure_ascii=False
    )


LATEX_COMMANDS_NRT = frozenset(
    """
nabla ne neq nu not notin ni newline nolimits nleq ngeq nmid nexists natural nearrow nwarrow nparallel nsubseteq
nsupseteq ncong nsim nprec nsucc nLeftarrow nRightarrow
theta tau tan tanh times to top text textbf textit textrm texttt textsf textstyle textnormal tilde triangle
therefore tfrac tbinom tt tiny triangleq triangledown triangleleft triangleright twoheadrightarrow
rho right rightarrow rightleftharpoons rangle rfloor rceil rbrace rvert rVert rm rmfamily rightharpoonup
""".split()
)
"""LaTeX commands that begin with the valid JSON escapes ``\\n``, ``\\t``, ``\\r`` (kept as LaTeX in JSON)."""

_BACKSLASH_WORD = re.compile(r"(?<!\\)((?:\\\\)*)\\([A-Za-z]+)")


def protect_latex_escapes(text: str) -> str:
    r"""Double the backslash of LaTeX commands in JSON text so a JSON parser keeps them: ``\uXXXX`` stays an
    escape; ``\b``/``\f`` words longer than one letter, ``\n``/``\t``/``\r`` words in :data:`LATEX_COMMANDS_NRT`
    and any other letter are LaTeX.

    Args:
        text: JSON text.

    Returns:
        The text with LaTeX backslashes doubled.
    """
    if "\\" not in text:
        return text

    def fix(m: re.Match[str]) -> str:
        pre, word = m.group(1), m.group(2)
        c = word[0]
        after = m.string[m.start(2) + 1 : m.start(2) + 5]
        escape = (
            (c == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", after))
            or (c in "bf" and len(word) == 1)
            or (c in "nrt" and word not in LATEX_COMMANDS_NRT)
        )
        return m.group(0) if escape else f"{pre}\\\\{word}"

    return _BACKSLASH_WORD.sub(fix, text)


def parse_json_object(text: str) -> Any:
    """The JSON object or list a judge replied with after its reasoning (D.8): the whole reply, else the last
    fenced block, else the text from its first ``{``/``[``, repaired with ``json_repair``.

    Args:
        text: the reply text.

    Returns:
        The parsed object or list.

    Raises:
        ValueError: the text holds no JSON value.
    """
    text = protect_latex_escapes(final_text(text or ""))
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        # a reply that is one JSON value wins over fences quoted inside its strings
        with contextlib.suppress(ValueError):
            obj = json.loads(stripped)
            if isinstance(obj, (dict, list)) and obj not in ({}, []):
                return obj
    fenced = re.findall(r"```(?:json)?\s*(.*?)```", text, flags=re.S)
    for c in fenced[::-1] + [text]:
        start = min([i for i in (c.find("{"), c.find("[")) if i >= 0], default=-1)
        if start < 0:
            continue
        try:
            obj = json_repair.loads(c[start:])
        except Exception:  # noqa: BLE001
            continue
        if isinstance(obj, (dict, list)) and obj not in ({}, []):
            return obj
    raise ValueError("no JSON object found in the reply")


_REFUSAL_HINTS = (
    "http 400",
    "http 404",
    "http 422",
    "response_format",
    "json_schema",
    "not supported",
    "unsupported",
    "tool_choice",
)


def native_structured(model: NamedModel, schema: type[BaseModel]) -> tuple[NamedModel, StructuredMode] | None:
    """``model`` with its chat model bound to ``schema`` by ``with_structured_output``, and the mode it uses; None
    without native structured output."""
    chat = model.chat
    try:
        runnable = chat.with_structured_output(schema)
    except (NotImplementedError, TypeError, ValueError, AttributeError, ImportError):
        return None
    first = getattr(runnable, "first", None)
    kwargs = getattr(first, "kwargs", None)
    bound: Any = getattr(first, "bound", None)
    if first is None or not isinstance(kwargs, dict) or bound is not chat:
        return None
    if "response_format" in kwargs:
        mode: StructuredMode = "json_schema"
        rf = kwargs["response_format"]
        if isinstance(rf, type) and issubclass(rf, BaseModel):
            # LangChain's OpenAI binding passes the class, and the SDK then parses the reply itself (a reply
            # that is not bare JSON fails the call instead of being a parse error we retry), and a class is
            # no cache key: send the JSON schema as plain data instead.
            first = chat.bind(**{**kwargs, "response_format": json_schema_format(rf)})
    elif "tools" in kwargs:
        mode = "function_calling"
    else:
        return None
    return dataclasses.replace(model, chat=first), mode


def _native_text(out: Any, mode: StructuredMode) -> str:
    """The JSON text of a native reply: the content, or the raw arguments of the forced tool call."""
    if mode == "function_calling":
        for rc in (getattr(out, "additional_kwargs", None) or {}).get("tool_calls") or []:
            args = (rc.get("function") or {}).get("arguments") if isinstance(rc, dict) else None
            if isinstance(args, str) and args.strip():
                return args
        for tc in getattr(out, "tool_calls", None) or []:
            return json.dumps(tc.get("args") or {}, ensure_ascii=False)
    return message_text(out)


@dataclass
class StructuredReply(Generic[T]):
    """Outcome of :func:`ask_structured`: ``parsed`` (None on failure, ``error`` says why), ``note`` (why the native
    path was left), ``refused`` (D.17), ``prompt`` (the first call's prompt record), ``prompts`` (every attempt's)."""

    model: str
    parsed: T | None
    raw: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    attempts: int = 0
    error: str | None = None
    mode: StructuredMode = "prompt"
    note: str = ""
    call_failed: bool = False
    refused: bool = False
    prompt: dict[str, Any] | None = None
    prompts: list[dict[str, Any]] = field(default_factory=list)


def sent_prompt(
    messages: Sequence[BaseMessage],
    mode: StructuredMode,
    *,
    chat: Any = None,
    tools: Sequence[dict[str, Any]] | None = None,
    bound: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The prompt record (:func:`sgieval.core.prompt_record`) of ``messages`` sent in ``mode`` as the provider
    received it (from the request body when ``chat`` has ``sent_payload``).

    Args:
        messages: the messages sent.
        mode: the structured-output mode used.
        chat: the chat model they were sent to (None: the OpenAI-style conversion).
        tools: the tool definitions sent with them, None or [] for none.
        bound: the call's keywords as bound to the chat model, for a native mode.

    Returns:
        The prompt record.
    """
    kwargs = dict(bound or {}) if mode in ("json_schema", "function_calling") else {}
    build = getattr(chat, "sent_payload", None)
    if callable(build):
        body = build(list(messages), **kwargs)
        sent = [dict(m) for m in body.get("messages") or []]
    else:
        body = kwargs
        sent = [dict(m) for m in convert_to_openai_messages(list(messages))]
    fmt: dict[str, Any] | None = None
    choice: Any = None
    if mode == "json_schema" and isinstance(body.get("response_format"), dict):
        fmt = body["response_format"]
    elif mode == "function_calling":
        tools = [dict(t) for t in body.get("tools") or []] or tools
        choice = body.get("tool_choice")
    return prompt_record(sent, fmt, tools, tool_choice=choice)


def _with_system(msgs: list[BaseMessage], extra: str) -> list[BaseMessage]:
    if not extra:
        return msgs
    if msgs and isinstance(msgs[0], SystemMessage):
        return [SystemMessage(content=f"{msgs[0].content}\n\n{extra}"), *msgs[1:]]
    return [SystemMessage(content=extra), *msgs]


async def ask_structured(
    model: NamedModel,
    messages: Sequence[BaseMessage],
    schema: type[BaseModel] | None = None,
    *,
    parse: Callable[[str], T] | None = None,
    max_attempts: int = 3,
    system_note: str = "",
    retry_hint: str = "Reply again with only the JSON object.",
    native: bool = True,
    label: str = "model",
    as_given: bool = False,
) -> StructuredReply[T]:
    """Ask ``model`` for a ``schema`` object (or a value ``parse`` reads from its final text): the native mode
    first, else the prompt-embedded schema (also when the server refuses the native one).  A reply that does not
    parse is asked again with the error; model and parse failures are returned, never raised.

    Args:
        model: the model asked.
        messages: the prompt.
        schema: the pydantic model of the reply.
        parse: a text parser instead of a schema.
        max_attempts: most tries (>= 1).
        system_note: appended to the system prompt (e.g. the judge's data notice).
        retry_hint: the instruction added to a retry.
        native: try the provider's native structured output first.
        label: the caller's name in failure reasons.
        as_given: send ``messages`` as given (their system message already carries notes and schema).

    Returns:
        The StructuredReply.

    Raises:
        ValueError: neither ``schema`` nor ``parse`` is given.
    """
    if schema is None and parse is None:
        raise ValueError("ask_structured needs a schema or a parse function")
    base = list(messages) if as_given else _with_system(list(messages), system_note)
    reply: StructuredReply[T] = StructuredReply(model.name, None, mode="text" if parse is not None else "prompt")
    a = _Asking(model, schema, parse, as_given, base, model, [], reply)
    if parse is None and native and not {"response_format", "tools"} & set(model.dropped or {}):
        got = native_structured(model, schema)  # type: ignore[arg-type]
        if got is not None:
            a.caller, reply.mode = got
    a.msgs = a.base if reply.mode != "prompt" else a.with_schema(a.base)
    reply.prompt = a.sent()
    attempt = 0
    while attempt < max_attempts:
        attempt += 1
        reply.attempts = attempt
        sent = reply.prompt if attempt == 1 and reply.prompt is not None else a.sent()
        try:
            out = await ainvoke(a.caller, a.msgs)
        except ModelCallError as e:
            if a.native() and any(h in e.message.lower() for h in _REFUSAL_HINTS):
                a.to_prompt(e.message)
                reply.prompt = sent_prompt(a.msgs, "prompt", chat=model.chat)
                attempt -= 1
                continue
            reply.error, reply.call_failed = f"{label} call failed: {e.message}", True
            reply.prompts.append(sent)
            return reply
        refused = [p for p in ("response_format", "tools", "tool_choice") if p in (a.caller.dropped or {})]
        if a.native() and refused:
            # ainvoke dropped the format after the server's HTTP 400 naming it: the reply was asked without
            # it; read it as text, and ask any retry with the prompt-embedded schema
            sent = sent_prompt(a.msgs, "prompt", chat=model.chat)
            a.to_prompt(a.caller.dropped[refused[0]])
            reply.prompt = sent if attempt == 1 else reply.prompt
        reply.prompts.append(sent)
        if a.read(out, attempt, label, retry_hint):
            return reply
    return reply


@dataclass
class _Asking:
    """The state of one :func:`ask_structured`: the model called, its mode and the messages of the next try."""

    model: NamedModel
    schema: Any
    parse: Any
    as_given: bool
    base: list[BaseMessage]
    caller: NamedModel
    msgs: list[BaseMessage]
    reply: StructuredReply

    def native(self) -> bool:
        return self.reply.mode in ("json_schema", "function_calling")

    def with_schema(self, msgs: list[BaseMessage]) -> list[BaseMessage]:
        return msgs if self.as_given else _with_system(msgs, schema_instruction(self.schema))

    def sent(self) -> dict[str, Any]:
        bound = getattr(self.caller.chat, "kwargs", None)
        return sent_prompt(self.msgs, self.reply.mode, chat=self.model.chat, bound=bound)

    def to_prompt(self, why: str) -> None:
        """Switch to the prompt-embedded schema after the server refused the native mode."""
        self.reply.note = f"native {self.reply.mode} refused ({why[:200]}); prompt-embedded schema used"
        self.caller, self.reply.mode = self.model, "prompt"
        self.msgs = self.with_schema(self.base)

    def read(self, out: Any, attempt: int, label: str, retry_hint: str) -> bool:
        """Read reply ``out``; True when done (parsed or refused), else the next try carries the parse error."""
        reply = self.reply
        refusal = refusal_text(out)
        if refusal is not None:  # METRICS.md D.17: recorded with its text; the same prompt is not asked again
            reply.raw.append(refusal)
            reply.reasoning.append("")
            reply.refused = True
            reply.error = f"refused: {refusal or '(the provider gave no refusal text)'}"
            return True
        text = _native_text(out, reply.mode) if self.native() else message_text(out)
        reply.raw.append(text)
        reply.reasoning.append(split_reasoning(text)[0] or "")
        try:
            if self.parse is not None:
                reply.parsed = self.parse(final_text(text))
            else:
                reply.parsed = self.schema.model_validate(parse_json_object(text))
            reply.error = None
            return True
        except (ValueError, ValidationError) as e:
            err = str(e).replace("\n", " ")[:500]
            reply.error = f"unparsable {label} reply after {attempt} attempt(s): {err}"
            retry = HumanMessage(content=f"Your reply could not be parsed: {err}\n{retry_hint}")
            self.msgs = self.msgs + [AIMessage(content=text), retry]
            return False
