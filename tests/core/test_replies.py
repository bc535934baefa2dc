"""Reasoning text and reply statuses (METRICS.md D.8, D.10): core/replies.py and Response.split_reasoning."""

from __future__ import annotations

import pytest

from sgieval.core import Response, final_text, join_reasoning, reply_status, split_reasoning

ISSUE_REPLY = "The options... <answer>B</answer>. Wait, no... so D.\n</think>\n\nD"


@pytest.mark.parametrize(
    "text, reasoning, final",
    [
        # A reply whose reasoning (no opening tag) drafts another answer
        (ISSUE_REPLY, "The options... <answer>B</answer>. Wait, no... so D.", "D"),
        ("<think>6 x 7</think>\n42", "6 x 7", "42"),
        # several blocks: everything up to the LAST </think> is reasoning
        (
            "<think>a</think> draft <answer>1</answer><think>b</think>\n<answer>2</answer>",
            "a</think> draft <answer>1</answer><think>b",
            "<answer>2</answer>",
        ),
        # unclosed <think>: the model stopped while reasoning -> no answer
        ("<think>still thinking about B", "still thinking about B", ""),
        ("prefix <think>x", "x", ""),
        # no tag: unchanged, not even stripped (D.1's raw-reply rule still applies)
        ("  none\n", None, "  none\n"),
        # tags are case-sensitive
        ("<THINK>x</THINK> D", None, "<THINK>x</THINK> D"),
        (None, None, ""),
    ],
)
def test_split_reasoning(text, reasoning, final):
    assert split_reasoning(text) == (reasoning, final)
    assert final_text(text) == final


def test_join_reasoning():
    assert join_reasoning("sep", None, " ", "think") == "sep\n\nthink"
    assert join_reasoning(None, "") is None


@pytest.mark.parametrize(
    "finish, final, tools, status",
    [
        ("length", "D", False, "truncated"),
        ("max_tokens", "", False, "truncated"),  # Anthropic's stop reason
        ("stop", "", False, "empty"),
        ("stop", " \n", False, "empty"),
        (None, "", True, "ok"),  # a tool call with no text is a reply
        ("stop", "D", False, "ok"),
        (None, "0", False, "ok"),
    ],
)
def test_reply_status(finish, final, tools, status):
    assert reply_status(finish, final, has_tool_calls=tools) == status


def test_response_split_reasoning():
    r = Response(item_id="i", model="m", text=ISSUE_REPLY, reasoning="server reasoning")
    s = r.split_reasoning()
    assert s.text == "D" and s.status == "ok"
    assert s.reasoning == "server reasoning\n\nThe options... <answer>B</answer>. Wait, no... so D."
    # reasoning only: nothing left to score -> empty (D.10)
    e = Response(item_id="i", model="m", text="<think>only thoughts</think>\n").split_reasoning()
    assert (e.text, e.status, e.reasoning) == ("", "empty", "only thoughts")
    # no tag: the very same object
    plain = Response(item_id="i", model="m", text="D")
    assert plain.split_reasoning() is plain
