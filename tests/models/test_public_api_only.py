"""sgieval uses langchain-core, langchain-openai and openai through their public APIs only: no module imports a
private name or module of theirs, and no code reads or calls a private attribute of their chat-model classes,
save the documented extension points of ``BaseChatModel`` that a chat model implements."""

from __future__ import annotations

import ast

import pytest
from sgieval.tests.conftest import REPO

PACKAGES = ("langchain_core", "langchain_openai", "openai")

EXTENSION_POINTS = {"_agenerate", "_generate", "_stream", "_astream", "_llm_type", "_identifying_params"}
"""``BaseChatModel``'s documented extension points (LangChain's "custom chat model" guide)."""


def _product_modules():
    for p in sorted(REPO.rglob("*.py")):
        rel = p.relative_to(REPO).as_posix()
        if rel.split("/", 1)[0] in ("tests", ".venv", "install", "build") or "/." in "/" + rel:
            continue
        yield rel, ast.parse(p.read_text(encoding="utf-8"))


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_members() -> set[str]:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.runnables import Runnable
    from langchain_openai import ChatOpenAI

    names: set[str] = set()
    for cls in (ChatOpenAI, BaseChatModel, Runnable):
        for klass in cls.__mro__:
            if klass.__module__.split(".")[0] in PACKAGES:
                names |= {n for n in vars(klass) if _private(n)}
    return names - EXTENSION_POINTS


def test_no_private_name_of_langchain_or_openai_is_imported():
    bad = []
    for rel, tree in _product_modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PACKAGES:
                parts = node.module.split(".") + [a.name for a in node.names]
                if any(_private(x) for x in parts):
                    bad.append(f"{rel}:{node.lineno} from {node.module} import {[a.name for a in node.names]}")
            elif isinstance(node, ast.Import):
                bad += [
                    f"{rel}:{node.lineno} import {a.name}"
                    for a in node.names
                    if a.name.split(".")[0] in PACKAGES and any(_private(x) for x in a.name.split("."))
                ]
    assert bad == []


def test_no_private_member_of_their_chat_model_classes_is_used():
    members = _private_members()
    assert {"_get_request_payload", "_create_chat_result", "_convert_input"} <= members  # the check sees them
    bad = [
        f"{rel}:{node.lineno} .{node.attr}"
        for rel, tree in _product_modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in members
    ]
    assert bad == []


def _package_names(tree: ast.AST) -> set[str]:
    """The names a module binds to modules or objects of :data:`PACKAGES` (``import openai``, ``from
    langchain_core import messages as m``, ``from langchain_openai import ChatOpenAI``)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.split(".")[0] in PACKAGES}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PACKAGES:
            out |= {a.asname or a.name for a in node.names}
    return out


def _private_reads(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, name) of every private attribute read through a name bound to one of the packages: ``openai._x``,
    ``langchain_core.callbacks.manager._configure_hooks``, ``ChatOpenAI._get_request_payload``, and the same
    through ``getattr(name, "_x")``."""
    names = _package_names(tree)
    out = []
    for node in ast.walk(tree):
        root, attr = None, None
        if isinstance(node, ast.Attribute) and _private(node.attr):
            root, attr = node.value, node.attr
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr", "setattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _private(node.args[1].value)
        ):
            root, attr = node.args[0], node.args[1].value
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and root.id in names:
            out.append((node.lineno, f"{root.id}...{attr}"))
    return out


@pytest.mark.slow
def test_no_private_attribute_is_read_through_their_modules_or_classes():
    bad = [f"{rel}:{line} {what}" for rel, tree in _product_modules() for line, what in _private_reads(tree)]
    assert bad == []


def test_the_checks_see_a_violation():
    """The parser flags what the old transport did (guards the checks themselves)."""
    tree = ast.parse(
        "from langchain_core.language_models.chat_models import _normalize_messages\n"
        "from openai.lib._parsing._completions import type_to_response_format_param\n"
        "payload = self._get_request_payload(messages)\n"
    )
    imports = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert all(any(_private(x) for x in n.module.split(".") + [a.name for a in n.names]) for n in imports)
    attrs = [n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)]
    assert "_get_request_payload" in _private_members() & set(attrs)
    reads = _private_reads(
        ast.parse(
            "import langchain_core.callbacks.manager as cbm\nfrom openai import AsyncOpenAI\n"
            "hooks = cbm._configure_hooks\nf = getattr(AsyncOpenAI, '_build_request')\nok = cbm.__name__\n"
        )
    )
    assert reads == [(3, "cbm..._configure_hooks"), (4, "AsyncOpenAI..._build_request")]
