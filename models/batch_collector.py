"""The run's batches (``--batch``): :class:`BatchCollector` gathers the requests of one endpoint, submits them as
one batch (OpenAI or Anthropic), polls it and answers each waiting call; :class:`BatchJournal` is the run folder's
``batches.json`` (every submission noted before it is created, so a resumed run submits no request twice).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import datetime as dt
import hashlib
import json
import re
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Coroutine, Iterator, Literal, Sequence

import httpx

from ..core import InputError, get_logger, read_text_in, redact_url, write_text_in
from .context import current_call_context
from .openai_wire import OpenAIHTTPError

log = get_logger("sgieval")

JOURNAL = "batches.json"
RESULTS_DIR = "batches"
ANTHROPIC_BASE = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
BATCH_WAIT_S = 25 * 3600.0
"""Seconds a batched call may wait for its batch: the providers' completion window (24 h) and an hour."""
MAX_REQUESTS = {"openai": 50_000, "anthropic": 100_000}
"""Requests per batch the providers accept (OpenAI: 50,000 per file; Anthropic: 100,000 per batch)."""
MAX_BYTES = {"openai": 190_000_000, "anthropic": 240_000_000}
"""Bytes per batch kept under the providers' limits (OpenAI: 200 MB per file; Anthropic: 256 MB)."""

_tag: contextvars.ContextVar[str] = contextvars.ContextVar("sgieval_batch_tag", default="")


@contextlib.contextmanager
def request_tag(tag: str) -> Iterator[None]:
    """Calls made inside get ``tag`` in their ``custom_id`` (a repeated judge draw stays its own request).

    Args:
        tag: the label, e.g. ``"repeat=2"``.
    """
    token = _tag.set(tag)
    try:
        yield
    finally:
        _tag.reset(token)


def custom_id(api: str, body: dict[str, Any], tag: str = "", base_url: str = "") -> str:
    """The request's ``custom_id``: 48 hex digits of sha256 over the API, base URL, tag and canonical body JSON."""
    blob = json.dumps(
        {"api": api, "base_url": base_url, "tag": tag, "body": body}, sort_keys=True, ensure_ascii=False, default=str
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:48]


@dataclass(frozen=True)
class Endpoint:
    """Where a batch goes; the key is never written anywhere."""

    api: Literal["openai", "anthropic"]
    base_url: str
    key: str = field(repr=False, default="")

    @property
    def shown(self) -> str:
        """The base URL without credentials."""
        return redact_url(self.base_url) or self.base_url


class BatchRequestError(OpenAIHTTPError):
    """A batched request that came back with an error (``status_code``: its HTTP status)."""


_PLAIN_ID = re.compile(r"(submission:)?[A-Za-z0-9_-]{1,200}")
"""A batch id or a submission's id as the journal may hold them."""


class BatchJournal:
    """``batches.json`` of a run folder, read as data: entries of the wrong shape are ignored."""

    def __init__(self, root: Path | None):
        self.root = root
        self.batches: dict[str, dict[str, Any]] = {}
        self.submissions: dict[str, dict[str, Any]] = {}
        self.requests: dict[str, str] = {}
        if root is None:
            return
        try:
            data = json.loads(read_text_in(root, root / JOURNAL))
        except FileNotFoundError:
            return
        except (ValueError, OSError) as e:
            raise InputError(
                f"cannot read the batch journal ({e})",
                what=str(root / JOURNAL),
                fix="restore the file from a backup; deleting it makes the run submit its pending requests again",
            ) from None
        if not isinstance(data, dict):
            return
        # a batch id goes into request paths: only plain ids are kept (a file someone else made is data)
        for name in ("batches", "submissions"):
            v = data.get(name)
            if isinstance(v, dict):
                getattr(self, name).update(
                    {k: x for k, x in v.items() if isinstance(x, dict) and _PLAIN_ID.fullmatch(str(k))}
                )
        reqs = data.get("requests")
        if isinstance(reqs, dict):
            self.requests.update({str(k): v for k, v in reqs.items() if isinstance(v, str) and _PLAIN_ID.fullmatch(v)})

    def save(self) -> None:
        if self.root is None:
            return
        data = {"version": 1, "batches": self.batches, "submissions": self.submissions, "requests": self.requests}
        write_text_in(self.root, self.root / JOURNAL, json.dumps(data, indent=1, sort_keys=True))

    def results_path(self, batch_id: str) -> Path | None:
        if self.root is None:
            return None
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in batch_id)
        return self.root / RESULTS_DIR / f"{safe}.jsonl"


