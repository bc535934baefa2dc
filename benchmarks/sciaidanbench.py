"""SciAidanBench loader (DATASETS.md "SciAidanBench"; METRICS.md B.7): ``questions.json`` -> Items (task
``open_creativity``, discipline = domain, direction = subdomain or domain); ``responses/<model>.json`` -> stored answer
records with their judge scores, for replay."""

from __future__ import annotations

import contextlib
import json
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import OPEN_CREATIVITY, InputError, Item, OfflineError, current_settings, json_loads_strict
from .base import Benchmark, Vocabulary

BENCHMARK = "sciaidanbench"
PROMPT_NOTE = (
    "Open-ended question: the target model is asked again and again for a new answer, with its earlier "
    "answers shown (METRICS.md B.1)."
)
RECORD_FIELDS = ("answer_num", "answer")
# model names (or ``model_<name>`` file stems) of ensembles and routers (``top-5-parallel__<Domain>``), not one model
PSEUDO_MODEL = re.compile(r"^(top-\d+|ensemble|router)", re.I)


def _slug(s: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", s.lower()).strip("-")


def item_id(domain: str, subdomain: str | None, index: int) -> str:
    """Stable id ``sciaidanbench/<domain>[-<subdomain>]/<index_in_list>``."""
    group = _slug(domain) if not subdomain or subdomain == domain else f"{_slug(domain)}-{_slug(subdomain)}"
    return f"{BENCHMARK}/{group}/{index}"


def load_questions(folder: Path, *, published_only: bool = True) -> list[Item]:
    """Items from ``folder/questions.json``; ``published_only`` keeps the 155 questions of the published results (False:
    all 157). InputError naming the file and field on malformed input."""
    path = folder / "questions.json"
    restore = "restore the file with `sgieval data pull sciaidanbench`"
    try:
        raw = json_loads_strict(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise InputError(
            f"not UTF-8 text ({e.reason} at byte {e.start})",
            what=str(path),
            fix="restore it with `sgieval data pull sciaidanbench`",
        ) from e
    except FileNotFoundError as e:
        raise InputError("file not found", what=str(path), fix="point --data-dir at a SciAidanBench folder") from e
    except json.JSONDecodeError as e:
        raise InputError(f"invalid JSON at line {e.lineno}: {e.msg}", what=str(path), fix=restore) from e
    if not isinstance(raw, list):
        raise InputError("expected a JSON list of question objects", what=str(path), fix=restore)
    items = []
    for n, q in enumerate(raw):
        for f in ("domain", "question"):
            if not isinstance(q, dict) or not isinstance(q.get(f), str):
                raise InputError(
                    f"record {n} lacks string field {f!r}",
                    what=str(path),
                    fix="each record needs domain, subdomain, index_in_list, question",
                )
        if published_only and q.get("in_published_results") is False:
            continue
        sub = q.get("subdomain") or q["domain"]
        idx = q.get("index_in_list", n)
        items.append(
            Item(
                id=item_id(q["domain"], sub, idx),
                benchmark=BENCHMARK,
                task=OPEN_CREATIVITY,
                discipline=q["domain"],
                direction=sub,
                type="open-ended",
                prompt=q["question"],
                reference=None,
                metadata={
                    "question": q["question"],
                    "index_in_list": idx,
                    "in_published_results": q.get("in_published_results", True),
                    "note": PROMPT_NOTE,
                },
            )
        )
    return items


@dataclass
class StoredAnswers:
    """One model's stored SciAidanBench answers. ``by_question``: question -> {"lists": [{"records", "temperature",
    "domain", "subdomain"}, ...], and the lists' records one after the other, temperatures joined by ",", the first
    list's domain and subdomain}. Another temperature or subdomain is another list, never an overwrite (METRICS.md B.6:
    the published ``total_responses`` sums over them)."""

    model: str
    path: Path
    by_question: dict[str, dict[str, Any]] = field(default_factory=dict)


def load_stored_answers(path: Path) -> list[StoredAnswers]:
    """Parse ``responses/<model>.json`` (METRICS.md B.7): ``domains -> domain -> (subdomain ->)? models -> model ->
    temperature -> question -> [records]``.

    Args:
        path: the file.

    Returns:
        One StoredAnswers per model found in the file.

    Raises:
        InputError: naming the file and the JSON path of the first malformed part.
    """
    fix = "restore it with `sgieval data pull sciaidanbench`, or use the layout in the README's \"Data\" section"

    def bad(problem: str) -> InputError:
        return InputError(problem, what=str(path), fix=fix)

    try:
        data = json_loads_strict(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise bad(f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from e
    except UnicodeDecodeError as e:
        raise bad(f"not UTF-8 text ({e.reason} at byte {e.start})") from e
    except OSError as e:
        raise bad(f"cannot read: {e.strerror}") from e
    if not isinstance(data, dict) or not isinstance(data.get("domains"), dict):
        raise bad("top level must be an object with a 'domains' object")
    out: dict[str, StoredAnswers] = {}
    for domain, dv in data["domains"].items():
        if not isinstance(dv, dict):
            raise bad(f"domains.{domain} must be an object")
        subs = {domain: dv} if "models" in dv else dv
        for sub, sv in subs.items():
            where = f"domains.{domain}" + ("" if sub == domain else f".{sub}")
            if not isinstance(sv, dict) or not isinstance(sv.get("models"), dict):
                raise bad(f"{where} lacks a 'models' object")
            for model, temps in sv["models"].items():
                if not isinstance(temps, dict):
                    raise bad(f"{where}.models.{model} must map temperature -> questions")
                store = out.setdefault(model, StoredAnswers(model=model, path=path))
                for temp, qs in temps.items():
                    if not isinstance(qs, dict):
                        raise bad(f"{where}.models.{model}.{temp} must map question -> records")
                    for question, recs in qs.items():
                        at = f"{where}.models.{model}.{temp}[{question[:40]!r}]"
                        if not isinstance(recs, list):
                            raise bad(f"{at} must be a list of records")
                        for k, r in enumerate(recs):
                            missing = [f for f in RECORD_FIELDS if not isinstance(r, dict) or f not in r]
                            if missing:
                                raise bad(f"record {k} of {at} lacks field {missing[0]!r}")
                        lst = {"records": recs, "temperature": temp, "domain": domain, "subdomain": sub}
                        old = store.by_question.get(question, {"lists": []})
                        store.by_question[question] = _merge_lists(old["lists"] + [lst])
    return list(out.values())


def _merge_lists(lists: list[dict[str, Any]]) -> dict[str, Any]:
    """One entry for several stored lists of a question (:class:`StoredAnswers`; counts sum over lists, B.6)."""
    return {
        "records": [r for lst in lists for r in lst["records"]],
        "temperature": ",".join(dict.fromkeys(str(lst["temperature"]) for lst in lists)),
        "domain": lists[0]["domain"],
        "subdomain": lists[0]["subdomain"],
        "lists": lists,
    }


def is_pseudo(name: str) -> bool:
    """Whether a model name or ``model_<name>`` file stem is an ensemble's or router's (:data:`PSEUDO_MODEL`)."""
    return bool(PSEUDO_MODEL.match(name.removeprefix("model_")))


def list_response_files(folder: Path) -> list[Path]:
    """The per-model response files of a SciAidanBench folder (``responses/*.json``), without ensembles'
    and routers' (:func:`skipped_files` names them).

    Args:
        folder: the SciAidanBench data folder.

    Returns:
        The files, sorted by name.
    """
    return sorted(p for p in (folder / "responses").glob("*.json") if not is_pseudo(p.stem))


def skipped_files(folder: Path) -> list[str]:
    """The upstream files of a SciAidanBench folder the loader leaves out, as ``<file> (<why>)``: ensemble and router
    results (in ``responses/pseudo/`` or ``responses/``, by their upstream path when linked) and the files an upstream
    view could not read (its ``layout.json`` notes)."""
    why = "an ensemble of several models, not one model: not a target"
    found = sorted({*(folder / "responses" / "pseudo").glob("*.json"), *(folder / "responses").glob("*.json")})
    out = [f"{p.resolve() if p.is_symlink() else p} ({why})" for p in found if is_pseudo(p.stem)]
    notes: Any = []
    with contextlib.suppress(ValueError, OSError, AttributeError):  # no readable layout.json: no notes
        notes = json.loads((folder / "layout.json").read_text(encoding="utf-8")).get("notes") or []
    return out + [f"{n} (not read)" for n in notes if isinstance(n, str)]


COMMIT = "aaa03c4"
TARBALL = f"https://codeload.github.com/CFN-softbio/SciAidanBench/tar.gz/{COMMIT}"


def pull_sciaidanbench(dest: Path) -> Path:
    """Download the per-model results of github CFN-softbio/SciAidanBench at aaa03c4 into ``dest/responses/`` (ensembles
    to ``responses/pseudo/``) and ``questions.json`` rebuilt from them; returns ``dest``. OfflineError within a few
    seconds when codeload.github.com is unreachable (``SGIEVAL_NETWORK=offline`` / ``online`` decide without trying)."""
    import io
    import tarfile

    host = "codeload.github.com"
    mode = current_settings().network
    reachable = mode == "online"
    if mode == "auto":
        with contextlib.suppress(OSError), socket.create_connection((host, 443), timeout=2.0):
            reachable = True
    if not reachable:
        raise OfflineError(
            f"cannot reach {host} (the files come from github.com/CFN-softbio/SciAidanBench "
            f"(commit {COMMIT}, results/per_model/*.json))",
            what=f"data pull {BENCHMARK}",
            fix=f"retry when online, or copy questions.json and responses/<model>.json to {dest} "
            "by hand (layout: the README's \"Data\" section), or pass --data-dir / set SGIEVAL_DATA",
        )
    import httpx

    r = httpx.get(TARBALL, follow_redirects=True, timeout=120)
    r.raise_for_status()
    (dest / "responses").mkdir(parents=True, exist_ok=True)
    questions: list[dict] = []
    with tarfile.open(fileobj=io.BytesIO(r.content), mode="r:gz") as tar:
        for m in tar.getmembers():
            if "/results/per_model/" in m.name and m.name.endswith(".json") and m.isfile():
                data = json.load(tar.extractfile(m))  # type: ignore[arg-type]
                name = Path(m.name).name
                pseudo = is_pseudo(Path(name).stem)  # an ensemble's results: kept apart, never a target
                folder = dest / "responses" / ("pseudo" if pseudo else "")
                folder.mkdir(parents=True, exist_ok=True)
                (folder / name).write_text(json.dumps(data), encoding="utf-8")
                if not pseudo and not questions:
                    questions = questions_from_results(data)
    (dest / "questions.json").write_text(json.dumps(questions, indent=1), encoding="utf-8")
    return dest


def questions_from_results(data: dict) -> list[dict]:
    """The question records (domain, subdomain, index_in_list, question) of a per-model results file's first model and
    temperature."""
    out: list[dict] = []
    for domain, dv in data.get("domains", {}).items():
        for sub, sv in ({None: dv} if "models" in dv else dv).items():
            first: dict = next(iter(sv["models"].values()), {})
            qs: dict = next(iter(first.values()), {})  # the first model's first temperature
            out += [
                dict(domain=domain, subdomain=sub, index_in_list=i, question=q, in_published_results=True)
                for i, q in enumerate(qs)
            ]
    return out


DEFINITION = Benchmark(
    name=BENCHMARK,
    description="SciAidanBench: open-ended science questions, answered again and again until answers repeat "
    "or lose coherence (accepted answers count).",
    loader=load_questions,
    markers=("questions.json",),
    pull=pull_sciaidanbench,
    skipped=skipped_files,
    source=f"github CFN-softbio/SciAidanBench at {COMMIT} (questions and per-model results)",
    tasks=(OPEN_CREATIVITY,),
    facets={
        "discipline": "domain (Chemistry, Physics, ...)",
        "direction": "subdomain, or the domain when none",
        "type": "open-ended",
    },
    vocabulary=Vocabulary(
        disciplines={
            "chemistry": ("chemistry",),
            "physics": ("physics",),
            "astronomy": ("astrophysics",),
            "life": ("biology",),
            "neuroscience": ("neuroscience",),
            "earth": ("environmental science",),
            "nanoscience": ("nanoscience",),
            "condensed matter": ("condensed matter",),
            "synchrotron": ("synchrotron",),
        },
        tasks=(
            (
                OPEN_CREATIVITY,
                (
                    r"creative",
                    r"creativity",
                    r"novel ideas",
                    r"open[- ]ended",
                    r"divergent",
                    r"brainstorm\w*",
                    r"originality",
                ),
            ),
        ),
        names=(r"sci[- ]?aidan[- ]?bench", r"aidan[- ]?bench"),
    ),
    # the generation protocol builds each turn's prompt (METRICS.md B.1): the question, then the earlier answers
    prompts={OPEN_CREATIVITY: "sgieval.metric_pool.aidanbench_protocol.generation_prompt(question, previous_answers)"},
    metrics=("aidan_accepted_answers",),
    primary={OPEN_CREATIVITY: "aidan_accepted_answers"},
    prefer={"creativity": ("aidan_accepted_answers",), "novelty": ("aidan_mean_novelty", "aidan_accepted_answers")},
)
