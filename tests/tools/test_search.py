"""web_search (BM25 offline, ddgs online through a fake transport) and visit_webpage."""

from __future__ import annotations

import math
import random

import httpx
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from ddgs.ddgs import DDGS  # noqa: E402  (the real class behind the lazy ddgs.DDGS proxy)
from ddgs.exceptions import DDGSException, RatelimitException  # noqa: E402
from matplotlib.backends.backend_pdf import PdfPages  # noqa: E402

from sgieval.core import InputError, Item, OfflineError, ToolError  # noqa: E402
from sgieval.tools.search import BM25Index, WebSearch, html_to_text, network_status, visit_webpage  # noqa: E402


def test_bm25_ranks_generated_corpus(corpus):
    idx = BM25Index.from_folder(corpus)
    assert len(idx) == 4
    assert idx.warnings == ["sub/d.jsonl:2: not JSON (Expecting property name enclosed in double quotes); skipped"]
    hits = idx.search("graphene", k=10)
    # N=4, df(graphene)=2, all |d| = avgdl = 4, k1=1.5, b=0.75:
    # idf = ln(1 + (4-2+0.5)/(2+0.5)) = ln 2 = 0.693147
    # Lucene BM25 (no (k1+1) factor): tf / (tf + k1 * (1 - b + b*|d|/avgdl)) = tf / (tf + 1.5)
    # a: tf=3 -> 0.693147 * 3/4.5 = 0.462098 ; b: tf=1 -> 0.693147 * 1/2.5 = 0.277259
    assert [h.doc_id for h in hits] == ["a.txt", "b.txt"]
    assert [h.score for h in hits] == pytest.approx([math.log(2) * 3 / 4.5, math.log(2) / 2.5], abs=1e-5)
    assert [h.rank for h in hits] == [1, 2] and {h.backend for h in hits} == {"bm25"}
    # mobility: df=1 -> idf = ln(1 + 3.5/1.5) = 1.203973, tf=1 -> 1.203973 * 0.4 = 0.481589
    # a = 0.462098 + 0.481589 = 0.943687
    hits = idx.search("graphene mobility", k=1)
    assert [(h.doc_id, h.score) for h in hits] == [("a.txt", pytest.approx(0.943687, abs=1e-5))]
    hits = idx.search("salinity of the ocean")
    assert [(h.doc_id, h.title) for h in hits] == [("sub/d.jsonl:o1", "Ocean")]
    assert idx.search("the of and") == [] and idx.search("unknownword") == []
    assert idx.search("kinetics")[0].title == "Protein"


def test_bm25_over_item_texts_and_pdf(tmp_path):
    with PdfPages(tmp_path / "paper.pdf", metadata={"Title": "Perovskite Cells"}) as pdf:
        fig = plt.figure(figsize=(4, 3))
        fig.text(0.05, 0.5, "perovskite solar efficiency")
        pdf.savefig(fig)
        plt.close(fig)
    items = [
        Item(id="sgi/1", benchmark="sgi", task="generic", prompt="Estimate the perovskite band gap."),
        Item(id="sgi/2", benchmark="sgi", task="generic", prompt="Describe protein folding."),
    ]
    idx = BM25Index.from_folder(tmp_path, documents=items)
    hits = idx.search("perovskite efficiency")
    # the PDF has both words, item sgi/1 only "perovskite"
    assert [h.doc_id for h in hits] == ["paper.pdf", "sgi/1"]
    assert hits[0].title == "Perovskite Cells" and hits[1].url == "item:sgi/1"


def test_offline_search_uses_bm25_and_names_backend(corpus, offline):
    ws = WebSearch(corpus_dir=corpus)
    res = ws.search("graphene mobility", max_results=3)
    assert res.backend == "bm25"
    assert res.warnings[0] == "offline (SGIEVAL_NETWORK=offline): answered by the local BM25 index"
    assert [h.doc_id for h in res.hits] == ["a.txt", "b.txt"]


def test_offline_failures_name_the_offline_backend(offline):
    with pytest.raises(OfflineError) as ei:
        WebSearch("ddgs").search("graphene")
    assert str(ei.value) == (
        "web_search: online web search backend 'ddgs' is unreachable: offline (SGIEVAL_NETWORK=offline). "
        "Fix: use the offline backend 'bm25' over a local corpus (--corpus DIR)"
    )
    with pytest.raises(OfflineError, match="offline web search backend 'bm25' has no documents"):
        WebSearch().search("graphene")
    with pytest.raises(OfflineError) as ei:
        visit_webpage("https://example.org/page")
    assert str(ei.value) == (
        "visit_webpage: cannot fetch https://example.org/page: offline (SGIEVAL_NETWORK=offline). "
        "Fix: use web_search with the offline backend 'bm25' over a local corpus (--corpus DIR)"
    )


