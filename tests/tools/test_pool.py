"""ToolPool: tool selection, typed calls, evidence recording, per-score budgets."""

from __future__ import annotations

import threading

import pytest

from sgieval.core import InputError, Score, ToolError
from sgieval.tools import ExecResult, PdfDocument, SearchResults, ToolPool
from sgieval.tests.tools.sandboxes import needs_bwrap
from sgieval.tools.sandbox import BubblewrapSandbox

pytestmark = pytest.mark.usefixtures("offline")  # the search tools answer from the local corpus (conftest)


@pytest.fixture(scope="module")
def sbx():
    return BubblewrapSandbox(uids=[3_901_300, 3_901_301], timeout_s=20)


def test_from_names_selects_tools(corpus):
    pool = ToolPool.from_names("search,pdf", corpus_dir=corpus)
    assert pool.names == ["web_search", "visit_webpage", "read_pdf"]
    assert [t.name for t in pool.tools] == ["web_search", "visit_webpage", "read_pdf"]
    assert ToolPool.from_names(["pdf"]).names == ["read_pdf"]
    with pytest.raises(InputError) as ei:
        ToolPool.from_names(["search", "browser"])
    assert str(ei.value) == "--tools: unknown tool(s) 'browser'. Fix: choose among search, pdf, python"
    with pytest.raises(InputError, match="tool 'run_python' is not in this pool"):
        pool.call("run_python", code="print(1)")


def test_search_call_evidence_and_budget(corpus):
    pool = ToolPool.from_names(["search"], corpus_dir=corpus)
    with pool.budget(2) as b:
        out, ev = pool.call("search", query="graphene", max_results=2)
        assert isinstance(out, SearchResults) and out.backend == "bm25"
        assert set(ev) == {"tool", "input", "output", "duration_s"}
        assert ev["tool"] == "web_search"
        assert ev["input"] == {"query": "graphene", "max_results": 2, "region": None, "timelimit": None}
        assert (
            ev["output"] == f"bm25: 2 hits: 1. a <{corpus / 'a.txt'}>; 2. b <{corpus / 'b.txt'}>"
        )  # title = file stem
        pool.call("web_search", query="mobility")
        assert b.used == 2
        with pytest.raises(ToolError) as ei:
            pool.call("web_search", query="holes")
        assert str(ei.value) == (
            "tool budget: tool call budget of 2 calls per score is used up (refused: web_search). "
            "Fix: answer with the evidence gathered so far"
        )
    assert [c["input"]["query"] for c in b.calls] == ["graphene", "mobility"]
    # the evidence goes into a Score as is
    s = Score(item_id="x/1", model="m", metric="m1", value=1.0, evidence=b.calls)
    assert s.evidence[0].tool == "web_search" and s.evidence[0].kind == "tool_call"


def test_failed_call_is_recorded_then_raised(corpus, tmp_path):
    pool = ToolPool.from_names(["pdf", "search"], corpus_dir=corpus)
    with pool.budget(None) as b:
        with pytest.raises(ToolError, match="no such PDF file"):
            pool.call("pdf", source=str(tmp_path / "missing.pdf"))
        with pytest.raises(InputError, match="bad arguments for web_search"):
            pool.call("search", qeury="typo")
    assert len(b.calls) == 1
    ev = b.calls[0]
    assert ev["tool"] == "read_pdf" and ev["error"] == "ToolError"
    assert ev["output"] == f"error: {tmp_path / 'missing.pdf'}: no such PDF file. Fix: check the path"


