"""The target models of a run: the given ones, those of ``--models``, or the stored models a SciAidanBench request
names; their replay files matched to the selected items, and what the report says about that matching."""

from __future__ import annotations

import re
from typing import Any

from ..core import InputError, Item, ModelRef, get_logger
from ..models import NamedModel, sampling_for_role
from .runtime import RunContext, unique_models
from .stored_responses import resolve_run_model, stored_models

log = get_logger("sgieval")


def models_named_in(request: str, models: list[str]) -> list[str]:
    """The stored models the request names by name, bare name ("GPT-4o" names ``openai/4o``) or 4+ letter family.

    Args:
        request: the request.
        models: stored model names.

    Returns:
        The named ones, in ``models`` order.
    """
    text = (request or "").lower()
    out = []
    for m in models:
        bare = ModelRef.parse(m).bare
        family = re.match(r"[a-z]{4,}", bare)
        names = {m.lower(), bare, family.group(0) if family else ""}
        if any(re.search(rf"(?<![\w.]){re.escape(n)}(?!\w|\.\w)", text) for n in names if n):
            out.append(m)
    return out


def default_targets(rt: RunContext, items: list[Item]) -> list[NamedModel]:
    """The run's target models (given, else ``--models``, else the stored SciAidanBench ones or those the request
    names), resolved once per item selection.

    Args:
        rt: the run context.
        items: the selected items.

    Returns:
        The target models, their replay files matched to the items.

    Raises:
        InputError: no target given and none stored, or a replay file that answers no item.
    """
    key = tuple(i.id for i in items)
    if rt.targets:
        if key not in rt.matched_replays:
            match_replays(rt, items, rt.targets)
            rt.matched_replays.add(key)
        return rt.targets
    if key not in rt.resolved_targets:
        targets = _resolve_targets(rt, items)
        match_replays(rt, items, targets)
        rt.resolved_targets[key] = targets
    return rt.resolved_targets[key]


def match_replays(rt: RunContext, items: list[Item], targets: list[NamedModel]) -> None:
    """Match each replay target's stored item ids to the selected benchmarks' items, logging what was mapped or left
    unmatched; InputError when none of a file's ids matches."""
    benches = {i.benchmark for i in items}
    candidates = [i for i in rt.catalog.items if i.benchmark in benches] or items
    for t in targets:
        if t.replay is None or not t.replay.by_item:
            continue
        t.replay.match_items(candidates)
        if t.replay.aliases:
            example = next(f"{s} -> {i}" for i, s in t.replay.aliases.items())
            log.warning(
                "replay ids given without their benchmark prefix were mapped to items",
                file=str(t.replay.source), mapped=len(t.replay.aliases), example=example,
            )  # fmt: skip
        if t.replay.unmatched:
            log.warning(
                "replay lines match no item of the selected benchmark and are not used",
                file=str(t.replay.source), lines=t.replay.unmatched_lines(),
            )  # fmt: skip


def replay_notes(targets: list[NamedModel]) -> tuple[str, list[str]]:
    """(the Run table's "replay item ids" line, the report's warnings) for replay ids mapped or matching no item."""
    parts, warnings = [], []
    for t in targets:
        r = t.replay
        if r is None or not (r.aliases or r.unmatched):
            continue
        bits = []
        if r.aliases:
            item_id, stored_id = next(iter(r.aliases.items()))
            n = len(r.aliases)
            bits.append(f"{n} bare id{'' if n == 1 else 's'} mapped to item ids (e.g. {stored_id} -> {item_id})")
        if r.unmatched:
            n = len(r.unmatched)
            lines = f"{n} line{'' if n == 1 else 's'}"
            were = "was" if n == 1 else "were"
            bits.append(f"{lines} matched no item and {were} not used: {r.unmatched_lines()}")
            warnings.append(
                f"{lines} of the replay file {r.source} ({t.name}) matched no item of the "
                f"selected benchmark and {were} not used: {r.unmatched_lines()}."
            )
        parts.append(f"{r.source}: {'; '.join(bits)}")
    return "; ".join(parts), warnings


def _resolve_targets(rt: RunContext, items: list[Item]) -> list[NamedModel]:
    if rt.config.models:
        kw: dict[str, Any] = dict(
            base_url=rt.config.base_url, data_dir=rt.config.data_dir, **sampling_for_role(rt.config, "target")
        )
        return unique_models([resolve_run_model(m, "target", **kw) for m in rt.config.models])
    if items and all(i.benchmark == "sciaidanbench" for i in items):
        stores = stored_models(rt.config.data_dir)
        named = models_named_in(rt.config.request, [s.model for s in stores])
        if len(named) > 1:  # a comparison of the named models
            stores = [s for s in stores if s.model in named]
            log.info("targets named in the request", targets=named)
        elif named:  # one model: every stored model is replayed too, so the report says where it stands
            log.info("one stored model named in the request; the others are shown for comparison", focus=named)
        if stores:
            return [NamedModel(name=f"replay:{s.model}", role="target", replay=s, provider="replay") for s in stores]
        raise InputError(
            "no target models given and no stored SciAidanBench responses found",
            what="--models",
            fix="pass --models (e.g. replay:o1-mini, openai:gpt-4.1), or put stored answers in "
            "<data dir>/sciaidanbench/responses/ (`sgieval data pull sciaidanbench`)",
        )
    fix = "pass --models (e.g. openai:gpt-4.1, replay:<file.jsonl>, local:smollm2)"
    raise InputError("no target models given", what="--models", fix=fix)
