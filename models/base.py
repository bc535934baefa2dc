"""Named chat models by role (DESIGN.md "Models and roles")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["target", "judge", "agent"]


@dataclass
class NamedModel:
    """A chat model bound to a role.

    ``name`` is the model string the user gave (``replay:o1-mini``,
    ``openai:gpt-4.1``, ``local:smollm2``) and is what records and reports
    show.  ``chat`` is a LangChain ``BaseChatModel`` (None for replay-only
    targets, which are served by ``replay``).  ``provider`` keys the
    per-provider concurrency limit.  ``smoke_test`` marks models whose scores
    are smoke-test quality (the embedded SmolLM2); the report says so.
    ``params`` are the sampling parameters actually sent (``temperature``,
    ``reasoning_effort``); ``dropped`` maps each parameter the run asked for
    but this model does not get to the reason (its family rejects it, or its
    server answered HTTP 400 naming it; :mod:`sgieval.models.params`).
    """

    name: str
    role: Role
    chat: Any = None
    replay: Any = None
    provider: str = ""
    smoke_test: bool = False
    params: dict[str, Any] = field(default_factory=dict)
    dropped: dict[str, str] = field(default_factory=dict)

    @property
    def is_replay(self) -> bool:
        return self.replay is not None