def test_nested_budgets_and_thread_isolation(corpus):
    pool = ToolPool.from_names(["search"], corpus_dir=corpus)
    results = {}

    def score(name, queries):
        with pool.budget(None) as b:
            for q in queries:
                pool.call("search", query=q)
            results[name] = [c["input"]["query"] for c in b.calls]

    with pool.budget(10) as outer:
        with pool.budget(1) as inner:
            pool.call("search", query="graphene")
        pool.call("search", query="holes")
    assert [len(inner.calls), len(outer.calls)] == [1, 2]
    threads = [
        threading.Thread(target=score, args=(n, qs)) for n, qs in [("t1", ["graphene", "holes"]), ("t2", ["mobility"])]
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {"t1": ["graphene", "holes"], "t2": ["mobility"]}


def test_agent_tools_record_and_report_errors(corpus):
    pool = ToolPool.from_names(["search"], corpus_dir=corpus)
    tool = {t.name: t for t in pool.tools}["web_search"]
    with pool.budget(1) as b:
        out = tool.invoke({"query": "graphene", "max_results": 1})
        assert out["backend"] == "bm25" and out["hits"][0]["doc_id"] == "a.txt"
        refused = tool.invoke({"query": "graphene"})
    assert refused == (
        "tool budget: tool call budget of 1 calls per score is used up (refused: web_search). "
        "Fix: answer with the evidence gathered so far"
    )
    assert len(b.calls) == 1 and b.calls[0]["tool"] == "web_search"
    visit = {t.name: t for t in pool.tools}["visit_webpage"]
    msg = visit.invoke({"url": "https://example.org"})
    assert msg.startswith("visit_webpage: cannot fetch https://example.org: offline")


async def test_async_call_is_recorded(corpus):
    pool = ToolPool.from_names(["search"], corpus_dir=corpus)
    with pool.budget(3) as b:
        out, _ = await pool.acall("search", query="mobility")
        t = {t.name: t for t in pool.tools}["web_search"]
        await t.ainvoke({"query": "holes"})
    assert out.hits[0].doc_id == "a.txt"
    assert [c["input"]["query"] for c in b.calls] == ["mobility", "holes"]


@needs_bwrap
def test_python_tool_through_pool(sbx, tmp_path):
    pool = ToolPool.from_names(["python", "pdf"], sandbox=sbx)
    assert pool.names == ["read_pdf", "run_python"] and pool.sandbox is sbx
    with pool.budget(3) as b:
        out, ev = pool.call("python", code="import numpy as np\nprint(np.arange(5).sum())")
        res = {t.name: t for t in pool.tools}["run_python"].invoke({"code": "while True: pass", "timeout_s": 1})
    assert isinstance(out, ExecResult) and out.stdout == "10\n"  # 0+1+2+3+4
    assert ev["output"].startswith("exit 0; ") and ev["output"].endswith("; stdout: '10' [bubblewrap]")
    assert res["killed_reason"] == "timeout" and res["timed_out"] is True
    assert b.calls[1]["output"].startswith("exit -9; ") and "; killed: wall-time limit; " in b.calls[1]["output"]
    assert len(ev["output"]) <= 500


@needs_bwrap
def test_summary_is_capped_at_500_chars(sbx):
    pool = ToolPool.from_names(["python"], sandbox=sbx)
    out, ev = pool.call("python", code="print('y' * 5000)\nimport sys\nprint('e' * 5000, file=sys.stderr)")
    assert len(out.stdout) == 5001 and len(ev["output"]) <= 500
    _, ev = pool.call("python", code="print(1)", files={"big.txt": "z" * 10_000})
    assert len(ev["input"]["files"]["big.txt"]) == 500
    empty = PdfDocument(source="x")  # a document with no pages: no text, not partial, no title
    assert (empty.text, empty.pages, empty.partial, empty.title) == ("", [], False, None)


def test_python_tool_unavailable_is_clear(monkeypatch):
    from sgieval.core import SandboxUnavailableError
    import shutil

    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name == "bwrap" else real_which(name, *a, **k))
    monkeypatch.delenv("E2B_API_KEY", raising=False)
    with pytest.raises(SandboxUnavailableError, match="bubblewrap cannot start"):
        ToolPool.from_names(["python"])
    pool = ToolPool.from_names(["python"], unsafe_local_exec=True)
    out, _ = pool.call("python", code="print('ok')")
    assert (out.stdout, out.backend) == ("ok\n", "unsafe-local")


def test_a_repeated_query_is_served_from_the_runs_pool_and_never_from_another_run(corpus, monkeypatch):
    """One pool per run: the same tool and arguments twice run the tool once (the second call is recorded as
    cached, counts against the budget, returns the same result); a failed call is not cached; another run's pool
    (another ToolPool) runs the query again."""
    pool = ToolPool.from_names(["search"], corpus_dir=corpus)
    ran: list[str] = []
    real = pool.search.search
    monkeypatch.setattr(pool.search, "search", lambda q, *a, **kw: ran.append(q) or real(q, *a, **kw))
    with pool.budget(3) as b:
        first, ev1 = pool.call("web_search", query="graphene", max_results=2)
        again, ev2 = pool.call("search", query="graphene", max_results=2)  # the alias: the same tool and query
        other, _ = pool.call("web_search", query="graphene", max_results=1)  # other arguments: run
    assert ran == ["graphene", "graphene"] and again is first and len(other.hits) == 1
    assert "details" not in ev1 and ev2["details"] == {"cached": True} and ev2["duration_s"] == 0.0
    assert ev2["output"] == ev1["output"] and b.used == 3
    s = Score(item_id="x/1", model="m", metric="m1", value=1.0, evidence=b.calls)
    assert [e.details.get("cached", False) for e in s.evidence] == [False, True, False]
    # a failure is not kept: the next call tries again
    calls = {"n": 0}

    def flaky(q, *a, **kw):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("search backend down")
        return real(q, *a, **kw)

    monkeypatch.setattr(pool.search, "search", flaky)
    with pytest.raises(RuntimeError):
        pool.call("web_search", query="holes")
    pool.call("web_search", query="holes")
    assert calls["n"] == 2
    # another run's pool has its own results
    run2 = ToolPool.from_names(["search"], corpus_dir=corpus)
    ran2: list[str] = []
    real2 = run2.search.search
    monkeypatch.setattr(run2.search, "search", lambda q, *a, **kw: ran2.append(q) or real2(q, *a, **kw))
    run2.call("web_search", query="graphene", max_results=2)
    assert ran2 == ["graphene"]
