"""The metric-definition chat behind ``sgieval metric define``: a ``StateGraph`` (describe -> propose -> review, then
revise -> review until "done" saves or "cancel" ends) that pauses with ``interrupt`` for the user.  Payloads:
``{"kind": "describe", "message"}`` and ``{"kind": "review", "message", "rubric", "yaml"}``; resume with
``Command(resume=<user text>)``."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, Awaitable, Callable, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from ..agents import CANCEL_RE, DONE_RE, NamedModel, propose_rubric, revise_rubric, save_defined_rubric
from ..core import InputError, Rubric

DESCRIBE_PROMPT = "Describe the metric: what quality of a response should it measure?"
MAX_TURNS = 50


class MetricChatState(TypedDict, total=False):
    """Checkpointed chat state; ``history``: [{"role": "user"|"agent", "text"}]; ``status``: open, done, cancelled."""

    description: str
    rubric: dict[str, Any]
    message: str
    request: str
    history: list[dict[str, str]]
    status: str
    saved: str


def build_metric_chat(
    *, agent: NamedModel | None = None, name: str | None = None, save_dir: str | Path | None = None,
    checkpointer: Any = None,
):  # fmt: skip
    """Compile the metric-definition chat graph behind ``sgieval metric define``.

    Args:
        agent: the LLM for the proposal and the revisions; None: the offline paths.
        name: the metric's name (default: from the proposal).
        save_dir: folder for the YAML (default: the user rubric folder, $SGIEVAL_RUBRIC_DIR).
        checkpointer: a LangGraph checkpointer (default an in-memory saver: interrupts need one).

    Returns:
        The compiled graph (a LangGraph ``CompiledStateGraph``).
    """

    def _hist(state: MetricChatState, *turns: tuple[str, str]) -> list[dict[str, str]]:
        return [*(state.get("history") or []), *({"role": r, "text": t} for r, t in turns)]

    async def describe(state: MetricChatState) -> dict[str, Any]:
        if (state.get("description") or "").strip():
            return {"status": "open"}
        text = str(interrupt({"kind": "describe", "message": DESCRIBE_PROMPT})).strip()
        if CANCEL_RE.match(text):
            return {"status": "cancelled", "history": _hist(state, ("user", text))}
        return {"description": text, "status": "open", "history": _hist(state, ("user", text))}

    async def propose(state: MetricChatState) -> dict[str, Any]:
        rubric, msg = await propose_rubric(state["description"], agent=agent, name=name)
        return {"rubric": rubric.model_dump(mode="json"), "message": msg, "history": _hist(state, ("agent", msg))}

    async def review(state: MetricChatState) -> dict[str, Any]:
        shown = {"kind": "review", "message": state.get("message", ""), "rubric": state["rubric"]}
        text = str(interrupt({**shown, "yaml": Rubric.model_validate(state["rubric"]).to_yaml()})).strip()
        status = "done" if DONE_RE.match(text) else "cancelled" if CANCEL_RE.match(text) else "open"
        return {"request": text, "status": status, "history": _hist(state, ("user", text))}

    async def revise(state: MetricChatState) -> dict[str, Any]:
        rubric, msg = await revise_rubric(Rubric.model_validate(state["rubric"]), state["request"], agent=agent)
        return {"rubric": rubric.model_dump(mode="json"), "message": msg, "history": _hist(state, ("agent", msg))}

    async def save(state: MetricChatState) -> dict[str, Any]:
        path, note = save_defined_rubric(Rubric.model_validate(state["rubric"]), name=name, folder=save_dir)
        msg = f"saved to {path}{note}"
        return {"saved": str(path), "message": msg, "history": _hist(state, ("agent", msg))}

    g = StateGraph(MetricChatState)
    for n, f in (("describe", describe), ("propose", propose), ("review", review), ("revise", revise), ("save", save)):
        g.add_node(n, f)
    g.add_edge(START, "describe")
    g.add_conditional_edges(
        "describe", lambda s: END if s.get("status") == "cancelled" else "propose", ["propose", END]
    )
    g.add_edge("propose", "review")
    after_review = {"done": "save", "cancelled": END}
    g.add_conditional_edges(
        "review", lambda s: after_review.get(s.get("status", ""), "revise"), ["save", "revise", END]
    )
    g.add_edge("revise", "review")
    g.add_edge("save", END)
    return g.compile(checkpointer=checkpointer if checkpointer is not None else InMemorySaver())


async def run_metric_chat(
    answer: Callable[[dict[str, Any]], str | Awaitable[str]], *, agent: NamedModel | None = None,
    name: str | None = None, save_dir: str | Path | None = None, description: str | None = None,
    on_message: Callable[[dict[str, Any]], None] | None = None, max_turns: int = MAX_TURNS,
) -> MetricChatState:  # fmt: skip
    """Drive the chat to the end, each interrupt payload answered by ``answer(payload) -> user text``.

    Args:
        answer: the user's side (sync or async).
        agent: the LLM for the proposal and the revisions; None: the offline paths.
        name: the metric's name (default: from the proposal).
        save_dir: folder for the YAML (default: the user rubric folder).
        description: the metric's description; given, it skips the first question.
        on_message: called with each message the chat shows.
        max_turns: most user turns (>= 1).

    Returns:
        The final state: ``status`` "done" with ``saved`` (the YAML path), or "cancelled".

    Raises:
        InputError: after ``max_turns`` user turns.
    """
    graph = build_metric_chat(agent=agent, name=name, save_dir=save_dir)
    config = {"configurable": {"thread_id": f"metric-define-{uuid.uuid4().hex[:8]}"}}
    result = await graph.ainvoke({"description": description or ""}, config)
    turns = 0
    while "__interrupt__" in result:
        turns += 1
        if turns > max_turns:
            fix = "say 'done' to save or 'cancel' to quit"
            raise InputError(f"no decision after {max_turns} turns", what="sgieval metric define", fix=fix)
        payload = result["__interrupt__"][0].value
        if on_message is not None:
            on_message(payload)
        text = answer(payload)
        if hasattr(text, "__await__"):
            text = await text  # type: ignore[misc]
        result = await graph.ainvoke(Command(resume=str(text)), config)
    return result  # type: ignore[return-value]