def test_real_probe_reports_unresolvable_host(monkeypatch):
    monkeypatch.delenv("SGIEVAL_NETWORK", raising=False)
    for var in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(var, raising=False)
    ok, why = network_status("nonexistent.invalid", 443, refresh=True)
    assert ok is False
    assert "nonexistent.invalid" in why  # "cannot resolve ..." or "resolving ... took longer than 0.8 s"


class FakeDDGS:
    """Stands in for the network transport behind ddgs: scripted replies."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.calls = []

    @property
    def method(self):
        def text(ddgs_self, query, **kwargs):
            return self(ddgs_self, query, **kwargs)

        return text

    def __call__(self, ddgs_self, query, **kwargs):
        self.calls.append((query, kwargs))
        r = self.replies.pop(0)
        if isinstance(r, Exception):
            raise r
        return r


ROWS = [
    {
        "title": "Graphene - Wikipedia",
        "href": "https://en.wikipedia.org/wiki/Graphene",
        "body": "Graphene is an allotrope",
    },
    {"title": "Mobility in graphene", "href": "https://example.org/mob", "body": "Electron mobility ..."},
]


def test_ddgs_path_with_backoff_and_filters(monkeypatch, online):
    fake = FakeDDGS([RatelimitException("202 Ratelimit"), DDGSException("https://x 429 Too Many Requests"), ROWS])
    monkeypatch.setattr(DDGS, "text", fake.method)
    ws = WebSearch("ddgs", backoff_s=0.0)
    res = ws.search("graphene mobility", max_results=2, region="us-en", timelimit="y")
    assert res.backend == "ddgs"
    assert [(h.rank, h.title, h.url, h.snippet, h.backend) for h in res.hits] == [
        (1, "Graphene - Wikipedia", "https://en.wikipedia.org/wiki/Graphene", "Graphene is an allotrope", "ddgs"),
        (2, "Mobility in graphene", "https://example.org/mob", "Electron mobility ...", "ddgs"),
    ]
    assert len(fake.calls) == 3
    assert fake.calls[-1] == (
        "graphene mobility",
        {"region": "us-en", "safesearch": "moderate", "timelimit": "y", "max_results": 2},
    )


def test_ddgs_gives_up_after_retries_and_no_results_is_empty(monkeypatch, online, corpus):
    fake = FakeDDGS([RatelimitException("202 Ratelimit")] * 3)
    monkeypatch.setattr(DDGS, "text", fake.method)
    with pytest.raises(ToolError, match=r"ddgs search failed after 3 attempts: 202 Ratelimit"):
        WebSearch("ddgs", max_retries=2, backoff_s=0.0).search("q")
    # auto with a local corpus falls back to bm25 and says so
    fake = FakeDDGS([RatelimitException("202 Ratelimit")] * 3)
    monkeypatch.setattr(DDGS, "text", fake.method)
    res = WebSearch("auto", corpus_dir=corpus, max_retries=2, backoff_s=0.0).search("graphene")
    assert res.backend == "bm25" and res.warnings[0].startswith(
        "ddgs failed (web_search: ddgs search failed after 3 attempts"
    )
    monkeypatch.setattr(DDGS, "text", FakeDDGS([DDGSException("No results found.")]).method)
    assert WebSearch("ddgs").search("zzz").hits == []


def test_bad_search_input():
    with pytest.raises(InputError, match="empty search query"):
        WebSearch("bm25", documents=["x"]).search("  ")
    with pytest.raises(InputError, match="bad timelimit 'q'"):
        WebSearch("bm25", documents=["x"]).search("x", timelimit="q")
    with pytest.raises(InputError, match="unknown search backend 'google'"):
        WebSearch("google")


def test_visit_webpage_html_to_text_over_mock_transport():
    html = (
        "<html><head><title>Graphene  facts</title><style>p{}</style></head><body><nav>menu</nav>"
        "<h1>Graphene</h1><p>One atom&nbsp;thick.</p><script>var x=1;</script><p>Strong.</p></body></html>"
    )

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url == "https://example.org/g"
        return httpx.Response(200, text=html, headers={"content-type": "text/html; charset=utf-8"})

    page = visit_webpage("https://example.org/g", transport=httpx.MockTransport(handler))
    assert (page.title, page.text, page.truncated) == ("Graphene facts", "Graphene\nOne atom thick.\nStrong.", False)
    page = visit_webpage("https://example.org/g", max_chars=5, transport=httpx.MockTransport(handler))
    assert (page.text, page.truncated) == ("Graph", True)
    assert html_to_text("<p>a</p><p>b</p>") == ("", "a\nb")

    def not_found(request):
        return httpx.Response(404, text="nope")

    with pytest.raises(ToolError, match="HTTP 404"):
        visit_webpage("https://example.org/missing", transport=httpx.MockTransport(not_found))
    with pytest.raises(InputError, match="not an http"):
        visit_webpage("file:///etc/passwd")


# ------------------------------------------------------------ One limiter per process
def test_six_concurrent_searches_are_paced_by_one_process_limiter(monkeypatch, online):
    import threading
    import time as _time
    from concurrent.futures import ThreadPoolExecutor

    from sgieval.tools import search as search_mod
    from sgieval.tools.search import SearchLimiter

    limiter = SearchLimiter(concurrency=1, min_interval_s=0.2)
    monkeypatch.setattr(search_mod, "SEARCH_LIMITER", limiter)  # the process's limiter, as every WebSearch uses
    lock, active, starts = threading.Lock(), [0], []

    def text(ddgs_self, query, **kwargs):
        with lock:
            active[0] += 1
            # when the limiter let this request start (its slot holder's reservation: stable while the slot is held)
            starts.append((limiter._next_start - limiter.min_interval_s, _time.monotonic(), active[0]))
        _time.sleep(0.05)
        with lock:
            active[0] -= 1
        return ROWS

    monkeypatch.setattr(DDGS, "text", text)
    # six separate WebSearch objects (as six tool pools / judges would have), six threads at once
    with ThreadPoolExecutor(6) as ex:
        results = list(ex.map(lambda i: WebSearch("ddgs").search(f"q{i}"), range(6)))
    assert [len(r.hits) for r in results] == [2] * 6
    assert [n for _, _, n in starts] == [1] * 6  # never two requests in flight
    # starts let through at least min_interval_s apart, and no request sent before the limiter let it start (measured
    # on the limiter's own clock: a thread descheduled under load between the two cannot make the gaps look short)
    gaps = [b[0] - a[0] for a, b in zip(starts, starts[1:])]
    assert min(gaps) >= 0.2 - 1e-9
    assert all(sent >= let for let, sent, _ in starts)


def test_retry_after_is_honoured_for_every_caller_and_backoff_has_jitter(monkeypatch, online):
    import time as _time

    from sgieval.tools import search as search_mod
    from sgieval.tools.search import SearchLimiter, retry_after_s

    assert retry_after_s(DDGSException("https://x 429 Too Many Requests; Retry-After: 0.4")) == 0.4
    assert retry_after_s(RatelimitException("202 Ratelimit")) is None
    limiter = SearchLimiter(concurrency=1, min_interval_s=0.0)
    monkeypatch.setattr(search_mod, "SEARCH_LIMITER", limiter)
    stamps = []
    replies = [DDGSException("https://x 429 Too Many Requests; Retry-After: 0.4"), ROWS, ROWS]

    def text(ddgs_self, query, **kwargs):
        stamps.append(_time.monotonic())
        r = replies.pop(0)
        if isinstance(r, Exception):
            raise r
        return r

    monkeypatch.setattr(DDGS, "text", text)
    held: list[float] = []
    real_hold_off = limiter.hold_off
    monkeypatch.setattr(limiter, "hold_off", lambda s: (held.append(s), real_hold_off(s)))
    assert len(WebSearch("ddgs", backoff_s=0.0).search("q").hits) == 2
    assert stamps[1] - stamps[0] >= 0.4 - 0.01  # waited the server's Retry-After, not the 0 s backoff
    assert held == [0.4]  # and held every other search of the process off for as long
    # another search started right away still waits out the hold-off set by the first one's Retry-After
    limiter.hold_off(0.3)
    t0 = _time.monotonic()
    WebSearch("ddgs").search("other")
    assert stamps[2] - t0 >= 0.3 - 0.01
    # full jitter: waits are drawn uniformly from 0..backoff_s * 2**attempt
    sleeps = []
    monkeypatch.setattr(search_mod.time, "sleep", lambda s: sleeps.append(s))
    monkeypatch.setattr(DDGS, "text", FakeDDGS([RatelimitException("202 Ratelimit")] * 4).method)
    random.seed(7)
    with pytest.raises(ToolError):
        WebSearch("ddgs", max_retries=3, backoff_s=1.0).search("q")
    random.seed(7)
    expected = [random.uniform(0.0, 1.0 * 2**a) for a in range(3)]
    assert sleeps == expected and len(set(sleeps)) == 3
