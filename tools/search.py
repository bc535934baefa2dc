"""Web search and page fetching: :class:`WebSearch` backends ``ddgs`` (online metasearch, backoff on rate limits),
``bm25`` (offline: a ``bm25s`` index over a corpus folder and documents handed in) and ``auto`` (ddgs when online, else
bm25); :func:`visit_webpage` fetches a URL to clean text.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import threading
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Iterable, Iterator, Literal

from pydantic import BaseModel, Field

from ..core import InputError, OfflineError, ToolError, split_jsonl
from ..core.retry import RetriesExhausted, RetryPolicy, retry
from ..core.retry import retry_after_s as header_retry_after_s
from .net import DDGS_PROBE_HOST, fetch_url, network_status
from .pdf import read_pdf

__all__ = [
    "Document",
    "SearchHit",
    "SearchResults",
    "WebPage",
    "BM25Index",
    "WebSearch",
    "network_status",
    "fetch_url",
    "visit_webpage",
    "html_to_text",
    "DDGS_PROBE_HOST",
]


class _HTMLText(HTMLParser):
    _SKIP = {"script", "style", "noscript", "svg", "template", "iframe", "head", "nav", "footer", "form"}
    _BLOCK = set("p div br li tr h1 h2 h3 h4 h5 h6 section article header pre blockquote table ul ol dd dt hr".split())

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self._skip = 0
        self._in_title = False

    def _tag(self, tag: str, start: bool) -> None:
        if tag == "title":
            self._in_title = start
        elif tag in self._SKIP:
            self._skip = self._skip + 1 if start else max(0, self._skip - 1)
        elif tag in self._BLOCK:
            self.parts.append("\n")

    def handle_starttag(self, tag, attrs):  # noqa: ANN001
        self._tag(tag, True)

    def handle_endtag(self, tag):  # noqa: ANN001
        self._tag(tag, False)

    def handle_data(self, data):  # noqa: ANN001
        if self._in_title:
            self.title += data
        elif not self._skip:
            self.parts.append(data)


def html_to_text(html: str) -> tuple[str, str]:
    """(title, text) of an HTML page: scripts, styles, navigation and forms dropped, block lines, spaces squeezed."""
    p = _HTMLText()
    with contextlib.suppress(Exception):  # HTMLParser is lenient; be safe anyway
        p.feed(html)
        p.close()
    text = "".join(p.parts)
    lines = [re.sub(r"[ \t\r\f\v\xa0]+", " ", ln).strip() for ln in text.split("\n")]
    text = "\n".join(ln for ln in lines if ln)
    return re.sub(r"\s+", " ", p.title).strip(), text


class WebPage(BaseModel):
    """Clean text of one fetched page; ``truncated`` when cut at ``max_chars``."""

    url: str
    title: str = ""
    text: str = ""
    truncated: bool = False
    backend: str = "httpx"


def visit_webpage(url: str, *, max_chars: int = 20_000, timeout_s: float = 15.0, transport: Any = None) -> WebPage:
    """Fetch ``url`` to clean text (HTML, plain text, or PDF via read_pdf).

    Args:
        url: the page.
        max_chars: most characters kept.
        timeout_s: the fetch's time limit (s).
        transport: an httpx transport (see :func:`fetch_url`; tests pass a mock).

    Returns:
        The page: URL, title, text, ``truncated``.

    Raises:
        OfflineError: offline, within a second (:func:`network_status`).
    """
    got = fetch_url(url, timeout_s=timeout_s, transport=transport)
    ctype = got.content_type.lower()
    if "pdf" in ctype or got.content[:5] == b"%PDF-":
        doc = read_pdf(got.content, max_chars=max_chars)
        title, text = doc.title or "", doc.text
    elif "html" in ctype or "<html" in got.text[:2000].lower():
        title, text = html_to_text(got.text)
    else:
        title, text = "", got.text
    return WebPage(url=got.url, title=title, text=text[:max_chars], truncated=len(text) > max_chars)


class Document(BaseModel):
    """A searchable text: ``id`` unique, ``source`` a path, URL or item id."""

    id: str
    title: str = ""
    text: str
    source: str = ""


class SearchHit(BaseModel):
    """One search result.  ``score``: BM25 score (bm25) or None (ddgs); ``backend``: "ddgs" or "bm25"; ``rank`` starts
    at 1."""

    rank: int
    title: str
    url: str
    snippet: str
    backend: str
    score: float | None = None
    doc_id: str | None = None


class SearchResults(BaseModel):
    """Hits of one query, best first, with the backend that answered."""

    query: str
    backend: str
    hits: list[SearchHit] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


_TEXT_KEYS = ("text", "content", "body", "abstract", "prompt", "question", "answer")
_TITLE_KEYS = ("title", "name", "id")


def _as_document(obj: Any, i: int) -> Document:
    if isinstance(obj, Document):
        return obj
    if isinstance(obj, str):
        first = obj.strip().splitlines()[0][:80] if obj.strip() else ""
        return Document(id=f"doc-{i}", title=first, text=obj, source=f"doc-{i}")
    if hasattr(obj, "prompt") and hasattr(obj, "id"):  # core.Item (catalog text)
        ref = getattr(obj, "reference", None)
        text = obj.prompt + (f"\n\n{ref}" if isinstance(ref, str) else "")
        return Document(id=str(obj.id), title=str(obj.id), text=text, source=f"item:{obj.id}")
    if isinstance(obj, dict):
        text = next((str(obj[k]) for k in _TEXT_KEYS if obj.get(k)), "")
        did = str(obj.get("id", f"doc-{i}"))
        title = next((str(obj[k]) for k in _TITLE_KEYS if obj.get(k)), did)
        return Document(id=did, title=title, text=text, source=str(obj.get("url") or obj.get("source") or did))
    raise InputError(
        f"document {i} has unsupported type {type(obj).__name__}",
        what="documents",
        fix="pass strings, dicts with a 'text' field, Document or Item objects",
    )


def load_corpus(folder: str | Path) -> tuple[list[Document], list[str]]:
    """Documents of a corpus folder (recursive): ``.md``/``.markdown``/``.txt``/``.rst`` (title: first heading or file
    stem), ``.jsonl`` (one per line; text from text/content/body/abstract/prompt, title from title/name/id), ``.pdf``
    (first 50 pages). Returns (documents, warnings about skipped files); InputError: no such folder."""
    root = Path(folder)
    if not root.is_dir():
        raise InputError("corpus folder not found", what=str(root), fix="pass an existing folder with --corpus DIR")
    docs: list[Document] = []
    warnings: list[str] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        ext = path.suffix.lower()
        rel = str(path.relative_to(root))
        try:
            if ext in (".md", ".markdown", ".txt", ".rst"):
                text = path.read_text(encoding="utf-8", errors="replace")
                heading = re.search(r"^\s*#\s+(.+)$", text, re.M)
                title = heading.group(1).strip() if heading else path.stem
                docs.append(Document(id=rel, title=title, text=text, source=str(path)))
            elif ext == ".jsonl":
                for n, line in enumerate(split_jsonl(path.read_text(encoding="utf-8", errors="replace")), 1):
                    if not line.strip():
                        continue
                    try:
                        obj = json.loads(line)
                    except json.JSONDecodeError as e:
                        warnings.append(f"{rel}:{n}: not JSON ({e.msg}); skipped")
                        continue
                    d = _as_document(obj if isinstance(obj, dict) else {"text": str(obj)}, n)
                    src = d.source if "://" in d.source else f"{path}:{n}"
                    docs.append(d.model_copy(update={"id": f"{rel}:{d.id}", "source": src}))
            elif ext == ".pdf":
                doc = read_pdf(path, max_pages=50)
                docs.append(Document(id=rel, title=doc.title or path.stem, text=doc.text, source=str(path)))
                if doc.partial:
                    warnings.append(f"{rel}: partial ({'; '.join(doc.warnings)})")
        except (ToolError, OSError) as e:
            warnings.append(f"{rel}: skipped ({e})")
    return docs, warnings


_PASSAGE_WORDS = 300


class BM25Index:
    """BM25 (bm25s ``method="lucene"``, k1=1.5, b=0.75, English stopwords) over passages of at most 300 words;
    a query returns the best passage per document by score, zero scores left out. Score of d for q::

        sum_{t in q} ln(1 + (N - df_t + 0.5) / (df_t + 0.5)) * tf_td / (tf_td + k1 * (1 - b + b * |d| / avgdl))

    (Lucene >= 8 drops the constant (k1 + 1) factor.)
    """

    backend = "bm25"

    def __init__(self, documents: Iterable[Any], *, warnings: list[str] | None = None):
        import bm25s

        self.documents = [_as_document(d, i) for i, d in enumerate(documents)]
        self.warnings = list(warnings or [])
        words = [d.text.split() for d in self.documents]
        self.passages: list[tuple[int, str]] = [
            (di, " ".join(w[start : start + _PASSAGE_WORDS]))
            for di, w in enumerate(words)
            for start in range(0, max(len(w), 1), _PASSAGE_WORDS)
        ]
        self._retriever = None
        if self.passages:
            tokens = bm25s.tokenize([p for _, p in self.passages], stopwords="en", show_progress=False)
            self._retriever = bm25s.BM25()
            self._retriever.index(tokens, show_progress=False)

    @classmethod
    def from_folder(cls, folder: str | Path, *, documents: Iterable[Any] = ()) -> "BM25Index":
        """Index a corpus folder (:func:`load_corpus`) plus ``documents``.

        Args:
            folder: the corpus folder.
            documents: further documents to index.

        Returns:
            The index.
        """
        docs, warnings = load_corpus(folder)
        return cls([*docs, *documents], warnings=warnings)

    def __len__(self) -> int:
        return len(self.documents)

    def search(self, query: str, k: int = 5) -> list[SearchHit]:
        """BM25 search of ``query``.

        Args:
            query: the query text.
            k: most hits (>= 0).

        Returns:
            Up to ``k`` hits, best first (ties keep corpus order).
        """
        import bm25s

        if self._retriever is None or not query.strip():
            return []
        q = bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)
        vocab = self._retriever.vocab_dict
        q = [[t for t in q[0] if t in vocab]]
        if not q[0]:
            return []
        ids, scores = self._retriever.retrieve(q, k=len(self.passages), show_progress=False)
        best = self._best_passages((pi, sc) for pi, sc in zip(ids[0].tolist(), scores[0].tolist()) if sc > 0)
        order = sorted(best.items(), key=lambda kv: (-kv[1][0], kv[0]))[:k]
        return [self._hit(rank, di, pi, self.backend, sc) for rank, (di, (sc, pi)) in enumerate(order, 1)]

    def _best_passages(self, scored: Iterable[tuple[int, float]]) -> dict[int, tuple[float, int]]:
        """Document index -> (score, passage index) of its best passage among (passage, score) pairs (first of ties)."""
        best: dict[int, tuple[float, int]] = {}
        for pi, score in scored:
            di = self.passages[pi][0]
            if di not in best or score > best[di][0]:
                best[di] = (score, pi)
        return best

    def _hit(self, rank: int, doc: int, passage: int, backend: str, score: float) -> SearchHit:
        """The hit on document ``doc`` (index), its passage ``passage`` (index) as the snippet."""
        d = self.documents[doc]
        return SearchHit(
            rank=rank,
            title=d.title or d.id,
            url=d.source or d.id,
            snippet=self.passages[passage][1][:300],
            backend=backend,
            score=round(float(score), 6),
            doc_id=d.id,
        )


SearchBackend = Literal["auto", "ddgs", "bm25"]
_TIMELIMITS = {None, "d", "w", "m", "y"}


class SearchLimiter:
    """Paces the online search requests of the process (thread-safe): at most ``concurrency`` in flight, starts at
    least ``min_interval_s`` apart, and a ``Retry-After`` (:meth:`hold_off`) delays every caller."""

    def __init__(self, concurrency: int = 1, min_interval_s: float = 0.5):
        if concurrency < 1 or min_interval_s < 0:
            raise InputError(
                "concurrency must be >= 1 and min_interval_s >= 0",
                what="SearchLimiter",
                fix="e.g. SearchLimiter(concurrency=1, min_interval_s=0.5)",
            )
        self.concurrency = concurrency
        self.min_interval_s = min_interval_s
        self._slots = threading.BoundedSemaphore(concurrency)
        self._lock = threading.Lock()
        self._next_start = 0.0  # time.monotonic() before which no request may start

    @contextlib.contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one request slot for the body: wait for a free slot, then for the next allowed start time.

        Yields:
            Nothing.
        """
        with self._slots:
            while True:
                with self._lock:
                    now = time.monotonic()
                    wait = self._next_start - now
                    if wait <= 0:
                        self._next_start = now + self.min_interval_s
                        break
                time.sleep(min(wait, 5.0))
            yield

    def hold_off(self, seconds: float) -> None:
        """No request (of any caller) starts within ``seconds`` from now (a Retry-After).

        Args:
            seconds: the pause (>= 0).
        """
        with self._lock:
            self._next_start = max(self._next_start, time.monotonic() + max(0.0, seconds))


