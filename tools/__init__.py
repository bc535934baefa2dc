"""LangChain tools of sgieval: sandboxed Python, PDF reader, web search (``ToolPool``, ``get_sandbox``, ...)."""

from .base import ExecResult, KilledReason, Sandbox
from .pdf import PdfChunk, PdfDocument, PdfPage, parse_page_ranges, read_pdf
from .pool import TOOL_GROUPS, CallBudget, ToolPool, summarize_output
from .pool import make_read_pdf_tool, make_run_python_tool, make_visit_webpage_tool, make_web_search_tool
from .retrieval import CorpusRetriever, rrf_scores
from .sandbox import BubblewrapSandbox, E2BSandbox, SandboxLimits, UnavailableSandbox, UnsafeLocalSandbox
from .sandbox import bwrap_status, get_sandbox
from .search import SEARCH_LIMITER, BM25Index, Document, SearchHit, SearchLimiter, SearchResults, WebPage
from .search import WebSearch, is_online, network_status, visit_webpage

__all__ = ["ExecResult", "KilledReason", "Sandbox", "SandboxLimits", "BubblewrapSandbox", "UnsafeLocalSandbox"]
__all__ += ["E2BSandbox", "UnavailableSandbox", "get_sandbox", "bwrap_status", "make_run_python_tool", "PdfPage"]
__all__ += ["PdfChunk", "PdfDocument", "read_pdf", "parse_page_ranges", "make_read_pdf_tool", "SEARCH_LIMITER"]
__all__ += ["SearchLimiter", "Document", "SearchHit", "SearchResults", "WebPage", "BM25Index", "CorpusRetriever"]
__all__ += ["rrf_scores", "WebSearch", "is_online", "network_status", "visit_webpage", "make_web_search_tool"]
__all__ += ["make_visit_webpage_tool", "ToolPool", "CallBudget", "TOOL_GROUPS", "summarize_output"]
