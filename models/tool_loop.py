"""The one tool-calling loop of sgieval: rubric judges
(:func:`sgieval.metric_pool.rubric.tool_loop`, web search / Python checks),
the customisation agent (the same, with ``read_pdf``) and the questioning
agent (catalog tools and a ``submit_selection_plan`` tool) all run through
:func:`run_tool_loop`.

Every model turn goes through :func:`sgieval.models.calls.ainvoke` (budget,
concurrency, retries, ledger).  What a tool does is the caller's
``execute(name, args)``; the loop only keeps the conversation, the call
budget and the refusals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from .base import NamedModel
from .calls import ainvoke, message_text

__all__ = ["run_tool_loop", "ToolLoopOutcome", "ToolCallRecord", "bind_tools", "tool_definitions"]


@dataclass
class ToolCallRecord:
    """One tool call the model asked for: ``name``, ``args``, ``content`` (what
    the model was told), ``refused`` (not run: budget used up or tool not
    offered)."""

    name: str
    args: dict[str, Any]
    content: str
    refused: bool = False


@dataclass
class ToolLoopOutcome:
    """``messages`` (the conversation, ending with the model's last reply),
    ``calls`` (every tool call, in order), ``last`` (the model's last reply),
    ``stopped`` (why the loop ended: ``"answered"`` (a reply without tool
    calls that ``on_text`` accepted), ``"finished"`` (``done()`` became true),
    ``"budget"`` (``max_calls`` calls attempted) or ``"turns"`` (``max_turns``
    model turns))."""

    messages: list[BaseMessage]
    calls: list[ToolCallRecord] = field(default_factory=list)
    last: AIMessage | None = None
    stopped: str = ""


def bind_tools(model: NamedModel, tools: Sequence[Any]) -> Any | None:
    """``model.chat.bind_tools(tools)``, or None when the chat model has no
    tool calling (``bind_tools`` missing or raising NotImplementedError /
    TypeError / ValueError).

    Args:
        model: the model.
        tools: LangChain tools.

    Returns:
        The bound chat model, or None.
    """
    chat = model.chat
    if chat is None or not hasattr(chat, "bind_tools"):
        return None
    try:
        return chat.bind_tools(list(tools))
    except (NotImplementedError, AttributeError, TypeError, ValueError):
        return None


def tool_definitions(bound: Any, tools: Sequence[Any]) -> list[dict[str, Any]]:
    """The definitions of ``tools`` as a call through ``bound`` sends them: the ``tools`` keyword the chat
    model's ``bind_tools`` bound (a ``RunnableBinding``'s ``kwargs``: for an OpenAI-compatible model
    ``[{"type": "function", "function": {"name", "description", "parameters"}}, ...]``, for Anthropic its
    ``{"name", "description", "input_schema"}`` form), else LangChain's OpenAI form of each tool
    (``convert_to_openai_tool``) for a model that keeps its tools elsewhere.

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
    from langchain_core.utils.function_calling import convert_to_openai_tool

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
    """Let ``model`` (its chat model bound to the tools: ``bound``) call tools.

    Each turn: invoke the model; a reply with tool calls has each call run by
    ``execute(name, args)`` (its string result goes back as a ToolMessage)
    unless ``max_calls`` calls were already attempted (refused: "budget ...
    used up") or ``name`` is not in ``offered`` (refused: "no tool ...");
    refused calls count toward ``max_calls``, so a model that keeps calling a
    tool it was not offered cannot loop for ever (``unknown_tool(name, args)``
    words that refusal when given).  The loop ends when
    ``done()`` is true after a turn, when ``max_calls`` calls were attempted,
    after ``max_turns`` turns, or at a reply without tool calls: then
    ``on_text(reply)`` (default: stop) returns None to stop or a message to
    send back (e.g. "call submit_... with the plan") and go on.
    Raises ModelCallError when a model call fails after its retries.

    Args:
        model: the model.
        messages: the conversation so far.
        bound: the chat model bound to the tools.
        execute: ``execute(name, args) -> result text``.
        offered: the tool names the model may call.
        max_calls: most tool calls (None: no limit).
        max_turns: most model turns (>= 1).
        on_text: see above.
        done: see above.
        unknown_tool: see above.

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
            name, args, cid = tc.get("name", ""), dict(tc.get("args") or {}), tc.get("id") or ""
            if max_calls is not None and len(out.calls) >= max_calls:
                content = (
                    f"Error: tool call budget of {max_calls} calls is used up; "
                    "answer with the evidence gathered so far."
                )
                out.calls.append(ToolCallRecord(name, args, content, refused=True))
            elif name not in names:
                content = (
                    unknown_tool(name, args) if unknown_tool else f"Error: no tool {name!r}; tools: {sorted(names)}"
                )
                out.calls.append(ToolCallRecord(name, args, content, refused=True))
            else:
                content = await execute(name, args)
                out.calls.append(ToolCallRecord(name, args, content))
            msgs.append(ToolMessage(content=content, tool_call_id=cid, name=name))
        if done is not None and done():
            out.stopped = "finished"
            return out
        if max_calls is not None and len(out.calls) >= max_calls:
            out.stopped = "budget"
            return out
    out.stopped = "turns"
    return out
