"""Models a request names: :func:`check_named_models` stops a run whose request names a model with no stored responses
that is not a target (it would quietly rank other models), naming the flag that runs it live."""

from __future__ import annotations

import re

from ..core import InputError, ModelRef

# a model name of a common family in free text (gpt-4.1, o3-mini, claude-3.5-sonnet, llama3.3, ...), as a word
MODEL_MENTION = re.compile(
    r"(?<![\w./:-])("
    r"gpt[- ]?\d[\w.-]*|gpt-?4o[\w.-]*|chatgpt[\w.-]*|o[1-9](?:-(?:mini|pro|preview|high|low))*"
    r"|claude[\w.-]*|gemini[\w.-]*|gemma[\w.-]*|llama[\w.-]*|qwen[\w.-]*|qwq[\w.-]*|mistral[\w.-]*"
    r"|mixtral[\w.-]*|deepseek[\w.-]*|phi-?\d[\w.-]*|grok[\w.-]*|command-r[\w.+-]*|smollm[\w.-]*|kimi[\w.-]*"
    r")(?![\w:/])",
    re.I,
)

_PROVIDER = {
    "gpt": "openai", "chatgpt": "openai", "o": "openai", "claude": "anthropic", "gemini": "google_genai",
    "gemma": "ollama", "llama": "ollama", "qwen": "ollama", "qwq": "ollama", "mistral": "mistralai",
    "mixtral": "mistralai", "deepseek": "deepseek", "phi": "ollama", "grok": "xai", "command": "cohere",
    "smollm": "local", "kimi": "openai",
}  # fmt: skip


def model_mentions(request: str) -> list[str]:
    """Model names in ``request``, in order, lower-cased, once each: "How good is GPT-4.1?" -> ["gpt-4.1"]."""
    names = (m.group(1).rstrip(".-").lower().replace(" ", "-") for m in MODEL_MENTION.finditer(request or ""))
    return [n for n in dict.fromkeys(names) if n]


def mention_covered(mention: str, names: list[str]) -> bool:
    """Whether ``mention`` is one of ``names``: the same bare name, a provider-less form ("gpt-4o" names ``openai/4o``)
    or a 4+ letter family without a version ("llama" names ``llama3.3:latest``)."""
    m = mention.lower()
    for n in names:
        try:  # the model's identity without an Ollama size tag: llama3.1:8b is named by "llama3.1"
            bare = ModelRef.parse(n).bare
        except ValueError:
            bare = n.lower()
        if not bare:
            continue
        if m == bare or m == n.lower():
            return True
        if re.fullmatch(rf"[a-z]+-?{re.escape(bare)}", m) and not bare.isalpha():  # gpt-4o -> openai/4o
            return True
        family = re.match(r"[a-z]{4,}", bare)
        if family and m == family.group(0):  # "llama" -> llama3.3
            return True
    return False


def live_model_string(mention: str) -> str:
    """The ``--models`` string that runs ``mention`` live, provider guessed from the family (``ollama:llama3.1``)."""
    family = re.match(r"[a-z]+", mention.lower())
    provider = _PROVIDER.get(family.group(0) if family else "", "openai")
    return f"{provider}:{mention}"


def check_named_models(request: str, targets: list[str], stored: list[str]) -> None:
    """Raise InputError when ``request`` names a model neither ``stored`` nor among ``targets``, naming the stored
    models and the ``--models`` flag that runs it live."""
    missing = [m for m in model_mentions(request) if not mention_covered(m, stored) and not mention_covered(m, targets)]
    if not missing:
        return
    who = ", ".join(missing)
    have = ", ".join(stored) if stored else "none"
    verb = "has" if len(missing) == 1 else "have"
    target_note = f"; the targets are {', '.join(targets)}" if targets else ""
    live = ",".join(live_model_string(m) for m in missing)
    raise InputError(
        f"{who} {verb} no stored responses (stored: {have}){target_note}, so the run would answer about other models",
        what="request",
        fix=f"run it live with --models {live} (an OpenAI-compatible server: --base-url), or ask about a stored model",
    )
