"""The one tool-calling loop of sgieval (:func:`run_tool_loop`), for rubric judges and agents: every model turn goes
through :func:`sgieval.models.calls.ainvoke`; the caller's ``execute(name, args)`` runs the tools.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from .base import NamedModel
from .calls import ainvoke, message_text

__all__ = ["run_tool_loop", "ToolLoopOutcome", "ToolCallRecord", "bind_tools", "tool_definitions"]


@dataclass
class ToolCallRecord:
    """One tool call the model asked for: ``content`` is what the model was told; ``refused``: not run."""

    name: str
    args: dict[str, Any]
    content: str
    refused: bool = False


@dataclass
class ToolLoopOutcome:
    """The conversation, every tool call, the last reply and why the loop ended (``stopped``: ``"answered"``,
    ``"finished"``, ``"budget"`` or ``"turns"``)."""

    messages: list[BaseMessage]
    calls: list[ToolCallRecord] = field(default_factory=list)
    last: AIMessage | None = None
    stopped: str = ""


def bind_tools(model: NamedModel, tools: Sequence[Any]) -> Any | None:
    """``model.chat.bind_tools(tools)``, or None when the chat model has no tool calling.

    Args:
        model: the model.
        tools: LangChain tools.

    Returns:
        The bound chat model, or None.
    """
    try:
        return model.chat.bind_tools(list(tools))
    except (NotImplementedError, AttributeError, TypeError, ValueError):
        return None


def tool_definitions(bound: Any, tools: Sequence[Any]) -> list[dict[str, Any]]:
    """The definitions of ``tools`` as a call through ``bound`` sends them (its bound ``tools`` keyword, else the
    OpenAI form of each tool).

    Args:
        bound: what ``bind_tools`` returned.
        tools: the tools bound.

    Returns:
        The tool definitions, JSON-ready, in the order bound.
    """
    kwargs = getattr(bound, "kwargs", None)
    sent = kwargs.get("tools") if isinstance(kwargs, dict) else None
    if isinstance(sent, (list, tuple)) and all(isinstance(t, dict) for t in sent):
        return [dict(t) for t in sent]
    return [convert_to_openai_tool(t) for t in tools]


async def run_tool_loop(
    model: NamedModel,
    messages: Sequence[BaseMessage],
    bound: Any,
    execute: Callable[[str, dict[str, Any]], Awaitable[str]],
    *,
    offered: Sequence[str],
    max_calls: int | None = None,
    max_turns: int = 8,
    on_text: Callable[[AIMessage], str | None] | None = None,
    done: Callable[[], bool] | None = None,
    unknown_tool: Callable[[str, dict[str, Any]], str] | None = None,
) -> ToolLoopOutcome:
    """Let ``model`` call tools until it answers, ``done()``, ``max_calls`` calls or ``max_turns`` turns; a call
    over the budget or of a tool not offered is refused (and counted).

    Args:
        model: the model.
        messages: the conversation so far.
        bound: the chat model bound to the tools.
        execute: ``execute(name, args) -> result text``.
        offered: the tool names the model may call.
        max_calls: most tool calls (None: no limit).
        max_turns: most model turns (>= 1).
        on_text: for a reply without tool calls: None to stop, or a message to send back (default: stop).
        done: stops the loop after a turn when true.
        unknown_tool: the refusal text for a tool not offered.

    Returns:
        The outcome: the conversation, every tool call, the last reply and why the loop stopped.

    Raises:
        ModelCallError: a model call fails after its retries.
    """
    msgs = list(messages)
    out = ToolLoopOutcome(msgs)
    names = set(offered)
    for _turn in range(max_turns):
        reply = await ainvoke(model, msgs, runnable=bound)
        if not isinstance(reply, AIMessage):
            reply = AIMessage(content=message_text(reply))
        msgs.append(reply)
        out.last = reply
        calls = list(reply.tool_calls or [])
        if not calls:
            nudge = on_text(reply) if on_text is not None else None
            if nudge is None:
                out.stopped = "answered"
                return out
            msgs.append(HumanMessage(content=nudge))
            continue
        for tc in calls:
            name, args = tc.get("name", ""), dict(tc.get("args") or {})
            content = await _run_call(out, name, args, execute, names, max_calls, unknown_tool)
            msgs.append(ToolMessage(content=content, tool_call_id=tc.get("id") or "", name=name))
        if done is not None and done():
            out.stopped = "finished"
            return out
        if max_calls is not None and len(out.calls) >= max_calls:
            out.stopped = "budget"
            return out
    out.stopped = "turns"
    return out


async def _run_call(
    out: ToolLoopOutcome,
    name: str,
    args: dict[str, Any],
    execute: Callable[[str, dict[str, Any]], Awaitable[str]],
    names: set[str],
    max_calls: int | None,
    unknown_tool: Callable[[str, dict[str, Any]], str] | None,
) -> str:
    """Run (or refuse) one tool call, recorded in ``out.calls``; its result text."""
    if max_calls is not None and len(out.calls) >= max_calls:
        content = f"Error: tool call budget of {max_calls} calls is used up; answer with the evidence gathered so far."
    elif name not in names:
        content = unknown_tool(name, args) if unknown_tool else f"Error: no tool {name!r}; tools: {sorted(names)}"
    else:
        content = await execute(name, args)
        out.calls.append(ToolCallRecord(name, args, content))
        return content
    out.calls.append(ToolCallRecord(name, args, content, refused=True))
    return content
