"""Shared test fixtures: the real SciAidanBench data in ../shared/data and scripted chat models."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage

from sgieval.benchmarks.data import find_benchmark_dir
from sgieval.models.base import NamedModel

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"


@pytest.fixture(scope="session")
def sciaidan_dir() -> Path:
    """The shared SciAidanBench folder (fails loudly when the project's shared data is missing)."""
    return find_benchmark_dir("sciaidanbench")


def scripted(name: str, replies: list[str], role: str = "agent") -> NamedModel:
    """A NamedModel whose chat model answers with ``replies`` in order (then repeats the last)."""
    chat = FakeMessagesListChatModel(responses=[AIMessage(content=r) for r in replies])
    return NamedModel(name=name, role=role, chat=chat, provider=f"scripted-{name}")