@dataclass
class _Waiting:
    custom_id: str
    body: dict[str, Any]
    size: int


Outcome = tuple[int, Any]
"""(HTTP status, reply body)."""


class BatchCollector:
    """The run's batches: collects requests per endpoint, submits, polls, answers them.

    Args:
        root: the run folder; None keeps nothing (no resume).
        window_s: seconds without a new request after which the waiting requests are submitted (>= 0).
        poll_s: seconds between two retrievals of a pending batch (> 0).
        max_requests: submit at once when this many requests wait (default: the provider's limit).
        run_id: put in each OpenAI batch's metadata.
    """

    def __init__(
        self,
        root: str | Path | None = None,
        *,
        window_s: float = 2.0,
        poll_s: float = 30.0,
        max_requests: int | None = None,
        run_id: str = "",
    ):
        self.journal = BatchJournal(Path(root) if root is not None else None)
        self.window_s = max(0.0, float(window_s))
        self.poll_s = max(0.01, float(poll_s))
        self.max_requests = max_requests
        self.run_id = run_id
        self._queues: dict[tuple[Endpoint, str], list[_Waiting]] = {}
        self._last: dict[tuple[Endpoint, str], float] = {}
        self._bytes: dict[tuple[Endpoint, str], int] = {}
        self._flushers: dict[tuple[Endpoint, str], asyncio.Task] = {}
        self._futures: dict[str, asyncio.Future] = {}
        self._pollers: dict[str, asyncio.Task] = {}
        self._results: dict[str, dict[str, Outcome]] = {}
        self._status: dict[str, dict[str, Any]] = {}
        self._tasks: set[asyncio.Task] = set()
        self._clients: dict[Endpoint, Any] = {}
        self._answered_by: dict[str, str] = {}  # custom_id -> the batch that last answered it (for error messages)

    def progress_text(self) -> str:
        """One phrase for a progress line.

        Returns:
            ``"batch batch_abc in_progress 3/10"`` per batch not yet finished, or "".
        """
        pending = [s for s in list(self._status.values()) if not s.get("finished")]
        return "; ".join(f"batch {s['id']} {s['status']} {s['done']}/{s['total']}" for s in pending)

    async def request(self, endpoint: Endpoint, body: dict[str, Any], tag: str | None = None) -> dict[str, Any]:
        """Send ``body`` in a batch of ``endpoint``.

        Args:
            endpoint: the batch API.
            body: the request body, as a direct call would send it.
            tag: a label of the request in the batch (default: the :func:`request_tag`).

        Returns:
            The reply body (an OpenAI chat completion or an Anthropic message).

        Raises:
            BatchRequestError: the batch answered this request with an error.
        """
        cid = custom_id(endpoint.api, body, _tag.get() if tag is None else tag, endpoint.shown)
        fut = self._futures.get(cid)
        if fut is None or fut.done():
            fut = asyncio.get_running_loop().create_future()
            self._futures[cid] = fut
            known = self.journal.requests.get(cid)
            if known is not None and known in self._results:
                fut.set_result(_outcome(self._results[known], cid, known))
            elif known is not None and known in self.journal.batches:
                self._ensure(known, lambda: self._poll(known, endpoint))
            elif known is not None and known.startswith("submission:"):
                self._ensure("recover:" + known, lambda: self._recover(known, endpoint))
            else:
                self._enqueue(endpoint, _Waiting(cid, body, len(json.dumps(body))))
        status, reply = await asyncio.shield(fut)
        if self._futures.get(cid) is fut:
            del self._futures[cid]
        if status == 200:
            return reply
        where = self._answered_by.get(cid) or self.journal.requests.get(cid) or "(not submitted)"
        raise BatchRequestError(status, {}, reply, f"{endpoint.shown} batch {where}")

    def _client(self, endpoint: Endpoint) -> Any:
        """The openai SDK's ``AsyncOpenAI`` for ``endpoint`` (one per endpoint)."""
        client = self._clients.get(endpoint)
        if client is None:
            from openai import AsyncOpenAI

            key = endpoint.key or "not-needed"
            client = self._clients[endpoint] = AsyncOpenAI(
                base_url=endpoint.base_url, api_key=key, max_retries=3, timeout=600
            )
        return client

    def _enqueue(self, endpoint: Endpoint, w: _Waiting) -> None:
        # OpenAI takes one model per batch ("each input file can only include requests to a single model");
        # Anthropic's requests each name their own model, so one batch per endpoint
        key = (endpoint, str(w.body.get("model", "")) if endpoint.api == "openai" else "")
        queue = self._queues.setdefault(key, [])
        queue.append(w)
        size = self._bytes[key] = self._bytes.get(key, 0) + w.size  # a running total: no sum per request
        self._last[key] = time.monotonic()
        cap = self.max_requests or MAX_REQUESTS[endpoint.api]
        if len(queue) >= cap or size >= MAX_BYTES[endpoint.api]:
            self._spawn(self._submit(endpoint, self._take(key)))
            return
        if key not in self._flushers or self._flushers[key].done():
            self._flushers[key] = self._spawn(self._flush_when_quiet(key))

    async def _flush_when_quiet(self, key: tuple[Endpoint, str]) -> None:
        while self._queues.get(key):
            left = self._last[key] + self.window_s - time.monotonic()
            if left > 0:
                await asyncio.sleep(left)
                continue
            await self._submit(key[0], self._take(key))

    def _take(self, key: tuple[Endpoint, str]) -> list[_Waiting]:
        self._bytes.pop(key, None)
        return self._queues.pop(key, [])

    def _spawn(self, coro: Any) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _fail(self, cids: Sequence[str], exc: BaseException) -> None:
        status = getattr(exc, "status_code", None)
        body = getattr(exc, "body", None) or f"{type(exc).__name__}: {exc}"
        for cid in cids:
            fut = self._futures.get(cid)
            if fut is not None and not fut.done():
                fut.set_result((int(status) if isinstance(status, int) else 503, body))

    async def _submit(self, endpoint: Endpoint, waiting: list[_Waiting]) -> None:
        if not waiting:
            return
        cids = [w.custom_id for w in waiting]
        sub = "submission:" + uuid.uuid4().hex
        entry: dict[str, Any] = {
            "api": endpoint.api,
            "base_url": endpoint.shown,
            "custom_ids": cids,
            "created_after": time.time() - 5.0,
        }
        try:
            if endpoint.api == "openai":
                client = self._client(endpoint)
                data = "".join(
                    json.dumps(
                        {"custom_id": w.custom_id, "method": "POST", "url": "/v1/chat/completions", "body": w.body}
                    )
                    + "\n"
                    for w in waiting
                ).encode("utf-8")
                f = await client.files.create(file=("sgieval-batch.jsonl", data, "application/jsonl"), purpose="batch")
                entry["input_file_id"] = f.id
            self.journal.submissions[sub] = entry
            self.journal.requests.update(dict.fromkeys(cids, sub))
            self.journal.save()  # before the batch exists: a kill after its creation finds it again (_recover)
            if endpoint.api == "openai":
                batch_id = await self._create_openai(client, f.id, sub)
            else:
                body = {"requests": [{"custom_id": w.custom_id, "params": w.body} for w in waiting]}
                batch_id = str(
                    (await _anthropic(endpoint, "/v1/messages/batches", body=body, timeout=300)).json()["id"]
                )
        except Exception as e:  # noqa: BLE001 - the calls get the error (retried by ainvoke when transient)
            log.warning("batch submission failed", api=endpoint.api, requests=len(cids), error=str(e)[:300])
            self._forget(sub, cids)
            self._fail(cids, e)
            return
        self._adopt(sub, batch_id)
        log.info("batch submitted", api=endpoint.api, batch_id=batch_id, requests=len(cids))
        self._ensure(batch_id, lambda: self._poll(batch_id, endpoint))

    def _forget(self, owner: str, cids: Sequence[str]) -> None:
        """Drop submission ``owner`` and the requests of ``cids`` it holds (sent again as new ones); saved."""
        self.journal.submissions.pop(owner, None)
        for cid in cids:
            if self.journal.requests.get(cid) == owner:
                del self.journal.requests[cid]
        self.journal.save()

    def _adopt(self, sub: str, batch_id: str) -> None:
        entry = self.journal.submissions.pop(sub, {})
        self.journal.batches[batch_id] = {**entry, "status": "submitted", "submitted_at": time.time()}
        for cid in entry.get("custom_ids") or []:
            self.journal.requests[cid] = batch_id
        self.journal.save()

    async def _create_openai(self, client: Any, file_id: str, sub: str) -> str:
        meta = {"sgieval_submission": sub.split(":", 1)[1][:64]}
        if self.run_id:
            meta["sgieval_run"] = self.run_id[:512]
        try:
            b = await client.batches.create(
                input_file_id=file_id, endpoint="/v1/chat/completions", completion_window="24h", metadata=meta
            )
        except Exception:
            found = await _find_openai_batch(client, file_id)  # the batch may exist although its reply was lost
            if found is None:
                raise
            return found
        return str(b.id)

    def _ensure(self, key: str, coro: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Start ``coro()`` under ``key`` unless a task of that key still runs."""
        task = self._pollers.get(key)
        if task is None or task.done():
            self._pollers[key] = self._spawn(coro())

    async def _recover(self, sub: str, endpoint: Endpoint) -> None:
        entry = self.journal.submissions.get(sub) or {}
        cids = list(entry.get("custom_ids") or [])
        try:
            found: str | None = None
            if endpoint.api == "openai" and entry.get("input_file_id"):
                client = self._client(endpoint)
                found = await _find_openai_batch(client, str(entry["input_file_id"]))
                if found is None:  # the file was uploaded but no batch made: make it now (once)
                    found = await self._create_openai(client, str(entry["input_file_id"]), sub)
            elif endpoint.api == "anthropic":
                found = await _find_anthropic_batch(endpoint, float(entry.get("created_after") or 0), len(cids))
        except Exception as e:  # noqa: BLE001
            self._fail(cids, e)
            return
        if found is None:  # never created: the requests are submitted as new ones
            self._forget(sub, cids)
            self._fail(cids, _Resubmit("the batch of this request was never created; it is submitted again"))
            return
        self._adopt(sub, found)
        self._ensure(found, lambda: self._poll(found, endpoint))

    async def _poll(self, batch_id: str, endpoint: Endpoint) -> None:
        entry = self.journal.batches.get(batch_id, {})
        cids = list(entry.get("custom_ids") or [])
        try:
            results = self._read_saved(batch_id)
            if results is None:
                results = await self._wait_and_download(batch_id, endpoint, len(cids))
                self._save(batch_id, results)
        except Exception as e:  # noqa: BLE001 - the waiting calls get the error
            log.warning("batch polling failed", batch_id=batch_id, error=str(e)[:300])
            self._fail(cids, e)
            return
        finally:
            if batch_id in self._status:
                self._status[batch_id] = {**self._status[batch_id], "finished": True}
        self._results[batch_id] = results
        failed = [cid for cid in cids if _outcome(results, cid, batch_id)[0] != 200]
        done = self.journal.batches.get(batch_id)
        if done is not None:
            done.update(status="done", failed=len(failed))
        self._forget(batch_id, failed)  # an errored request may be sent again (a retry), in a new batch
        for cid in cids:
            self._answered_by[cid] = batch_id
            fut = self._futures.get(cid)
            if fut is not None and not fut.done():
                fut.set_result(_outcome(results, cid, batch_id))

    def _show(self, batch_id: str, status: str, done: int, total: int) -> None:
        self._status[batch_id] = {"id": batch_id, "status": status, "done": done, "total": total}

    async def _wait_and_download(self, batch_id: str, endpoint: Endpoint, total: int) -> dict[str, Outcome]:
        errors = 0
        while True:
            try:
                state = await self._retrieve(batch_id, endpoint, total)
            except Exception as e:  # noqa: BLE001 - a blip while polling: try again, give up after 10 in a row
                errors += 1
                status = getattr(e, "status_code", None)
                if errors >= 10 or (isinstance(status, int) and 400 <= status < 500 and status not in (408, 429)):
                    raise
                await asyncio.sleep(min(self.poll_s * errors, 60.0))
                continue
            errors = 0
            if state is not None:
                return await self._download(batch_id, endpoint, state)
            await asyncio.sleep(self.poll_s)

    async def _retrieve(self, batch_id: str, endpoint: Endpoint, total: int) -> Any:
        """The finished batch's state (what :meth:`_download` reads), or None while it runs."""
        if endpoint.api == "openai":
            b = await self._client(endpoint).batches.retrieve(batch_id)
            counts = b.request_counts
            done = (counts.completed + counts.failed) if counts is not None else 0
            self._show(batch_id, str(b.status), done, counts.total if counts is not None else total)
            self.journal.batches.get(batch_id, {})["status"] = str(b.status)
            return b if b.status in ("completed", "failed", "expired", "cancelled") else None
        b = (await _anthropic(endpoint, f"/v1/messages/batches/{batch_id}")).json()
        c = b.get("request_counts") or {}
        done = sum(int(c.get(k) or 0) for k in ("succeeded", "errored", "canceled", "expired"))
        self._show(batch_id, str(b.get("processing_status")), done, total)
        return b if b.get("processing_status") == "ended" else None

    async def _download(self, batch_id: str, endpoint: Endpoint, state: Any) -> dict[str, Outcome]:
        out: dict[str, Outcome] = {}
        if endpoint.api == "openai":
            client = self._client(endpoint)
            for fid in (state.output_file_id, state.error_file_id):
                if not fid:
                    continue
                for row in _rows((await client.files.content(fid)).text):
                    resp = row.get("response") or {}
                    if isinstance(resp, dict) and resp.get("status_code") is not None:
                        out[row["custom_id"]] = (int(resp["status_code"]), resp.get("body"))
                    else:
                        out[row["custom_id"]] = (500, row.get("error") or "no response in the batch output")
            if state.status != "completed":
                why = state.errors.model_dump() if getattr(state, "errors", None) is not None else state.status
                status = 400 if state.status == "failed" else 408  # expired or cancelled: sent again
                out["*"] = (status, {"error": {"message": f"batch {batch_id} {state.status}: {why}"}})
            return out
        r = await _anthropic(
            endpoint, f"/v1/messages/batches/{batch_id}/results", state.get("results_url"), timeout=600
        )
        for row in _rows(r.text):
            res = row.get("result") or {}
            kind = res.get("type")
            if kind == "succeeded":
                out[row["custom_id"]] = (200, res.get("message"))
            elif kind == "errored":
                err = (res.get("error") or {}).get("error") or res.get("error") or {}
                etype = str(err.get("type", "")) if isinstance(err, dict) else ""
                status = {
                    "invalid_request_error": 400,
                    "authentication_error": 401,
                    "permission_error": 403,
                    "not_found_error": 404,
                    "rate_limit_error": 429,
                    "overloaded_error": 529,
                }.get(etype, 500)
                out[row["custom_id"]] = (status, {"error": err})
            else:  # canceled or expired: sent again in a new batch
                out[row["custom_id"]] = (408, {"error": {"message": f"request {kind} in batch {batch_id}"}})
        return out

    def _save(self, batch_id: str, results: dict[str, Outcome]) -> None:
        path = self.journal.results_path(batch_id)
        if path is None or self.journal.root is None:
            return
        lines = "".join(json.dumps({"custom_id": k, "status": s, "body": b}) + "\n" for k, (s, b) in results.items())
        secrets = current_call_context().secrets  # a key a server echoed is not kept in the run folder
        if secrets and secrets.holds_any(lines):
            lines = secrets.mask(lines)
        write_text_in(self.journal.root, path, lines)

    def _read_saved(self, batch_id: str) -> dict[str, Outcome] | None:
        path = self.journal.results_path(batch_id)
        if path is None or self.journal.root is None or self.journal.batches.get(batch_id, {}).get("status") != "done":
            return None
        try:
            text = read_text_in(self.journal.root, path)
        except OSError:
            return None
        return {r["custom_id"]: (r["status"], r.get("body")) for r in _rows(text) if isinstance(r.get("status"), int)}

    async def aclose(self) -> None:
        """Cancel what still runs (a run that ends with calls waiting, e.g. stopped by its budget)."""
        for t in list(self._tasks):
            t.cancel()


class _Resubmit(Exception):
    status_code = 503


def _outcome(results: dict[str, Outcome], cid: str, batch_id: str) -> Outcome:
    """The outcome of request ``cid`` in a finished batch: its own, else the batch's, else "no result" (502)."""
    missing = (502, {"error": {"message": f"no result for this request in batch {batch_id}"}})
    return results.get(cid) or results.get("*") or missing


def _rows(text: str) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSONL text that have a string ``custom_id``."""
    for line in text.split("\n"):
        try:
            row = json.loads(line) if line.strip() else None
        except ValueError:
            continue
        if isinstance(row, dict) and isinstance(row.get("custom_id"), str):
            yield row


async def _find_openai_batch(client: Any, file_id: str) -> str | None:
    """The id of the batch made from uploaded file ``file_id`` among the newest 100, or None."""
    page = await client.batches.list(limit=100)
    return next((str(b.id) for b in page.data if b.input_file_id == file_id), None)


async def _find_anthropic_batch(endpoint: Endpoint, created_after: float, count: int) -> str | None:
    """The one message batch created after ``created_after`` (epoch s) with ``count`` requests, or None."""
    r = await _anthropic(endpoint, "/v1/messages/batches?limit=100")
    hits = []
    for b in r.json().get("data") or []:
        try:
            made = dt.datetime.fromisoformat(str(b.get("created_at")).replace("Z", "+00:00")).timestamp()
        except ValueError:
            continue
        total = sum(int(v or 0) for v in (b.get("request_counts") or {}).values())
        if made >= created_after and total == count:
            hits.append(str(b["id"]))
    return hits[0] if len(hits) == 1 else None


async def _anthropic(
    endpoint: Endpoint, path: str, url: str | None = None, *, body: Any = None, timeout: float = 120
) -> httpx.Response:
    """GET (POST with ``body``) ``path`` of Anthropic's API (or ``url``); raises OpenAIHTTPError for a non-2xx."""
    url = url or endpoint.base_url.rstrip("/").removesuffix("/v1") + path
    headers = {"x-api-key": endpoint.key, "anthropic-version": ANTHROPIC_VERSION, "content-type": "application/json"}
    async with httpx.AsyncClient(timeout=timeout) as http:
        r = await (http.get(url, headers=headers) if body is None else http.post(url, headers=headers, json=body))
    if r.status_code >= 300:
        try:
            detail: Any = r.json()
        except ValueError:
            detail = r.text[:2000]
        raise OpenAIHTTPError(r.status_code, r.headers, detail, str(r.url))
    return r


def current_collector() -> BatchCollector:
    """The current call context's collector (made on first use: calls outside a run batch too, without resume)."""
    ctx = current_call_context()
    if ctx.batches is None:
        ctx.batches = BatchCollector()
    return ctx.batches
