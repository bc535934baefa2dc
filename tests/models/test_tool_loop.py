"""The one tool loop (sgieval.models.tool_loop): budget, refusals, nudges, done()."""

from __future__ import annotations

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage

from sgieval.models.base import NamedModel
from sgieval.models.tool_loop import run_tool_loop


def call(name, args, cid):
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": cid}])


def model(replies):
    chat = FakeMessagesListChatModel(responses=replies)
    return NamedModel(name="m", role="agent", chat=chat, provider="fake-loop"), chat


async def test_budget_counts_refused_calls_and_stops():
    m, chat = model([call("add", {"x": 1}, "c1"), call("nope", {}, "c2"), call("add", {"x": 2}, "c3")])
    ran = []

    async def execute(name, args):
        ran.append(args["x"])
        return f"ok {args['x']}"

    out = await run_tool_loop(m, [HumanMessage(content="go")], chat, execute, offered=["add"], max_calls=2)
    assert ran == [1] and out.stopped == "budget" and chat.i == 2
    assert [(c.name, c.refused) for c in out.calls] == [("add", False), ("nope", True)]
    assert out.calls[1].content == "Error: no tool 'nope'; tools: ['add']"
    assert [m_.content for m_ in out.messages if m_.type == "tool"] == ["ok 1", "Error: no tool 'nope'; tools: ['add']"]


async def test_over_budget_call_in_one_turn_is_refused():
    two = AIMessage(
        content="",
        tool_calls=[{"name": "add", "args": {"x": 1}, "id": "a"}, {"name": "add", "args": {"x": 2}, "id": "b"}],
    )
    m, chat = model([two])

    async def execute(name, args):
        return "ok"

    out = await run_tool_loop(m, [], chat, execute, offered=["add"], max_calls=1)
    assert [c.refused for c in out.calls] == [False, True]
    assert out.calls[1].content.startswith("Error: tool call budget of 1 calls is used up")


async def test_text_reply_nudged_until_done_or_turns():
    m, chat = model([AIMessage(content="thinking"), call("submit", {"v": 3}, "s"), AIMessage(content="late")])
    got = []

    async def execute(name, args):
        got.append(args["v"])
        return "received"

    out = await run_tool_loop(
        m, [], chat, execute, offered=["submit"], on_text=lambda msg: "call submit", done=lambda: bool(got)
    )
    assert got == [3] and out.stopped == "finished" and chat.i == 2
    assert out.messages[1].content == "call submit"
    m2, chat2 = model([AIMessage(content="no")] * 5)
    out2 = await run_tool_loop(m2, [], chat2, execute, offered=[], on_text=lambda msg: "again", max_turns=3)
    assert out2.stopped == "turns" and chat2.i == 3


async def test_plain_answer_stops_by_default():
    m, chat = model([AIMessage(content="final")])

    async def execute(name, args):
        raise AssertionError("no tool call expected")

    out = await run_tool_loop(m, [], chat, execute, offered=["x"])
    assert out.stopped == "answered" and out.last.content == "final"