SEARCH_LIMITER = SearchLimiter()
"""The process's one limiter for online searches, shared by every WebSearch."""

_RETRY_AFTER = re.compile(r"retry[- _]after\D{0,3}(\d+(?:\.\d+)?)", re.I)


def retry_after_s(exc: BaseException) -> float | None:
    """Seconds a search backend asked to wait: a ``Retry-After`` header on the exception's response
    (:func:`sgieval.core.retry.retry_after_s`), else "Retry-After: N" in its message; None when absent."""
    got = header_retry_after_s(exc)
    if got is None and (m := _RETRY_AFTER.search(str(exc))):
        got = float(m.group(1))
    return got


class WebSearch:
    """Web search with an online (ddgs) and an offline (bm25) backend.

    ``corpus_dir``/``documents`` build the BM25 index on the first offline query; ddgs searches region ``wt-wt``
    unless told, safesearch moderate, 10 s timeout, paced by :data:`SEARCH_LIMITER`; ``max_retries``/``backoff_s``:
    retries after a random 0..``backoff_s * 2**attempt`` s, or the longer Retry-After (held for every search of the
    process).
    """

    def __init__(
        self,
        backend: SearchBackend = "auto",
        *,
        corpus_dir: str | Path | None = None,
        documents: Iterable[Any] | None = None,
        max_retries: int = 3,
        backoff_s: float = 1.0,
    ):
        if backend not in ("auto", "ddgs", "bm25"):
            raise InputError(f"unknown search backend {backend!r}", what="search backend", fix="use auto, ddgs or bm25")
        self.backend, self.corpus_dir, self.documents = backend, corpus_dir, list(documents or [])
        self.max_retries, self.backoff_s = max_retries, backoff_s
        self._index: BM25Index | None = None
        self._index_lock = threading.Lock()

    @property
    def has_local_corpus(self) -> bool:
        return bool(self.corpus_dir) or bool(self.documents)

    def index(self) -> BM25Index:
        """The BM25 index of the local corpus (built once).

        Returns:
            The index.

        Raises:
            OfflineError: naming the bm25 backend when there is nothing to index.
        """
        with self._index_lock:
            if self._index is None:
                self._need_corpus("")
                if self.corpus_dir:
                    self._index = BM25Index.from_folder(self.corpus_dir, documents=self.documents)
                else:
                    self._index = BM25Index(self.documents)
            return self._index

    def search(
        self, query: str, max_results: int = 5, *, region: str | None = None, timelimit: str | None = None
    ) -> SearchResults:
        """Search ``query``.

        Args:
            query: the query text.
            max_results: most results (>= 1).
            region: a ddgs region code (ddgs only).
            timelimit: ``d``, ``w``, ``m`` or ``y`` (ddgs only).

        Returns:
            The results, with the backend that gave them.

        Raises:
            OfflineError: offline and no local corpus, or ddgs requested offline.
            InputError: an empty query or a bad timelimit.
            ToolError: ddgs failing after retries and no local corpus.
        """
        if not query or not query.strip():
            raise InputError("empty search query", what="web_search.query", fix="pass some words to search for")
        if timelimit not in _TIMELIMITS:
            raise InputError(f"bad timelimit {timelimit!r}", what="web_search.timelimit", fix="use d, w, m or y")
        max_results = max(1, min(int(max_results), 50))
        if self.backend == "bm25":
            return self._bm25(query, max_results)
        online, why = network_status(DDGS_PROBE_HOST, 443)
        if not online:
            if self.backend == "ddgs":
                raise OfflineError(
                    f"online web search backend 'ddgs' is unreachable: offline ({why})",
                    what="web_search",
                    fix="use the offline backend 'bm25' over a local corpus (--corpus DIR)",
                )
            self._need_corpus(f"offline ({why}) and the ")
            return self._bm25(query, max_results, f"offline ({why}): answered by the local BM25 index")
        try:
            return self._ddgs(query, max_results, region or "wt-wt", timelimit)
        except ToolError as e:
            if self.backend == "auto" and self.has_local_corpus:
                return self._bm25(query, max_results, f"ddgs failed ({e}); answered by the local BM25 index")
            raise

    def _need_corpus(self, why: str) -> None:
        if not self.has_local_corpus:
            raise OfflineError(
                f"{why}offline web search backend 'bm25' has no documents to search",
                what="web_search",
                fix="pass a corpus folder (--corpus DIR) or documents, or run online for the 'ddgs' backend",
            )

    def _bm25(self, query: str, k: int, note: str = "") -> SearchResults:
        idx = self.index()
        notes = [note] * bool(note) + idx.warnings
        return SearchResults(query=query, backend="bm25", hits=idx.search(query, k), warnings=notes)

    def _ddgs(self, query: str, k: int, region: str, timelimit: str | None) -> SearchResults:
        from ddgs import DDGS
        from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

        def attempt() -> list[dict[str, Any]]:
            try:
                with SEARCH_LIMITER.slot():
                    return DDGS(timeout=10).text(
                        query, region=region, safesearch="moderate", timelimit=timelimit, max_results=k
                    )
            except (RatelimitException, TimeoutException):
                raise
            except DDGSException as e:
                msg = str(e)
                if "no results" in msg.lower():
                    return []
                if not re.search(r"ratelimit|rate limit|429|timed out|timeout", msg, re.I):
                    raise ToolError(f"ddgs search failed: {msg}", what="web_search", fix="retry later") from e
                raise

        def hold_off(_attempt: int, exc: BaseException, _wait: float) -> None:
            if (ra := retry_after_s(exc)) is not None:
                SEARCH_LIMITER.hold_off(ra)  # every search of the process waits, not only this one

        # full jitter 0..backoff_s * 2**(attempt-1) s, or the backend's Retry-After when longer; time.sleep looked up
        # at call time (tests replace it)
        policy = RetryPolicy(
            max_attempts=self.max_retries + 1,
            base_delay_s=self.backoff_s,
            max_delay_s=math.inf,
            max_retry_after_s=math.inf,
            jitter="full",
            retry_after=retry_after_s,
        )
        try:
            rows, _ = retry(
                attempt,
                policy,
                lambda e: isinstance(e, DDGSException),
                sleep=lambda s: time.sleep(s),
                on_retry=hold_off,
            )
        except RetriesExhausted as e:
            if isinstance(e.last, ToolError):
                raise e.last from e.last.__cause__
            raise ToolError(
                f"ddgs search failed after {e.attempts} attempts: {e.last}",
                what="web_search",
                fix="retry later (rate limited) or use the offline backend 'bm25'",
            ) from e.last
        hits = [
            SearchHit(
                rank=i,
                title=str(r.get("title", "")),
                url=str(r.get("href") or r.get("url") or ""),
                snippet=str(r.get("body") or r.get("snippet") or ""),
                backend="ddgs",
            )
            for i, r in enumerate(rows[:k], 1)
        ]
        return SearchResults(query=query, backend="ddgs", hits=hits)


class WebSearchInput(BaseModel):
    """Arguments of the ``web_search`` tool."""

    query: str = Field(description="search words")
    max_results: int = Field(5, ge=1, le=20, description="number of results")
    region: str | None = Field(None, description="region code such as us-en or wt-wt (online only)")
    timelimit: Literal["d", "w", "m", "y"] | None = Field(
        None, description="only results from the last day/week/month/year (online only)"
    )


class VisitWebpageInput(BaseModel):
    """Arguments of the ``visit_webpage`` tool."""

    url: str = Field(description="http(s) URL to fetch")
    max_chars: int = Field(20_000, ge=100, le=200_000, description="truncate the text to this many characters")
