"""Replay of stored responses: evaluate published outputs without calling a model, from a SciAidanBench
``responses/<model>.json`` file (METRICS.md B.7) or a JSONL file of ``{"item_id", "text"}`` lines.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..core import InputError, Item, ModelRef, Response, json_loads_strict, split_jsonl
from .base import NamedModel


class UnmatchedReplayError(InputError):
    """None of a replay file's item ids matches an item of the selected benchmark (exit code 2)."""


@dataclass
class ReplayStore:
    """Stored responses of one model: ``by_question`` (SciAidanBench) or ``by_item`` (JSONL: item id -> text)."""

    model: str
    source: Path
    by_question: dict[str, dict[str, Any]] = field(default_factory=dict)
    by_item: dict[str, str] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    unmatched: list[str] = field(default_factory=list)

    def match_items(self, items: list[Item]) -> None:
        """Match the stored item ids (JSONL) to ``items``: a full id, or the local id of exactly one item
        (``aliases``); the rest go to ``unmatched``.

        Args:
            items: the items the stored replies may answer.

        Raises:
            UnmatchedReplayError: none of the stored ids matches an item.
        """
        if not self.by_item:
            return
        ids = {i.id for i in items}
        local: dict[str, list[str]] = {}
        for i in items:
            local.setdefault(i.id.removeprefix(f"{i.benchmark}/"), []).append(i.id)  # its id within its benchmark
        self.aliases, self.unmatched = {}, []
        for sid in self.by_item:
            if sid in ids:
                continue
            full = local.get(sid, [])
            if len(full) == 1 and full[0] not in self.by_item and full[0] not in self.aliases:
                self.aliases[full[0]] = sid
            else:
                self.unmatched.append(sid)
        if len(self.unmatched) == len(self.by_item):
            example = sorted(ids)[0] if ids else "<benchmark>/<id>"
            shown = ", ".join(f"line {self.lines.get(s, '?')}: {s!r}" for s in self.unmatched[:3])
            more = f" and {len(self.unmatched) - 3} more" if len(self.unmatched) > 3 else ""
            benches = ", ".join(sorted({i.benchmark for i in items})) or "none"
            raise UnmatchedReplayError(
                f"none of the {len(self.by_item)} item ids matches an item of the selected benchmark "
                f"({benches}): {shown}{more}",
                what=str(self.source),
                fix=f'write each "item_id" as the full item id, e.g. "{example}" '
                f'(or its local id, e.g. "{example.split("/", 1)[-1]}", when only one item has it)',
            )

    def unmatched_lines(self) -> str:
        """The lines whose ids match no item.

        Returns:
            e.g. ``line 4 ('q9'), line 7 ('x')``, or "".
        """
        return ", ".join(f"line {self.lines.get(s, '?')} ({s!r})" for s in self.unmatched)

    def respond(self, item: Item, model_name: str) -> Response:
        """The stored Response for ``item``, or a ``not_run`` Response saying there is none.

        Args:
            item: the item.
            model_name: the replay target's name, put on the Response.

        Returns:
            The Response.
        """
        stored_id = item.id if item.id in self.by_item else self.aliases.get(item.id)
        if stored_id is not None:
            text = self.by_item[stored_id]
            resp = Response(
                item_id=item.id, model=model_name, text=text, latency_s=0.0, metadata={"replay": str(self.source)}
            )
            if not text.strip():  # D.10: an empty stored reply is flagged, not scored
                resp = resp.model_copy(update={"status": "empty", "error": "empty stored reply"})
            return resp.split_reasoning()  # D.8
        entry = self.by_question.get(item.metadata.get("question", item.prompt))
        if entry is not None:
            lists = entry.get("lists") or [entry]
            # the item's own domain/subdomain when the question is stored under several; every temperature
            mine = [
                lst for lst in lists if (lst.get("domain"), lst.get("subdomain")) == (item.discipline, item.direction)
            ]
            lists = mine or lists
            recs = [r for lst in lists for r in lst["records"]]
            accepted = [r.get("answer", "") for r in recs if r.get("stopping_condition") is None]
            meta: dict[str, Any] = {
                "replay": str(self.source),
                "records": recs,
                "temperature": ",".join(dict.fromkeys(str(lst["temperature"]) for lst in lists)),
                "stored_model": self.model,
            }
            if len(lists) > 1:  # B.6: counts sum over the lists; where each one starts in "records"
                starts = [0, *itertools.accumulate(len(lst["records"]) for lst in lists[:-1])]
                meta["lists"] = [
                    {
                        "temperature": lst["temperature"],
                        "domain": lst.get("domain"),
                        "subdomain": lst.get("subdomain"),
                        "start": a,
                        "n": len(lst["records"]),
                    }
                    for lst, a in zip(lists, starts)
                ]
            return Response(
                item_id=item.id,
                model=model_name,
                text="\n\n".join(f"[{r.get('answer_num')}] {r.get('answer', '')}" for r in recs),
                answer=accepted,
                latency_s=0.0,
                metadata=meta,
            )
        return Response(
            item_id=item.id,
            model=model_name,
            status="not_run",
            error=f"{model_name} has no stored response for item {item.id} in {self.source}",
        )


