"""Named chat models by role (DESIGN.md "Models and roles")."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..core import ModelRef

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
    ``repeat``: which draw of a repeated judge this is (0 = the first; ``--judge-repeats``): the
    index is part of the call cache key (:func:`sgieval.models.cache.model_params`) from 1 on, so k repeats
    are k distinct calls and a first draw shares its cache entry with a run that asks once.
    ``ref``: the parsed model string (:class:`~sgieval.core.ModelRef`, with its base URL once resolved; derived
    from ``name`` when not given).  ``max_in_flight``: the most calls this model serves at once (the embedded
    model: 1, one call per loaded model), None for the run's per-provider limit only.
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
