"""Models named in a request: a model with no stored responses stops the run before any work."""

from __future__ import annotations

import pytest

from sgieval.agents.request_models import check_named_models, live_model_string, mention_covered, model_mentions
from sgieval.core import InputError

STORED = ["llama3.3:latest", "mistral:latest", "o1-mini", "openai/4o", "phi4:latest", "qwen2.5:latest"]


def test_model_mentions():
    assert model_mentions("How good is gpt-4.1 at physics?") == ["gpt-4.1"]
    assert model_mentions("How good is GPT-4.1.") == ["gpt-4.1"]
    assert model_mentions("Is o1-mini more creative than Mistral in physics?") == ["o1-mini", "mistral"]
    assert model_mentions("Compare claude-3.5-sonnet, Llama3.1 and o3") == ["claude-3.5-sonnet", "llama3.1", "o3"]
    assert model_mentions("Which model is the most creative in chemistry? CO2 and H2O, 10 questions") == []


def test_mention_covered_by_stored_names_and_targets():
    assert mention_covered("gpt-4o", STORED)  # openai/4o
    assert mention_covered("llama", STORED) and mention_covered("llama3.3", STORED)
    assert not mention_covered("llama3.1", STORED)
    assert not mention_covered("gpt-4.1", STORED)
    assert mention_covered("gpt-4.1", ["openai:gpt-4.1"])
    assert mention_covered("claude-3.5-sonnet", ["anthropic:claude-3.5-sonnet"])
    assert live_model_string("gpt-4.1") == "openai:gpt-4.1"
    assert live_model_string("claude-3.5-sonnet") == "anthropic:claude-3.5-sonnet"


@pytest.mark.parametrize(
    "request_, missing, live",
    [
        ("How good is gpt-4.1 at physics?", "gpt-4.1 has", "--models openai:gpt-4.1 "),
        ("Is llama3.1 more creative than o1-mini?", "llama3.1 has", "--models ollama:llama3.1 "),
        (
            "Compare gpt-4.1 and claude-3.5-sonnet",
            "gpt-4.1, claude-3.5-sonnet have",
            "--models openai:gpt-4.1,anthropic:claude-3.5-sonnet ",
        ),
    ],
)
def test_unstored_model_in_request_is_refused(request_, missing, live):
    with pytest.raises(InputError) as e:
        check_named_models(request_, [], STORED)
    line = e.value.one_line()
    assert line.startswith(
        f"request: {missing} no stored responses (stored: llama3.3:latest, mistral:latest, o1-mini, "
        "openai/4o, phi4:latest, qwen2.5:latest), so the run would answer about other models."
    )
    assert live in line and "\n" not in line and e.value.exit_code == 2


def test_named_model_given_as_target_or_stored_is_fine():
    check_named_models("How good is gpt-4.1 at physics?", ["openai:gpt-4.1"], STORED)
    check_named_models("How good is llama3.3 at physics?", [], STORED)
    check_named_models("How does GPT-4o do?", [], STORED)
    check_named_models("Which model is the most creative in chemistry?", [], [])
