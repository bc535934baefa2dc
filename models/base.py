"""Named chat models by role (DESIGN.md "Models and roles")."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..core import ModelRef

Role = Literal["target", "judge", "agent"]


@dataclass
class NamedModel:
    """A chat model bound to a role.

    ``name``: the model string the user gave (what records and reports show); ``chat``: a LangChain chat model
    (None for a replay target, served by ``replay``); ``provider``: the per-provider concurrency key;
    ``smoke_test``: smoke-test quality (the embedded SmolLM2; the report says so); ``params``: the sampling
    parameters sent; ``dropped``: parameter -> why it is not sent (:mod:`sgieval.models.params`); ``repeat``: the
    draw of a repeated judge (``--judge-repeats``; part of the cache key from 1 on); ``ref``: the parsed model
    string (:class:`~sgieval.core.ModelRef`, derived from ``name`` when not given); ``max_in_flight``: the most
    calls this model serves at once (the embedded model: 1), None for the run's per-provider limit only.
    """

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
    """``model`` as its ``index``-th repeated draw (0-based; 0 returns ``model`` itself): the same name, chat
    model, provider and parameter dicts (a parameter a server rejects is dropped for every draw), with
    ``repeat = index`` so the call cache keeps the draws apart.

    Args:
        model: the model.
        index: the draw (>= 0).

    Returns:
        The model for that draw.
    """
    if index == 0:
        return model
    return replace(model, repeat=index)
