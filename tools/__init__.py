"""LangChain tools of sgieval: sandboxed Python, PDF reader, web search.

Public API::

    from sgieval.tools import ToolPool, get_sandbox, read_pdf, WebSearch, visit_webpage
"""

from ..core import lazy_exports
from .base import ExecResult, KilledReason, Sandbox
from .pdf import PdfChunk, PdfDocument, PdfPage, make_read_pdf_tool, parse_page_ranges, read_pdf
from .pool import TOOL_GROUPS, CallBudget, ToolPool, summarize_output
from .sandbox import (
    BubblewrapSandbox,
    E2BSandbox,
    SandboxLimits,
    UnsafeLocalSandbox,
    bwrap_status,
    get_sandbox,
    make_run_python_tool,
)
from .retrieval import CorpusRetriever, rrf_scores
from .search import (
    SEARCH_LIMITER,
    BM25Index,
    SearchLimiter,
    Document,
    SearchHit,
    SearchResults,
    WebPage,
    WebSearch,
    is_online,
    make_visit_webpage_tool,
    make_web_search_tool,
    network_status,
    visit_webpage,
)

__all__ = [
    "ExecResult",
    "KilledReason",
    "Sandbox",
    "SandboxLimits",
    "BubblewrapSandbox",
    "UnsafeLocalSandbox",
    "E2BSandbox",
    "get_sandbox",
    "bwrap_status",
    "make_run_python_tool",
    "PdfPage",
    "PdfChunk",
    "PdfDocument",
    "read_pdf",
    "parse_page_ranges",
    "make_read_pdf_tool",
    "SEARCH_LIMITER",
    "SearchLimiter",
    "Document",
    "SearchHit",
    "SearchResults",
    "WebPage",
    "BM25Index",
    "CorpusRetriever",
    "rrf_scores",
    "WebSearch",
    "is_online",
    "network_status",
    "visit_webpage",
    "make_web_search_tool",
    "make_visit_webpage_tool",
    "ToolPool",
    "CallBudget",
    "TOOL_GROUPS",
    "summarize_output",
]

_LAZY: dict[str, str] = {
    "UnavailableSandbox": "sandbox",
}
"""Public names loaded from their modules on first use (name -> module of this folder)."""

__all__ += sorted(_LAZY)

__getattr__ = lazy_exports(__name__, _LAZY)
