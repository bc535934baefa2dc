"""The agents' structured calls: a pydantic object from the agent model, with parse retries."""

from __future__ import annotations

from typing import Any, Sequence, TypeVar

from langchain_core.messages import BaseMessage
from pydantic import BaseModel

from ..metric_pool import DATA_NOTICE
from ..models import NamedModel, StructuredReply, ask_structured, current_prompt_scope, prompt_scope

T = TypeVar("T", bound=BaseModel)


async def ask_agent(agent: NamedModel, messages: Sequence[BaseMessage], schema: type[T]) -> StructuredReply[Any]:
    """Ask the agent model for a ``schema`` object (:func:`ask_structured` with the data notice, up to 3 parse tries),
    in the prompt family ``sgieval:agent/<schema name>`` unless the caller set one.

    Args:
        agent: the run's agent model (role ``agent``).
        messages: the system prompt and the request.
        schema: the pydantic model the reply must validate against.

    Returns:
        The reply: ``parsed`` (None on failure), ``raw`` (one text per attempt) and ``error``; never raises.
    """
    with prompt_scope(current_prompt_scope() or f"sgieval:agent/{schema.__name__}"):
        return await ask_structured(agent, messages, schema, system_note=DATA_NOTICE, label="agent")
