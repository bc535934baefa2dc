"""ToolPool: the tools an agent receives for a run (``--tools search,pdf,python``).

Every call is timed and recorded as an evidence dict ``{"tool", "input", "output", "duration_s"}`` (plus ``"error"``)
into each active :class:`CallBudget` (one per score, kept in a ContextVar). A successful result is cached by its
validated arguments: a repeat is recorded with ``details: {"cached": True}`` and ``duration_s`` 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from pydantic import BaseModel

from ..core import InputError, SgievalError, ToolError
from .base import ExecResult, Sandbox
from .pdf import PdfDocument, ReadPdfInput, read_pdf
from .sandbox import RunPythonInput, get_sandbox
from .search import SearchResults, VisitWebpageInput, WebPage, WebSearch, WebSearchInput, visit_webpage

__all__ = ["ToolPool", "CallBudget", "TOOL_GROUPS", "summarize_output"]

TOOL_GROUPS = {"search": ("web_search", "visit_webpage"), "pdf": ("read_pdf",), "python": ("run_python",)}
"""``--tools`` names -> the tools they enable."""

_ALIASES = {"search": "web_search", "pdf": "read_pdf", "python": "run_python", "visit": "visit_webpage"}
_TOOLS: dict[str, tuple[type[BaseModel], str]] = {
    "web_search": (
        WebSearchInput,
        "Search the web (online: ddgs) or the local corpus (offline: BM25). "
        "Each hit has title, url, snippet and the backend that answered.",
    ),
    "visit_webpage": (VisitWebpageInput, "Fetch a web page (or online PDF) as clean text. Fails fast when offline."),
    "read_pdf": (
        ReadPdfInput,
        "Read a PDF (path or URL): page texts with page numbers, title, authors, year. "
        "Marks the result partial when limits cut it.",
    ),
    "run_python": (
        RunPythonInput,
        "Run Python code (numpy, scipy, pandas, scikit-learn available) in an isolated sandbox without network; "
        "returns stdout, stderr, exit code and which limit killed it, if any.",
    ),
}
"""Tool name -> (arguments schema, description for the model)."""
SUMMARY_CHARS = 500
INPUT_STR_CHARS = 4000

_ACTIVE: contextvars.ContextVar[tuple["CallBudget", ...]] = contextvars.ContextVar("sgieval_tool_budgets", default=())


class CallBudget:
    """Tool calls allowed (``limit``, None: unlimited) and made (``calls``, in order) within one ``pool.budget(n)``
    block; a call beyond the limit raises ToolError and is neither run nor recorded."""

    def __init__(self, limit: int | None):
        if limit is not None and limit < 0:
            raise InputError(f"tool call budget must be >= 0, got {limit}", what="budget", fix="pass 0 or more")
        self.limit = limit
        self.calls: list[dict[str, Any]] = []
        self.used = 0
        self._lock = threading.Lock()

    def _reserve(self, tool: str) -> None:
        with self._lock:
            if self.limit is not None and self.used >= self.limit:
                raise ToolError(
                    f"tool call budget of {self.limit} calls per score is used up (refused: {tool})",
                    what="tool budget",
                    fix="answer with the evidence gathered so far",
                )
            self.used += 1


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def summarize_output(output: Any) -> str:
    """A one-paragraph summary of a tool output, for evidence.

    Args:
        output: the tool's output.

    Returns:
        The summary (<= 500 characters).
    """
    if isinstance(output, ExecResult):
        s = f"exit {output.exit_code}; {output.wall_time_s:.2f} s"
        if output.killed_reason:
            s += f"; {output.outcome}"
        if output.setup_failed:
            s += "; setup failed"
        s += f"; stdout: {_clip(output.stdout.strip(), 220)!r}"
        if output.stderr.strip():
            s += f"; stderr: {output.stderr.strip()[-150:]!r}"
        s += f" [{output.backend}]"
    elif isinstance(output, SearchResults):
        parts = [f"{h.rank}. {_clip(h.title, 60)} <{_clip(h.url, 80)}>" for h in output.hits]
        s = f"{output.backend}: {len(output.hits)} hits" + (": " + "; ".join(parts) if parts else "")
    elif isinstance(output, PdfDocument):
        s = (
            f"{output.title or output.source}: {len(output.pages)}/{output.n_pages} pages"
            f"{' (partial)' if output.partial else ''}: {_clip(output.text, 300)!r}"
        )
    elif isinstance(output, WebPage):
        s = f"{output.title} <{output.url}>{' (truncated)' if output.truncated else ''}: {_clip(output.text, 300)!r}"
    elif isinstance(output, BaseModel):
        s = output.model_dump_json()
    else:
        s = str(output)
    return _clip(s, SUMMARY_CHARS)


def _clip_input(kwargs: dict[str, Any]) -> dict[str, Any]:
    def clip(v: Any, n: int) -> Any:
        return _clip(v, n) if isinstance(v, str) else v

    return {
        k: {kk: clip(vv, 500) for kk, vv in v.items()} if isinstance(v, dict) else clip(v, INPUT_STR_CHARS)
        for k, v in kwargs.items()
    }


class ToolPool:
    """The tools of one run (:meth:`from_names`), with evidence recording and per-score budgets."""

    def __init__(
        self,
        fns: dict[str, Callable[..., BaseModel]],
        *,
        sandbox: Sandbox | None = None,
        search: WebSearch | None = None,
    ):
        self._fns = fns
        """Tool name (a key of :data:`_TOOLS`) -> the function run on its validated arguments."""
        self.sandbox = sandbox
        self.search = search
        self._tools: list[Any] | None = None
        self._results: dict[tuple[str, str], Any] = {}
        """Results by (tool, validated arguments as JSON): a repeated query is served from the earlier result."""
        self._results_lock = threading.Lock()

    @classmethod
    def from_names(
        cls,
        names: Iterable[str] | str,
        *,
        corpus_dir: str | Path | None = None,
        documents: Iterable[Any] | None = None,
        sandbox: Sandbox | str | None = None,
        unsafe_local_exec: bool = False,
        search_backend: str = "auto",
    ) -> "ToolPool":
        """A tool pool with the tools named.

        Args:
            names: ``search`` (web_search + visit_webpage), ``pdf`` (read_pdf), ``python`` (run_python); a
                comma-separated string works too.
            corpus_dir: the offline search corpus folder.
            documents: offline search documents (e.g. the catalog's items).
            sandbox: a Sandbox, or a backend name for :func:`~sgieval.tools.sandbox.get_sandbox` (default ``auto``).
            unsafe_local_exec: allow the plain-subprocess sandbox when bubblewrap cannot start.
            search_backend: ``auto``, ``ddgs`` or ``bm25``.

        Returns:
            The pool.

        Raises:
            InputError: unknown names.
            SandboxUnavailableError: ``python`` is asked for and no sandbox can start.
        """
        if isinstance(names, str):
            names = names.split(",")
        wanted = [n.strip().lower() for n in names if n and n.strip()]
        unknown = [n for n in wanted if n not in TOOL_GROUPS]
        if unknown:
            raise InputError(
                f"unknown tool(s) {', '.join(map(repr, unknown))}",
                what="--tools",
                fix=f"choose among {', '.join(TOOL_GROUPS)}",
            )
        fns: dict[str, Callable[..., BaseModel]] = {}
        sbx: Sandbox | None = None
        ws: WebSearch | None = None
        if "search" in wanted:
            ws = WebSearch(search_backend, corpus_dir=corpus_dir, documents=documents)  # type: ignore[arg-type]
            fns["web_search"] = lambda query, max_results, region, timelimit: ws.search(  # looked up per call
                query, max_results, region=region, timelimit=timelimit
            )
            fns["visit_webpage"] = visit_webpage
        if "pdf" in wanted:
            fns["read_pdf"] = lambda source, pages, max_pages: read_pdf(
                source, pages=pages, max_pages=min(max_pages, 50)
            )
        if "python" in wanted:
            if sandbox is None or isinstance(sandbox, str):
                sandbox = get_sandbox(sandbox or "auto", unsafe_local_exec=unsafe_local_exec)
            sbx = python = sandbox
            fns["run_python"] = lambda code, files, timeout_s, output_files: python.run(
                code, files=files or None, timeout_s=timeout_s, output_files=output_files or None
            )
        return cls(fns, sandbox=sbx, search=ws)

    @property
    def names(self) -> list[str]:
        """Tool names in the pool (e.g. ["web_search", "visit_webpage", "read_pdf", "run_python"])."""
        return list(self._fns)

    def _resolve(self, name: str) -> str:
        key = name if name in self._fns else _ALIASES.get(name, name)
        if key not in self._fns:
            raise InputError(
                f"tool {name!r} is not in this pool",
                what="tool",
                fix=f"use one of {', '.join(self._fns) or '(none: pass --tools)'}",
            )
        return key

    @contextlib.contextmanager
    def budget(self, n: int | None) -> Iterator[CallBudget]:
        """A context in which at most ``n`` tool calls may run; budgets nest (a call counts against every one).

        Args:
            n: most calls (None: no limit).

        Yields:
            The CallBudget whose ``calls`` are the evidence dicts.
        """
        b = CallBudget(n)
        token = _ACTIVE.set(_ACTIVE.get() + (b,))
        try:
            yield b
        finally:
            _ACTIVE.reset(token)

    def call(self, name: str, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        """Run tool ``name`` with ``kwargs`` validated against its input schema; a failed call is recorded too.

        Args:
            name: the tool or its alias (search, visit, pdf, python).
            kwargs: the tool's arguments.

        Returns:
            ``(typed output, evidence dict)``.

        Raises:
            InputError: an unknown tool or bad arguments.
            ToolError: the budget is used up, or the tool failed.
            OfflineError: the tool needs the network and there is none.
            SandboxUnavailableError: ``run_python`` without a sandbox.
        """
        name = self._resolve(name)
        schema = _TOOLS[name][0]
        try:
            args = schema.model_validate(kwargs).model_dump()
        except ValueError as e:
            raise InputError(
                f"bad arguments for {name}: {str(e).splitlines()[0]} ({e})".replace("\n", " "),
                what=f"tool {name}",
                fix=f"fields: {', '.join(schema.model_fields)}",
            ) from e
        budgets = _ACTIVE.get()
        for b in budgets:
            b._reserve(name)
        ev: dict[str, Any] = {"tool": name, "input": _clip_input(args)}
        key = (name, json.dumps(args, sort_keys=True, ensure_ascii=False, default=repr))
        with self._results_lock:
            hit = key in self._results
            out = self._results.get(key)
        t0 = time.perf_counter()
        try:
            if not hit:
                out = self._fns[name](**args)
        except Exception as e:
            ev.update(output=_clip(f"error: {e}", SUMMARY_CHARS), duration_s=round(time.perf_counter() - t0, 4))
            ev["error"] = type(e).__name__
            raise
        else:
            ev.update(output=summarize_output(out), duration_s=0.0 if hit else round(time.perf_counter() - t0, 4))
            if hit:
                ev["details"] = {"cached": True}
            else:
                with self._results_lock:
                    self._results.setdefault(key, out)
        finally:
            for b in budgets:
                b.calls.append(ev)  # list.append is atomic: no lock needed
        return out, ev

    async def acall(self, name: str, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        """:meth:`call` in a worker thread (the context, hence the budgets, is copied).

        Args:
            name: the tool or its alias.
            kwargs: the tool's arguments.

        Returns:
            As :meth:`call`.
        """
        return await asyncio.to_thread(self.call, name, **kwargs)

    @property
    def tools(self) -> list[Any]:
        """LangChain StructuredTools for agents, through :meth:`call`; errors come back as "Error: ..." text."""
        from langchain_core.tools import StructuredTool  # slow to import: only when an agent needs the tools

        if self._tools is None:
            self._tools = [
                StructuredTool.from_function(
                    func=self._agent_call(name),
                    name=name,
                    description=_TOOLS[name][1],
                    args_schema=_TOOLS[name][0],
                    handle_tool_error=True,
                )
                for name in self._fns
            ]
        return list(self._tools)

    def _agent_call(self, name: str) -> Callable[..., Any]:
        """The function behind an agent's tool ``name``: :meth:`call`, errors as ToolException, a JSON-able output."""
        from langchain_core.tools import ToolException  # loaded with the tools (slow to import)

        def run(**kwargs: Any) -> Any:
            try:
                out, _ = self.call(name, **kwargs)
            except SgievalError as e:
                raise ToolException(str(e)) from e
            return out.model_dump(mode="json") if isinstance(out, BaseModel) else out

        return run
