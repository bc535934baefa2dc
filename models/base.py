"""Named chat models by role (DESIGN.md "Models and roles")."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..core import ModelRef

Role = Literal["target", "judge", "agent"]


@dataclass
class NamedModel:
    """A chat model bound to a role: ``name`` is the model string the user gave, ``chat`` None for a replay,
    ``provider`` the concurrency key, ``dropped`` parameter -> why it is not sent, ``repeat`` a repeated judge's
    draw, ``max_in_flight`` this model's own concurrency limit."""

    name: str
    role: Role
    chat: Any = None
    replay: Any = None
    provider: str = ""
    smoke_test: bool = False
    params: dict[str, Any] = field(default_factory=dict)
    dropped: dict[str, str] = field(default_factory=dict)
    repeat: int = 0
    ref: ModelRef | None = None
    max_in_flight: int | None = None

    def __post_init__(self) -> None:
        if self.ref is None:
            self.ref = ModelRef.parse(self.name, strict=False)

    @property
    def identity(self) -> str:
        """The model's identity (:attr:`sgieval.core.ModelRef.identity`): what "the same model" means."""
        assert self.ref is not None
        return self.ref.identity

    @property
    def is_replay(self) -> bool:
        return self.replay is not None


def repeat_of(model: NamedModel, index: int) -> NamedModel:
    """``model`` as its ``index``-th repeated draw (sharing its parameter dicts; apart in the call cache).

    Args:
        model: the model.
        index: the draw (>= 0).

    Returns:
        The model for that draw.
    """
    return model if index == 0 else replace(model, repeat=index)
