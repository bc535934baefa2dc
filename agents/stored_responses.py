"""Stored responses for ``replay:`` targets: models/ reads no benchmark's data, so the run hands it a
:class:`~sgieval.models.replay.StoredResponses` built here from SciAidanBench's stored answers (METRICS.md B.7)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..benchmarks import find_benchmark_dir, list_response_files, load_stored_answers
from ..models import NamedModel, ReplayStore, Role, StoredResponses, resolve_model


def _read_stored_file(path: Path) -> list[ReplayStore]:
    """One ReplayStore per model of a SciAidanBench ``responses/<model>.json`` file; InputError when malformed."""
    return [ReplayStore(model=sa.model, source=path, by_question=sa.by_question) for sa in load_stored_answers(path)]


def stored_models(data_dir: str | Path | None = None) -> list[ReplayStore]:
    """Every stored SciAidanBench model in the data lookup order (DataNotFoundError for a folder without its files)."""
    folder = find_benchmark_dir("sciaidanbench", data_dir, required=False)
    return [store for f in list_response_files(folder) for store in _read_stored_file(f)] if folder else []


def stored_responses(data_dir: str | Path | None = None) -> StoredResponses:
    """What :func:`resolve_model` needs for ``replay:`` strings: ``data_dir``'s stored models and the file reader."""
    return StoredResponses(stores=lambda: stored_models(data_dir), read_file=_read_stored_file)


def resolve_run_model(spec: str, role: Role, *, data_dir: str | Path | None = None, **kw: Any) -> NamedModel:
    """:func:`resolve_model` with the stored responses of ``data_dir``.

    Args:
        spec: a model string (``openai:gpt-4.1``, ``replay:openai/4o``, ...).
        role: ``"target"``, ``"judge"`` or ``"agent"``.
        data_dir: the data folder whose stored responses ``replay:<name>`` serves.
        kw: ``base_url``, ``temperature``, ``reasoning_effort``.

    Returns:
        The resolved model.

    Raises:
        InputError: an unknown model string, or a replay name nothing stores.
    """
    return resolve_model(spec, role, stored=stored_responses(data_dir), **kw)