def load_jsonl_replay(path: Path) -> ReplayStore:
    """A ReplayStore from a JSONL file of {"item_id", "text"} lines (InputError naming file, line and field)."""
    store = ReplayStore(model=path.stem, source=path)
    model_line: tuple[str, int] | None = None
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read file: {e}", what=str(path), fix="save the file as UTF-8 text") from e

    def bad(n: int, why: str, fix: str = 'each line must be {"item_id": ..., "text": ...}') -> InputError:
        return InputError(f"line {n}: {why}", what=str(path), fix=fix)

    for n, line in enumerate(split_jsonl(text), 1):  # on "\n" only: a U+2028 in a reply stays in it
        if not line.strip():
            continue
        try:
            rec = json_loads_strict(line)
        except json.JSONDecodeError as e:
            raise bad(n, f"invalid JSON ({e.msg})") from e
        for f in ("item_id", "text"):
            if not isinstance(rec, dict) or not isinstance(rec.get(f), str):
                raise bad(n, f"missing string field {f!r}")
        model = rec.get("model", path.stem)
        if not isinstance(model, str) or not model.strip():
            fix = "give the model's name, or leave the field out (the file name is used)"
            raise bad(n, "field 'model' must be a non-empty string", fix)
        if model_line is None:
            model_line = (model, n)
        elif model != model_line[0]:
            raise bad(
                n,
                f"model {model!r}, but line {model_line[1]} is model {model_line[0]!r}; "
                "a replay file holds the replies of one model",
                "split the file by model (one file per model) and pass each as replay:<file>",
            )
        iid = rec["item_id"]
        if iid in store.lines:
            why = f"a second reply for item {iid!r} of model {model!r} (the first is on line {store.lines[iid]})"
            raise bad(n, why, "keep one line per item_id and model")
        store.lines[iid] = n
        store.model = model
        store.by_item[iid] = rec["text"]
    return store


@dataclass(frozen=True)
class StoredResponses:
    """Where ``replay:`` model strings find stored responses (built by the caller: models/ reads no benchmark):
    ``stores()`` every stored model, ``read_file(path)`` the models of one stored-answers ``.json`` file."""

    stores: Callable[[], list[ReplayStore]] = list
    read_file: Callable[[Path], list[ReplayStore]] | None = None


def _match(name: str, store: ReplayStore) -> bool:
    return name.lower() in {
        store.model.lower(),
        ModelRef(spec=store.model, provider="", name=store.model).untagged.lower(),
        store.source.stem.lower(),
        store.model.replace("/", "_").lower(),
    }


def resolve_replay(
    spec: str, stored: StoredResponses | None = None, _stores: list[ReplayStore] | None = None
) -> NamedModel:
    """A replay target for ``replay:<name or path>``: a JSONL file, a stored-answers ``.json`` file or a stored name.

    Args:
        spec: ``replay:<name or path>``.
        stored: the stored responses the run can serve.
        _stores: the stored models already read (internal).

    Returns:
        The replay model.

    Raises:
        InputError: an unknown name (listing the stored models) or a file that is not one model's answers.
    """
    ref = ModelRef.parse(spec).name
    p = Path(ref).expanduser()
    if p.suffix in (".json", ".jsonl") and p.is_file():
        if p.suffix == ".jsonl":
            store = load_jsonl_replay(p)
        else:
            if stored is None or stored.read_file is None:
                raise InputError(
                    "no reader for stored-answer .json files was given",
                    what=str(p),
                    fix="resolve it with sgieval.agents.stored_responses.resolve_run_model (it reads "
                    "SciAidanBench responses files), or give a JSONL replay file",
                )
            stores = stored.read_file(p)
            if not stores:
                raise InputError("holds no models", what=str(p), fix="use a SciAidanBench responses file")
            if len(stores) > 1:
                raise InputError(
                    f"holds the answers of {len(stores)} models ({', '.join(s.model for s in stores)}); "
                    "replay:<file> serves one model",
                    what=str(p),
                    fix="split the file by model, or put it in <data>/sciaidanbench/responses/ and "
                    "name the models (replay:<name>)",
                )
            store = stores[0]
    elif p.suffix in (".json", ".jsonl"):
        raise InputError("replay file not found", what=str(p), fix="give an existing file after replay:")
    else:
        stores = _stores if _stores is not None else (stored.stores() if stored is not None else [])
        found = next((s for s in stores if _match(ref, s)), None)
        if found is None:
            known = ", ".join(s.model for s in stores) or "none found"
            fix = f"use one of: {known}, or replay:<path to a .json/.jsonl file>"
            raise InputError(f"no stored responses named {ref!r}", what=spec, fix=fix)
        store = found
    return NamedModel(name=f"replay:{store.model}", role="target", replay=store, provider="replay")
