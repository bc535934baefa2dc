"""LangChain tools of sgieval: sandboxed Python, PDF reader, web search (``ToolPool``, ``get_sandbox``, ...)."""

from .base import ExecResult, KilledReason, Sandbox
from .pdf import PdfChunk, PdfDocument, PdfPage, parse_page_ranges, read_pdf
from .pool import TOOL_GROUPS, CallBudget, ToolPool, summarize_output
from .retrieval import CorpusRetriever, rrf_scores
from .sandbox import BubblewrapSandbox, E2BSandbox, SandboxLimits, UnavailableSandbox, UnsafeLocalSandbox
from .sandbox import bwrap_status, get_sandbox
from .search import SEARCH_LIMITER, BM25Index, Document, SearchHit, SearchLimiter, SearchResults, WebPage
from .search import WebSearch, network_status, visit_webpage

__all__ = ["ExecResult", "KilledReason", "Sandbox", "SandboxLimits", "BubblewrapSandbox", "UnsafeLocalSandbox"]
__all__ += ["E2BSandbox", "UnavailableSandbox", "get_sandbox", "bwrap_status", "PdfPage"]
__all__ += ["PdfChunk", "PdfDocument", "read_pdf", "parse_page_ranges", "SEARCH_LIMITER"]
__all__ += ["SearchLimiter", "Document", "SearchHit", "SearchResults", "WebPage", "BM25Index", "CorpusRetriever"]
__all__ += ["rrf_scores", "WebSearch", "network_status", "visit_webpage"]
__all__ += ["ToolPool", "CallBudget", "TOOL_GROUPS", "summarize_output"]
