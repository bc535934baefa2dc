"""A local OpenAI-compatible chat-completions server for benchmarks and tests.

Serves ``POST /v1/chat/completions`` (and ``/chat/completions``) on 127.0.0.1
with configurable

* latency (``latency_ms``, applied to every answered request),
* faults: ``error_rate`` (fraction of requests answered with an error; a
  ``share_429`` part of them as HTTP 429 with a ``Retry-After`` header of
  ``retry_after_s`` seconds, the rest as HTTP 500) and ``hang_rate`` (fraction
  of requests that never answer: the connection stays open until the client
  gives up or the server stops).  Faults are drawn from ``random.Random(seed)``
  per request, or chosen by a ``faults(index, body) -> None | "400" | "401" | "403" |
  "429" | "500" | "hang" | "bad_json" | "error_200" | "no_choices" | "echo_key" | "echo_key_200" | "ansi_500"`` callable ("400": an
  invalid-request error, never retried; 401/403: a refused key, as OpenAI answers it; "bad_json": HTTP 200
  with a body cut mid-JSON; "error_200": HTTP 200 whose body is an error object; "no_choices": HTTP 200
  with ``"choices": []``; "echo_key": HTTP 400 whose error message repeats the request's key, as some
  servers do; "echo_key_200": a normal reply whose content is the request's key; "ansi_500": HTTP 500 whose error
  message carries terminal escape sequences);
* replies: ``replies`` is a callable ``(body, index) -> reply`` or a list
  (request ``i`` served gets ``replies[i % len]``); a reply is a string (the
  content) or a dict with optional ``content``, ``tool_calls`` (each
  ``{"name", "arguments" (dict or JSON string), "id"}``), ``usage``
  (``{"prompt_tokens", "completion_tokens"}``) and ``finish_reason``.  The
  default reply is ``"echo: <last user message>"``.  Default usage: prompt
  tokens = whitespace-separated words over all message contents, completion
  tokens = words of the reply content (so tests can hand-compute totals).
  A reply dict may also carry ``reasoning_content`` (returned beside the
  content, as vLLM and DeepSeek do for reasoning models);
* prompt caching (``prompt_cache=True``, ``--prompt-cache``): a served reply's
  default usage reports ``prompt_tokens_details.cached_tokens``, the words at
  the start of the request's messages that an earlier request to the same
  model began with (the longest shared prefix, in whole blocks of
  ``cache_block`` words, as providers cache in blocks; roles and message
  boundaries are part of the prefix, tools and ``response_format`` are not);
* parameter policy: ``reject_params`` names request parameters answered with
  HTTP 400 as the OpenAI API does for reasoning models, e.g.
  ``{"temperature"}``: a request whose body carries ``temperature`` gets
  ``{"error": {"message": "Unsupported value: 'temperature' does not support
  0 with this model. Only the default (1) value is supported.", "type":
  "invalid_request_error", "param": "temperature", "code":
  "unsupported_value"}}`` (other names: ``Unsupported parameter: '<name>' is
  not supported with this model.``, code ``unsupported_parameter``);

``GET /stats`` returns the counts ``{"requests", "served", "429", "500",
"hung"}``; ``GET /log`` every request as ``{"index", "t" (server
``time.monotonic()`` seconds), "outcome", "key" (sha256 of the messages),
"last_user", "user_agent", "authorization" (the request's headers),
"response_format", "tools" (function names), "tool_choice" (as sent), "prompt_cache_key" (as sent, None when
not), "cached_tokens" (with ``prompt_cache``: the cached words counted for it), and with
``log_bodies=True`` "body" (the request body exactly as received, as text) and
"content_type"}``;
``POST /reset`` clears both.

Batch endpoints (the providers' batch APIs, for ``--batch`` runs): OpenAI's ``POST /v1/files`` (multipart upload
of a JSONL of ``/v1/chat/completions`` requests with ``custom_id``), ``POST /v1/batches``, ``GET /v1/batches``
(list), ``GET /v1/batches/{id}`` and ``GET /v1/files/{id}/content``; Anthropic's ``POST /v1/messages/batches``,
``GET /v1/messages/batches`` (list), ``GET /v1/messages/batches/{id}`` and ``.../{id}/results``; an OpenAI batch
of requests to more than one model is refused (HTTP 400), as OpenAI does.  A batch is "in
progress" for ``batch_polls`` retrievals (default 1; an attribute a test may change while the server runs), then
the next retrieval answers every request with the same replies, faults ("400", "429", "500" become error lines)
and usage as direct calls, and completes it.  Each batched request is logged in ``/log`` with ``"via": "batch"``;
``GET /batch_log`` (:meth:`MockOpenAI.batch_log`) lists every batch-endpoint request, and
:meth:`MockOpenAI.submissions` counts the batches each ``custom_id`` was submitted in.  :meth:`MockOpenAI.hold` /
:meth:`MockOpenAI.release` close and open a gate in front of the handler
(kill tests use it to stop a client at a point where every answered call has
reached the client).

Use in-process (tests)::

    with MockOpenAI(latency_ms=10, error_rate=0.2) as mock:
        chat = ChatOpenAI(base_url=mock.url, api_key="test", model="mock", max_retries=0)

or as a script::

    python -m sgieval.bench.mock_openai --port 8011 --latency-ms 100 --error-rate 0.2 --hang-rate 0.02

(``--port 0`` picks a free port; the first stdout line is ``MOCK_OPENAI_URL=<url>``).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import random
import socket
import sys
import threading
import time
from typing import Any, Callable

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

Reply = "str | dict[str, Any]"

ANSI_MESSAGE = "\x1b[2J\x1b[1;31mserver on fire\x1b[0m\x07"
"""The error message of the ``ansi_500`` fault: clear the screen, red text, reset, bell."""


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else str(content)


def messages_key(messages: list[dict[str, Any]]) -> str:
    """sha256 hex of the request's messages (canonical JSON)."""
    return hashlib.sha256(json.dumps(messages, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def last_user(messages: list[dict[str, Any]]) -> str:
    """Text of the last user message ("" when none)."""
    for m in reversed(messages):
        if m.get("role") == "user":
            return _content_text(m.get("content"))
    return ""


def word_count(text: str) -> int:
    return len(text.split())


def prefix_blocks(messages: list[dict[str, Any]], block: int) -> tuple[int, list[bytes]]:
    """The cacheable prefixes of a request's messages.

    Args:
        messages: the request's ``messages`` (chat-completions dicts).
        block: words per cache block (>= 1).

    Returns:
        ``(words, digests)``: the number of content words, and the sha1 digest of every prefix that ends on a
        whole block of ``block`` words (each message's role is hashed at its start, so the same words in another
        role are another prefix).
    """
    h = hashlib.sha1()
    digests: list[bytes] = []
    n = 0
    for m in messages:
        h.update(b"\x00" + str(m.get("role", "")).encode() + b"\x00")
        for w in _content_text(m.get("content")).split():
            h.update(w.encode("utf-8", "surrogatepass") + b" ")
            n += 1
            if n % block == 0:
                digests.append(h.copy().digest())
    return n, digests


def default_reply(body: dict[str, Any], index: int) -> str:
    """``"echo: <last user message>"``."""
    return "echo: " + last_user(body.get("messages", []))


def rejection(param: str, value: Any) -> dict[str, Any]:
    """The OpenAI API's error object for a parameter a model rejects (HTTP 400)."""
    if param == "temperature":
        return {
            "message": f"Unsupported value: 'temperature' does not support {value} with this model. Only the "
            "default (1) value is supported.",
            "type": "invalid_request_error",
            "param": param,
            "code": "unsupported_value",
        }
    return {
        "message": f"Unsupported parameter: '{param}' is not supported with this model.",
        "type": "invalid_request_error",
        "param": param,
        "code": "unsupported_parameter",
    }


class MockOpenAI:
    """The mock server; see the module docstring for every option.

    ``url`` is the OpenAI base URL (``http://127.0.0.1:<port>/v1``) once
    started.  ``stats()`` / ``log()`` read the counters from any thread.
    """

    def __init__(
        self,
        *,
        latency_ms: float = 0.0,
        error_rate: float = 0.0,
        hang_rate: float = 0.0,
        share_429: float = 0.5,
        retry_after_s: float | None = 1.0,
        replies: Callable[[dict[str, Any], int], Any] | list[Any] | None = None,
        faults: Callable[[int, dict[str, Any]], str | None] | None = None,
        seed: int = 0,
        host: str = "127.0.0.1",
        port: int = 0,
        hang_s: float = 3600.0,
        reject_params: set[str] | frozenset[str] | tuple[str, ...] = (),
        log_bodies: bool = False,
        batch_polls: "int | Callable[[int], int]" = 1,
        batch_api: bool = True,
        prompt_cache: bool = False,
        cache_block: int = 16,
    ):
        for name, v in (("error_rate", error_rate), ("hang_rate", hang_rate), ("share_429", share_429)):
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} must be within 0-1, got {v}")
        if error_rate + hang_rate > 1.0:
            raise ValueError(f"error_rate + hang_rate must be <= 1, got {error_rate + hang_rate}")
        self.latency_ms = latency_ms
        self.error_rate = error_rate
        self.hang_rate = hang_rate
        self.share_429 = share_429
        self.retry_after_s = retry_after_s
        self.replies = replies
        self.faults = faults
        self.hang_s = hang_s
        self.reject_params = frozenset(reject_params)
        self.log_bodies = log_bodies
        self.batch_polls = batch_polls
        """Retrievals of a batch (``GET /v1/batches/{id}``, ``GET /v1/messages/batches/{id}``) answered
        "in progress" before it completes, or a function of the batch's index (0 for the first batch created)
        giving that number; may be changed while the server runs (a test that kills a client mid-poll keeps a
        batch in progress, then lets it complete for the resumed run)."""
        self.batch_api = batch_api
        """False: every batch endpoint answers HTTP 404, as a server without a batch API does."""
        self._files: dict[str, bytes] = {}
        self._batches: dict[str, dict[str, Any]] = {}
        self._batch_log: list[dict[str, Any]] = []
        if cache_block < 1:
            raise ValueError(f"cache_block must be >= 1, got {cache_block}")
        self.prompt_cache = prompt_cache
        self.cache_block = cache_block
        self._prefixes: dict[str, set[bytes]] = {}  # model -> digests of the prefixes its requests sent
        self.host = host
        self.port = port
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._counts = {"requests": 0, "served": 0, "429": 0, "500": 0, "hung": 0}
        self._passed = 0
        self._gate: asyncio.Event | None = None
        self._hold_at: int | None = None
        self._log: list[dict[str, Any]] = []
        self._served = 0
        self._stop_event: asyncio.Event | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/files", self._batch_route(self._file_upload), methods=["POST"]),
                Route("/v1/files/{file_id}/content", self._batch_route(self._file_content), methods=["GET"]),
                Route("/v1/batches", self._batch_route(self._batch_create), methods=["POST"]),
                Route("/v1/batches", self._batch_route(self._batch_list), methods=["GET"]),
                Route("/v1/batches/{batch_id}", self._batch_route(self._batch_retrieve), methods=["GET"]),
                Route("/v1/messages/batches", self._batch_route(self._msgbatch_create), methods=["POST"]),
                Route("/v1/messages/batches", self._batch_route(self._msgbatch_list), methods=["GET"]),
                Route("/v1/messages/batches/{batch_id}", self._batch_route(self._msgbatch_retrieve), methods=["GET"]),
                Route(
                    "/v1/messages/batches/{batch_id}/results",
                    self._batch_route(self._msgbatch_results),
                    methods=["GET"],
                ),
                Route("/batch_log", self._get_batch_log, methods=["GET"]),
                Route("/stats", self._stats, methods=["GET"]),
                Route("/log", self._get_log, methods=["GET"]),
                Route("/reset", self._reset, methods=["POST"]),
            ]
        )

    # ---------------------------------------------------------------- public
    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def stats(self) -> dict[str, int]:
        """Counts: requests received, served (200), 429, 500, hung."""
        with self._lock:
            return dict(self._counts)

    def log(self) -> list[dict[str, Any]]:
        """Every request received, in arrival order (see module doc)."""
        with self._lock:
            return [dict(r) for r in self._log]

    def batch_log(self) -> list[dict[str, Any]]:
        """Every batch-endpoint request, in arrival order: ``{"t", "op"}`` with ``op`` one of ``file_upload``,
        ``batch_create``, ``batch_retrieve``, ``batch_list``, ``file_content`` (OpenAI) and ``msgbatch_create``,
        ``msgbatch_retrieve``, ``msgbatch_list``, ``msgbatch_results`` (Anthropic); creations add
        ``batch_id`` and ``custom_ids``, retrievals ``batch_id`` and the ``status`` answered."""
        with self._lock:
            return [dict(r) for r in self._batch_log]

    def submissions(self) -> dict[str, int]:
        """custom_id -> how many batches it was submitted in (OpenAI and Anthropic together)."""
        out: dict[str, int] = {}
        for r in self.batch_log():
            for cid in r.get("custom_ids") or []:
                out[cid] = out.get(cid, 0) + 1
        return out

    def passed(self) -> int:
        """Requests that got past the gate (they will be answered or faulted)."""
        with self._lock:
            return self._passed

    def hold(self) -> None:
        """Close the gate: requests arriving from now on wait (not counted as
        served) until :meth:`release`.  Lets a test reach a quiescent point."""
        done = threading.Event()

        def close() -> None:
            if self._gate is not None:
                self._gate.clear()
            done.set()

        self._call(close)
        done.wait(10)

    def hold_at(self, n: int) -> None:
        """Close the gate by itself once ``n`` requests in all have got past it (:meth:`passed`): the
        request that makes ``n`` is answered, later ones wait until :meth:`release`.  Lets a test stop a
        client at an exact number of calls however late the test itself gets scheduled."""
        with self._lock:
            self._hold_at = n

    def release(self) -> None:
        """Open the gate.  Requests held meanwhile are dropped (HTTP 503,
        outcome "dropped", not counted as served): their client is gone."""
        self._call(lambda: self._gate.set() if self._gate else None)

    def _call(self, fn: Callable[[], Any]) -> None:
        loop = getattr(self, "_loop", None)
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(fn)

    def reset(self) -> None:
        with self._lock:
            self._passed = 0
            for k in self._counts:
                self._counts[k] = 0
            self._log.clear()
            self._served = 0
            self._batch_log.clear()
            self._prefixes.clear()

    # ------------------------------------------------------------- handlers
    def _choose_fault(self, index: int, body: dict[str, Any]) -> str | None:
        if self.faults is not None:
            return self.faults(index, body)
        with self._lock:
            r = self._rng.random()
            r2 = self._rng.random()
        if r < self.hang_rate:
            return "hang"
        if r < self.hang_rate + self.error_rate:
            return "429" if r2 < self.share_429 else "500"
        return None

    def _cached_words(self, body: dict[str, Any]) -> int:
        """Words at the start of ``body``'s messages an earlier request to the same model sent (whole blocks of
        :attr:`cache_block`); this request's prefixes are remembered for later ones."""
        _n, digests = prefix_blocks(body.get("messages") or [], self.cache_block)
        with self._lock:
            seen = self._prefixes.setdefault(str(body.get("model", "")), set())
            hit = 0
            for i, d in enumerate(digests):
                if d not in seen:
                    break
                hit = i + 1
            seen.update(digests)
        return hit * self.cache_block

    def _reply_for(self, body: dict[str, Any], index: int) -> dict[str, Any]:
        if self.replies is None:
            spec: Any = default_reply(body, index)
        elif callable(self.replies):
            spec = self.replies(body, index)
        else:
            spec = self.replies[index % len(self.replies)]
        if isinstance(spec, str):
            spec = {"content": spec}
        content = spec.get("content")
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if spec.get("reasoning_content") is not None:
            message["reasoning_content"] = spec["reasoning_content"]
        tool_calls = []
        for i, tc in enumerate(spec.get("tool_calls") or []):
            if "function" in tc:
                tool_calls.append(
                    {"id": tc.get("id", f"call_{index}_{i}"), "type": "function", "function": tc["function"]}
                )
                continue
            args = tc.get("arguments", {})
            tool_calls.append(
                {
                    "id": tc.get("id", f"call_{index}_{i}"),
                    "type": "function",
                    "function": {"name": tc["name"], "arguments": args if isinstance(args, str) else json.dumps(args)},
                }
            )
        if tool_calls:
            message["tool_calls"] = tool_calls
        msgs = body.get("messages", [])
        usage = dict(spec.get("usage") or {})
        usage.setdefault("prompt_tokens", sum(word_count(_content_text(m.get("content"))) for m in msgs))
        usage.setdefault("completion_tokens", word_count(content or ""))
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if self.prompt_cache and "prompt_tokens_details" not in usage:
            cached = min(self._cached_words(body), usage["prompt_tokens"])
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
        finish = spec.get("finish_reason") or ("tool_calls" if tool_calls else "stop")
        return {
            "id": f"chatcmpl-mock-{index}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "mock"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": usage,
        }

    async def _chat(self, request: Request) -> Response:
        t = time.monotonic()
        try:
            raw = await request.body()
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return JSONResponse({"error": {"message": "invalid JSON body", "type": "invalid_request_error"}}, 400)
        msgs = body.get("messages") or []
        with self._lock:
            index = self._counts["requests"]
            self._counts["requests"] += 1
            entry = {
                "index": index,
                "t": t,
                "outcome": "pending",
                "key": messages_key(msgs),
                "last_user": last_user(msgs),
                "user_agent": request.headers.get("user-agent", ""),
                "authorization": request.headers.get("authorization", ""),
                "response_format": body.get("response_format"),
                "tools": [
                    ((t.get("function") or {}).get("name")) for t in body.get("tools") or [] if isinstance(t, dict)
                ],
                "tool_choice": body.get("tool_choice"),
                "prompt_cache_key": body.get("prompt_cache_key"),
            }
            if self.log_bodies:
                entry["body"] = raw.decode("utf-8")
                entry["content_type"] = request.headers.get("content-type", "")
            self._log.append(entry)
        if body.get("stream"):
            entry["outcome"] = "400"
            return JSONResponse(
                {"error": {"message": "streaming is not supported by the mock", "type": "invalid_request_error"}}, 400
            )
        rejected = sorted(p for p in self.reject_params if p in body)
        if rejected:
            with self._lock:
                entry["outcome"] = "400"
            return JSONResponse({"error": rejection(rejected[0], body[rejected[0]])}, 400)
        if self._gate is not None and not self._gate.is_set():
            await self._gate.wait()
            with self._lock:
                entry["outcome"] = "dropped"
            return JSONResponse({"error": {"message": "dropped at the gate", "type": "server_error"}}, 503)
        with self._lock:
            self._passed += 1
            if self._hold_at is not None and self._passed >= self._hold_at and self._gate is not None:
                self._hold_at = None
                self._gate.clear()  # on the server's loop: later requests wait at the gate
        fault = self._choose_fault(index, body)
        if fault == "hang":
            with self._lock:
                self._counts["hung"] += 1
                entry["outcome"] = "hung"
            assert self._stop_event is not None
            try:
                await asyncio.wait_for(self._stop_event.wait(), self.hang_s)
            except asyncio.TimeoutError:
                pass
            return JSONResponse({"error": {"message": "server stopping", "type": "server_error"}}, 503)
        if self.latency_ms:
            await asyncio.sleep(self.latency_ms / 1000.0)
        if fault == "429":
            with self._lock:
                self._counts["429"] += 1
                entry["outcome"] = "429"
            headers = {}
            if self.retry_after_s is not None:
                headers["retry-after"] = f"{self.retry_after_s:g}"
            return JSONResponse(
                {
                    "error": {
                        "message": "Rate limit reached (mock)",
                        "type": "rate_limit_error",
                        "code": "rate_limit_exceeded",
                    }
                },
                429,
                headers=headers,
            )
        if fault == "400":
            with self._lock:
                entry["outcome"] = "400"
            return JSONResponse({"error": {"message": "Invalid request (mock)", "type": "invalid_request_error"}}, 400)
        if fault in ("401", "403"):
            with self._lock:
                entry["outcome"] = fault
            msg = (
                "Incorrect API key provided (mock)"
                if fault == "401"
                else "You are not allowed to use this model (mock)"
            )
            return JSONResponse(
                {
                    "error": {
                        "message": msg,
                        "type": "invalid_request_error",
                        "code": "invalid_api_key" if fault == "401" else "forbidden",
                    }
                },
                int(fault),
            )
        key = request.headers.get("authorization", "").removeprefix("Bearer ")
        if fault == "echo_key":
            with self._lock:
                entry["outcome"] = "400"
            return JSONResponse(
                {"error": {"message": f"Malformed request for key {key} (mock)", "type": "invalid_request_error"}}, 400
            )
        if fault in ("bad_json", "error_200", "no_choices"):
            with self._lock:
                entry["outcome"] = fault
            if fault == "bad_json":
                return Response('{"id": "chatcmpl-mock", "choices": [{"index": 0, "mess', media_type="application/json")
            if fault == "error_200":
                return JSONResponse({"error": {"message": "The server had an error (mock)", "type": "server_error"}})
            return JSONResponse(
                {"id": "chatcmpl-mock", "object": "chat.completion", "model": body.get("model", "mock"), "choices": []}
            )
        if fault == "ansi_500":
            with self._lock:
                self._counts["500"] += 1
                entry["outcome"] = "500"
            return JSONResponse(
                {"error": {"message": ANSI_MESSAGE, "type": "server_error"}},
                500,
            )
        if fault == "500":
            with self._lock:
                self._counts["500"] += 1
                entry["outcome"] = "500"
            return JSONResponse({"error": {"message": "Internal server error (mock)", "type": "server_error"}}, 500)
        with self._lock:
            served = self._served
            self._served += 1
        payload = self._reply_for(body, served)
        if self.prompt_cache:
            entry["cached_tokens"] = ((payload.get("usage") or {}).get("prompt_tokens_details") or {}).get(
                "cached_tokens"
            )
        if fault == "echo_key_200":
            payload["choices"][0]["message"]["content"] = f"your key is {key}"
        with self._lock:
            self._counts["served"] += 1
            entry["outcome"] = "200"
        try:
            return JSONResponse(payload)
        except UnicodeEncodeError:  # a scripted lone surrogate: sent as the JSON escape "\\ud800" (valid JSON)
            return Response(json.dumps(payload), media_type="application/json")  # type: ignore[return-value]

    # ------------------------------------------------------------- batches
    def _batch_route(self, handler: Callable[[Request], Any]) -> Callable[[Request], Any]:
        async def route(request: Request) -> Response:
            if not self.batch_api:
                return JSONResponse({"error": {"message": "Not Found", "type": "invalid_request_error"}}, 404)
            return await handler(request)

        return route

    def _note_batch(self, op: str, **info: Any) -> None:
        with self._lock:
            self._batch_log.append({"t": time.monotonic(), "op": op, **info})

    def _answer_line(self, body: dict[str, Any], custom_id: str, batch_id: str) -> tuple[int, dict[str, Any]]:
        """(HTTP status, reply body) of one batched chat-completions request: the reply of :meth:`_reply_for`,
        or a fault from ``faults`` ("400", "429", "500"; others are answered normally); logged in :meth:`log`
        like a direct request, with ``"via": "batch"``."""
        msgs = body.get("messages") or []
        with self._lock:
            index = self._counts["requests"]
            self._counts["requests"] += 1
            entry = {
                "index": index,
                "t": time.monotonic(),
                "outcome": "pending",
                "key": messages_key(msgs),
                "last_user": last_user(msgs),
                "response_format": body.get("response_format"),
                "tools": [
                    ((t.get("function") or {}).get("name") or t.get("name"))
                    for t in body.get("tools") or []
                    if isinstance(t, dict)
                ],
                "tool_choice": body.get("tool_choice"),
                "via": "batch",
                "batch_id": batch_id,
                "custom_id": custom_id,
            }
            if self.log_bodies:
                entry["body"] = json.dumps(body)
            self._log.append(entry)
        fault = self.faults(index, body) if self.faults is not None else None
        if fault in ("400", "429", "500"):
            with self._lock:
                entry["outcome"] = fault
                if fault in ("429", "500"):
                    self._counts[fault] += 1
            kind = {"400": "invalid_request_error", "429": "rate_limit_error", "500": "server_error"}[fault]
            return int(fault), {"error": {"message": f"batched request failed (mock {fault})", "type": kind}}
        with self._lock:
            served = self._served
            self._served += 1
        payload = self._reply_for(body, served)
        with self._lock:
            self._counts["served"] += 1
            entry["outcome"] = "200"
        return 200, payload

    def _complete_openai(self, b: dict[str, Any]) -> None:
        """Answer every request of OpenAI batch ``b`` and make its output (and error) file."""
        out: list[str] = []
        err: list[str] = []
        for n, line in enumerate(b["_lines"]):
            req = json.loads(line)
            status, payload = self._answer_line(req.get("body") or {}, req["custom_id"], b["id"])
            row = {
                "id": f"batch_req_{b['id']}_{n}",
                "custom_id": req["custom_id"],
                "response": {"status_code": status, "request_id": f"req_{n}", "body": payload},
                "error": None,
            }
            (out if status == 200 else err).append(json.dumps(row))
        with self._lock:
            for name, rows in (("output_file_id", out), ("error_file_id", err)):
                if rows:
                    fid = f"file-mock-{len(self._files)}"
                    self._files[fid] = ("\n".join(rows) + "\n").encode()
                    b[name] = fid
            b["request_counts"] = {"total": len(b["_lines"]), "completed": len(out), "failed": len(err)}
            b["status"] = "completed"
            b["completed_at"] = int(time.time())

    def _polls_needed(self, b: dict[str, Any]) -> int:
        polls = self.batch_polls
        return int(polls(b["_index"]) if callable(polls) else polls)

    def _openai_view(self, b: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in b.items() if not k.startswith("_")}

    async def _file_upload(self, request: Request) -> Response:
        import email.parser
        import email.policy

        raw = await request.body()
        head = f"Content-Type: {request.headers.get('content-type', '')}\r\n\r\n".encode()
        msg = email.parser.BytesParser(policy=email.policy.default).parsebytes(head + raw)
        fields: dict[str, Any] = {}
        for part in msg.iter_parts() if msg.is_multipart() else []:
            name = part.get_param("name", header="content-disposition")
            fields[str(name)] = (part.get_filename(), part.get_payload(decode=True))
        if "file" not in fields:
            return JSONResponse({"error": {"message": "no file part", "type": "invalid_request_error"}}, 400)
        filename, data = fields["file"]
        purpose = (fields.get("purpose") or (None, b""))[1].decode()
        with self._lock:
            fid = f"file-mock-{len(self._files)}"
            self._files[fid] = data
        self._note_batch("file_upload", file_id=fid, bytes=len(data), purpose=purpose)
        return JSONResponse(
            {
                "id": fid,
                "object": "file",
                "bytes": len(data),
                "created_at": int(time.time()),
                "filename": filename or "upload.jsonl",
                "purpose": purpose or "batch",
                "status": "processed",
            }
        )

    async def _file_content(self, request: Request) -> Response:
        fid = request.path_params["file_id"]
        with self._lock:
            data = self._files.get(fid)
        self._note_batch("file_content", file_id=fid)
        if data is None:
            return JSONResponse({"error": {"message": f"no file {fid}", "type": "invalid_request_error"}}, 404)
        return Response(data, media_type="application/octet-stream")

    async def _batch_create(self, request: Request) -> Response:
        body = json.loads(await request.body())
        fid = body.get("input_file_id")
        with self._lock:
            data = self._files.get(fid)
        if data is None:
            return JSONResponse({"error": {"message": f"no file {fid}", "type": "invalid_request_error"}}, 400)
        lines = [x for x in data.decode().split("\n") if x.strip()]
        custom_ids = [json.loads(x)["custom_id"] for x in lines]
        models = {(json.loads(x).get("body") or {}).get("model") for x in lines}
        if len(models) > 1:  # as OpenAI: "each input file can only include requests to a single model"
            return JSONResponse(
                {
                    "error": {
                        "message": f"the batch mixes models {sorted(map(str, models))}",
                        "type": "invalid_request_error",
                    }
                },
                400,
            )
        if len(set(custom_ids)) != len(custom_ids):
            return JSONResponse(
                {"error": {"message": "duplicate custom_id in the batch", "type": "invalid_request_error"}}, 400
            )
        with self._lock:
            bid = f"batch_mock_{len(self._batches)}"
            b = {
                "id": bid,
                "object": "batch",
                "endpoint": body.get("endpoint"),
                "errors": None,
                "input_file_id": fid,
                "completion_window": body.get("completion_window", "24h"),
                "status": "validating",
                "output_file_id": None,
                "error_file_id": None,
                "created_at": int(time.time()),
                "completed_at": None,
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                "metadata": body.get("metadata"),
                "_lines": lines,
                "_polls": 0,
                "_index": len(self._batches),
            }
            self._batches[bid] = b
        self._note_batch("batch_create", batch_id=bid, custom_ids=custom_ids, input_file_id=fid)
        return JSONResponse(self._openai_view(b))

    async def _batch_retrieve(self, request: Request) -> Response:
        bid = request.path_params["batch_id"]
        with self._lock:
            b = self._batches.get(bid)
        if b is None or b.get("object") != "batch":
            return JSONResponse({"error": {"message": f"no batch {bid}", "type": "invalid_request_error"}}, 404)
        with self._lock:
            b["_polls"] += 1
            need = self._polls_needed(b)
            due = b["status"] != "completed" and b["_polls"] > need
            if b["status"] == "validating":
                b["status"] = "in_progress"
            if b["status"] == "in_progress" and not due:
                total = b["request_counts"]["total"]
                b["request_counts"]["completed"] = min(total - 1, total * b["_polls"] // (need + 1))
        if due:
            self._complete_openai(b)
        self._note_batch("batch_retrieve", batch_id=bid, status=b["status"])
        return JSONResponse(self._openai_view(b))

    async def _batch_list(self, request: Request) -> Response:
        self._note_batch("batch_list")
        with self._lock:
            data = [self._openai_view(b) for b in reversed(self._batches.values()) if b.get("object") == "batch"]
        return JSONResponse({"object": "list", "data": data, "has_more": False})

    # Anthropic message batches
    def _anthropic_message(self, params: dict[str, Any], custom_id: str, batch_id: str) -> tuple[str, Any]:
        """("succeeded", an Anthropic message) or ("errored", an error) for one batched Messages request: the
        mock's chat reply turned into content blocks (text, tool_use) with Anthropic's stop reasons."""
        msgs = list(params.get("messages") or [])
        system = params.get("system")
        if system:
            text = system if isinstance(system, str) else _content_text(system)
            msgs = [{"role": "system", "content": text}, *msgs]
        status, payload = self._answer_line({**params, "messages": msgs}, custom_id, batch_id)
        if status != 200:
            return "errored", {"type": "error", "error": {"type": "api_error", "message": payload["error"]["message"]}}
        choice = payload["choices"][0]
        m = choice["message"]
        blocks: list[dict[str, Any]] = []
        if m.get("content"):
            blocks.append({"type": "text", "text": m["content"]})
        for tc in m.get("tool_calls") or []:
            args = tc["function"]["arguments"]
            blocks.append(
                {
                    "type": "tool_use",
                    "id": tc["id"],
                    "name": tc["function"]["name"],
                    "input": json.loads(args) if isinstance(args, str) else args,
                }
            )
        stop = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}.get(choice["finish_reason"])
        return "succeeded", {
            "id": f"msg_mock_{custom_id[:12]}",
            "type": "message",
            "role": "assistant",
            "model": params.get("model", "mock"),
            "content": blocks,
            "stop_reason": stop or choice["finish_reason"],
            "stop_sequence": None,
            "usage": {
                "input_tokens": payload["usage"]["prompt_tokens"],
                "output_tokens": payload["usage"]["completion_tokens"],
            },
        }

    def _msgbatch_view(self, b: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in b.items() if not k.startswith("_")}

    async def _msgbatch_create(self, request: Request) -> Response:
        body = json.loads(await request.body())
        reqs = body.get("requests") or []
        custom_ids = [r.get("custom_id") for r in reqs]
        if not reqs or len(set(custom_ids)) != len(custom_ids):
            return JSONResponse(
                {"type": "error", "error": {"type": "invalid_request_error", "message": "bad or duplicate custom_id"}},
                400,
            )
        with self._lock:
            bid = f"msgbatch_mock_{len(self._batches)}"
            b = {
                "id": bid,
                "type": "message_batch",
                "processing_status": "in_progress",
                "request_counts": {"processing": len(reqs), "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0},
                "ended_at": None,
                "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "expires_at": None,
                "cancel_initiated_at": None,
                "results_url": None,
                "_requests": reqs,
                "_polls": 0,
                "_index": len(self._batches),
                "_results": None,
            }
            self._batches[bid] = b
        self._note_batch("msgbatch_create", batch_id=bid, custom_ids=custom_ids)
        return JSONResponse(self._msgbatch_view(b))

    async def _msgbatch_retrieve(self, request: Request) -> Response:
        bid = request.path_params["batch_id"]
        with self._lock:
            b = self._batches.get(bid)
        if b is None or b.get("type") != "message_batch":
            return JSONResponse({"type": "error", "error": {"type": "not_found_error", "message": bid}}, 404)
        with self._lock:
            b["_polls"] += 1
            due = b["processing_status"] != "ended" and b["_polls"] > self._polls_needed(b)
        if due:
            rows, counts = [], {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
            for r in b["_requests"]:
                kind, result = self._anthropic_message(r.get("params") or {}, r["custom_id"], bid)
                counts[kind] += 1
                res = {"type": kind, "message": result} if kind == "succeeded" else {"type": kind, "error": result}
                rows.append(json.dumps({"custom_id": r["custom_id"], "result": res}))
            with self._lock:
                b["_results"] = ("\n".join(rows) + "\n").encode()
                b["request_counts"] = counts
                b["processing_status"] = "ended"
                b["ended_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                b["results_url"] = f"http://{self.host}:{self.port}/v1/messages/batches/{bid}/results"
        self._note_batch("msgbatch_retrieve", batch_id=bid, status=b["processing_status"])
        return JSONResponse(self._msgbatch_view(b))

    async def _msgbatch_list(self, request: Request) -> Response:
        self._note_batch("msgbatch_list")
        with self._lock:
            data = [
                self._msgbatch_view(b) for b in reversed(self._batches.values()) if b.get("type") == "message_batch"
            ]
        return JSONResponse({"data": data, "has_more": False, "first_id": None, "last_id": None})

    async def _msgbatch_results(self, request: Request) -> Response:
        bid = request.path_params["batch_id"]
        with self._lock:
            b = self._batches.get(bid)
        self._note_batch("msgbatch_results", batch_id=bid)
        if b is None or b.get("_results") is None:
            return JSONResponse({"type": "error", "error": {"type": "not_found_error", "message": bid}}, 404)
        return Response(b["_results"], media_type="application/x-jsonl")

    async def _get_batch_log(self, request: Request) -> JSONResponse:
        return JSONResponse(self.batch_log())

    async def _stats(self, request: Request) -> JSONResponse:
        return JSONResponse(self.stats())

    async def _get_log(self, request: Request) -> JSONResponse:
        return JSONResponse(self.log())

    async def _reset(self, request: Request) -> JSONResponse:
        self.reset()
        return JSONResponse({"ok": True})

    # ------------------------------------------------------------ lifecycle
    def _bind(self) -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # asyncio sets TCP_NODELAY only on sockets whose proto is IPPROTO_TCP;
        # this one (proto 0) and the connections it accepts would otherwise
        # wait ~40 ms per reply (Nagle's algorithm + the client's delayed ACK).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        return sock

    def _config(self) -> uvicorn.Config:
        return uvicorn.Config(
            self.app,
            log_level="warning",
            lifespan="off",
            access_log=False,
            timeout_graceful_shutdown=1,
            backlog=4096,
            limit_concurrency=None,
        )

    async def serve(self) -> None:
        """Serve on the current event loop until :meth:`stop` (script mode)."""
        self._sock = self._sock or self._bind()
        self._stop_event = asyncio.Event()
        self._gate = asyncio.Event()
        self._gate.set()
        self._server = uvicorn.Server(self._config())
        self._loop = asyncio.get_running_loop()
        await self._server.serve(sockets=[self._sock])

    def start(self, timeout_s: float = 10.0) -> "MockOpenAI":
        """Start in a daemon thread on a free port (or ``port``); returns self."""
        self._sock = self._bind()
        self._thread = threading.Thread(target=lambda: asyncio.run(self.serve()), daemon=True, name="mock-openai")
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not (self._server is not None and self._server.started):
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"mock OpenAI server did not start on {self.url}")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Release hung requests and stop the server thread."""
        if self._server is None:
            return
        loop = getattr(self, "_loop", None)
        if loop is not None and self._stop_event is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self._stop_event.set)
            except RuntimeError:
                pass
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = None

    def __enter__(self) -> "MockOpenAI":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        prog="python -m sgieval.bench.mock_openai", description="OpenAI-compatible mock chat-completions server."
    )
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8011, help="0 picks a free port")
    ap.add_argument("--latency-ms", type=float, default=0.0)
    ap.add_argument("--error-rate", type=float, default=0.0, help="fraction answered 429/500 (0-1)")
    ap.add_argument("--share-429", type=float, default=0.5, help="fraction of the errors that are 429 (0-1)")
    ap.add_argument("--hang-rate", type=float, default=0.0, help="fraction that never answer (0-1)")
    ap.add_argument("--retry-after", type=float, default=1.0, help="Retry-After seconds on 429")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch-polls", type=int, default=1, help="retrievals a batch stays in progress")
    ap.add_argument(
        "--prompt-cache",
        action="store_true",
        help="report prompt_tokens_details.cached_tokens: the words a request shares at its start with an "
        "earlier request to the same model",
    )
    ap.add_argument(
        "--reject-params",
        default="",
        help="comma-separated request parameters answered with HTTP 400 "
        "as OpenAI does for reasoning models (e.g. temperature)",
    )
    a = ap.parse_args(argv)
    mock = MockOpenAI(
        latency_ms=a.latency_ms,
        error_rate=a.error_rate,
        share_429=a.share_429,
        hang_rate=a.hang_rate,
        retry_after_s=a.retry_after,
        seed=a.seed,
        batch_polls=a.batch_polls,
        host=a.host,
        port=a.port,
        reject_params={p.strip() for p in a.reject_params.split(",") if p.strip()},
        prompt_cache=a.prompt_cache,
    )
    mock._sock = mock._bind()
    print(f"MOCK_OPENAI_URL={mock.url}", flush=True)
    try:
        try:
            import uvloop  # uvicorn[standard]: the server's own CPU cost per request halves

            uvloop.run(mock.serve())
        except ImportError:
            asyncio.run(mock.serve())
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
