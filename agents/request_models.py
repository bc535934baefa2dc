"""Models a request names (never answer a different question silently).

"How good is gpt-4.1 at physics?" names a model.  When that model has no stored responses and is not one of the run's
targets, a run would quietly rank the stored models instead; :func:`check_named_models` stops it before any work with
one line: the model has no stored responses, which models do, and the flag that runs it live (``--models
openai:gpt-4.1``).
"""

from __future__ import annotations

import re

from ..core import InputError, ModelRef

__all__ = ["MODEL_MENTION", "model_mentions", "mention_covered", "check_named_models", "live_model_string"]

MODEL_MENTION = re.compile(
    r"(?<![\w./:-])("
    r"gpt[- ]?\d[\w.-]*|gpt-?4o[\w.-]*|chatgpt[\w.-]*|o[1-9](?:-(?:mini|pro|preview|high|low))*"
    r"|claude[\w.-]*|gemini[\w.-]*|gemma[\w.-]*|llama[\w.-]*|qwen[\w.-]*|qwq[\w.-]*|mistral[\w.-]*"
    r"|mixtral[\w.-]*|deepseek[\w.-]*|phi-?\d[\w.-]*|grok[\w.-]*|command-r[\w.+-]*|smollm[\w.-]*|kimi[\w.-]*"
    r")(?![\w:/])",
    re.I,
)
"""A model name in free text: the common model families (gpt-4.1, o3-mini, claude-3.5-sonnet,
llama3.3, qwen2.5, mistral, deepseek-r1, phi4, gemini-2.5-pro, ...), case-insensitive, as a word of its own."""

_PROVIDER = {
    "gpt": "openai",
    "chatgpt": "openai",
    "o": "openai",
    "claude": "anthropic",
    "gemini": "google_genai",
    "gemma": "ollama",
    "llama": "ollama",
    "qwen": "ollama",
    "qwq": "ollama",
    "mistral": "mistralai",
    "mixtral": "mistralai",
    "deepseek": "deepseek",
    "phi": "ollama",
    "grok": "xai",
    "command": "cohere",
    "smollm": "local",
    "kimi": "openai",
}


def model_mentions(request: str) -> list[str]:
    """Model names in ``request`` in order, lower-cased, duplicates and a sentence-ending dot dropped: "How good is
    GPT-4.1 at physics?" -> ["gpt-4.1"]; "Is o1-mini more creative than mistral?" -> ["o1-mini", "mistral"]."""
    out: list[str] = []
    for m in MODEL_MENTION.finditer(request or ""):
        name = m.group(1).rstrip(".-").lower().replace(" ", "-")
        if name and name not in out:
            out.append(name)
    return out


def mention_covered(mention: str, names: list[str]) -> bool:
    """Whether the model ``mention`` (from :func:`model_mentions`) is one of ``names`` (stored model names or target
    model strings): the same bare name ("gpt-4o" vs "openai:gpt-4o"), a provider-less form ("4o" inside "gpt-4o" names
    ``openai/4o``), or a family name of 4+ letters without a version ("llama" names ``llama3.3:latest``, "llama3.1" does
    not)."""
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
    """The ``--models`` string that runs ``mention`` live: ``openai:gpt-4.1``, ``anthropic:claude-3.5-sonnet``,
    ``ollama:llama3.1`` (provider guessed from the family; the user may change it)."""
    family = re.match(r"[a-z]+", mention.lower())
    provider = _PROVIDER.get(family.group(0) if family else "", "openai")
    return f"{provider}:{mention}"


def check_named_models(request: str, targets: list[str], stored: list[str]) -> None:
    """Raise InputError (exit code 2) when ``request`` names a model that is neither among ``stored`` (models with
    stored responses) nor among ``targets`` (the run's target model strings).  The one-line message names the model, the
    stored ones and the flag to run it live, e.g. "gpt-4.1 has no stored responses (stored: llama3.3:latest, ...); the
    run would rank other models instead. Fix: run it live with --models openai:gpt-4.1 (plus --base-url or
    OPENAI_API_KEY)"."""
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
