"""PDF reader, on pypdf: :func:`read_pdf` (a path, bytes, or an http(s) URL when online) -> :class:`PdfDocument`.

Hostile input never crashes or hangs the caller: a missing, unreadable, too large, non-PDF, broken or encrypted file
raises :class:`~sgieval.core.ToolError` with the reason and a fix; failing pages, limits, the time budget or no text
layer (no OCR here) give ``partial=True`` with ``warnings``.
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ..core import InputError, ToolError
from .net import fetch_url

__all__ = ["PdfPage", "PdfChunk", "PdfDocument", "read_pdf", "parse_page_ranges", "ReadPdfInput"]

_MIB = 1024 * 1024


class PdfPage(BaseModel):
    """One page: ``number`` is 1-based, ``text`` the extracted text ("" when none)."""

    number: int
    text: str


class PdfChunk(BaseModel):
    """A slice of the document text of at most ``chunk_chars`` characters, spanning pages ``first_page``..``last_page``
    (1-based, inclusive)."""

    index: int
    first_page: int
    last_page: int
    text: str


class PdfDocument(BaseModel):
    """Result of :func:`read_pdf`: ``n_pages`` of the whole file, the ``pages`` read; ``partial`` when anything selected
    was not read (limits, time, failing pages, no text layer), with the reasons in ``warnings``."""

    source: str
    title: str | None = None
    authors: list[str] = Field(default_factory=list)
    year: int | None = None
    n_pages: int = 0
    pages: list[PdfPage] = Field(default_factory=list)
    chunks: list[PdfChunk] = Field(default_factory=list)
    partial: bool = False
    warnings: list[str] = Field(default_factory=list)
    backend: str = "pypdf"

    @property
    def text(self) -> str:
        return "\n\n".join(p.text for p in self.pages if p.text)


def parse_page_ranges(spec: str | None, n_pages: int) -> list[int]:
    """The pages ``spec`` selects.

    Args:
        spec: "3", "1-5", "2,4-6", "10-" (to the end), "-3" (first three); None, "" or "all": every page.
        n_pages: the document's page count; numbers beyond it are dropped.

    Returns:
        1-based page numbers, ascending.

    Raises:
        InputError: a syntax error or a range with start > end.
    """
    if str(spec or "").strip().lower() in ("", "all"):
        return list(range(1, n_pages + 1))
    out: list[int] = []
    fix = "use forms like '3', '1-5', '2,4-6' or '10-'"
    for part in str(spec).split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d*)\s*-\s*(\d*)|(\d+)", part)
        if not m or part == "-":
            raise InputError(f"bad page range {part!r}", what="pages", fix=fix)
        if m.group(3):
            lo = hi = int(m.group(3))
        else:
            lo = int(m.group(1)) if m.group(1) else 1
            hi = int(m.group(2)) if m.group(2) else max(n_pages, lo)
        if lo < 1 or lo > hi:
            raise InputError(f"bad page range {part!r} (start must be >= 1 and <= end)", what="pages", fix=fix)
        out += range(lo, min(hi, n_pages) + 1)
    return list(dict.fromkeys(out))


def _split_authors(author: str | None) -> list[str]:
    if not author:
        return []
    parts = re.split(r"\s*;\s*|\s+and\s+|\s*&\s*", author.strip())
    if len(parts) == 1 and author.count(",") >= 2:
        parts = author.split(",")
    return [p.strip() for p in parts if p.strip()]


def _year(meta: Any) -> int | None:
    for attr in ("creation_date", "modification_date"):
        d = None
        with contextlib.suppress(Exception):  # malformed dates raise in pypdf
            d = getattr(meta, attr, None)
        if isinstance(d, datetime):
            return d.year
    for key in ("/CreationDate", "/ModDate"):
        raw = str(meta.get(key, "") or "") if hasattr(meta, "get") else ""
        m = re.search(r"(?:D:)?((?:19|20)\d\d)", raw)
        if m:
            return int(m.group(1))
    return None


def _chunks(pages: list[PdfPage], chunk_chars: int) -> list[PdfChunk]:
    chunks: list[PdfChunk] = []
    buf, first, last = "", 0, 0  # first 0: the chunk has no page yet

    def flush() -> None:
        nonlocal buf, first
        if buf.strip():
            chunks.append(PdfChunk(index=len(chunks), first_page=first, last_page=last, text=buf.strip()))
        buf, first = "", 0

    for page in pages:
        text = page.text
        while text:
            if len(buf) >= chunk_chars:
                flush()
            room = chunk_chars - len(buf)
            piece, text = text[:room], text[room:]
            first, last = first or page.number, page.number
            buf += piece
        if buf and len(buf) < chunk_chars:
            buf += "\n\n"
    flush()
    return chunks


def _too_big(size: int, max_bytes: int, label: str) -> None:
    if size > max_bytes:
        raise ToolError(
            f"PDF is {size / _MIB:.1f} MiB, over the {max_bytes / _MIB:.0f} MiB limit",
            what=label,
            fix="raise max_bytes or split the file",
        )


def _load_bytes(source: str | Path | bytes, max_bytes: int, timeout_s: float) -> tuple[bytes, str]:
    if isinstance(source, (bytes, bytearray)):
        data, label = bytes(source), "<bytes>"
    elif isinstance(source, str) and re.match(r"https?://", source, re.I):
        data, label = fetch_url(source, timeout_s=timeout_s, max_bytes=max_bytes).content, source
    else:
        p = Path(source)
        label = str(p)
        if not p.is_file():
            raise ToolError("no such PDF file", what=label, fix="check the path")
        _too_big(p.stat().st_size, max_bytes, label)
        try:
            data = p.read_bytes()
        except OSError as e:
            raise ToolError(f"cannot read the file ({e.strerror})", what=label, fix="check permissions") from e
    _too_big(len(data), max_bytes, label)
    if not data.strip():
        raise ToolError("the file is empty", what=label, fix="check the file")
    return data, label


def read_pdf(
    source: str | Path | bytes,
    *,
    pages: str | None = None,
    max_pages: int = 50,
    max_chars: int = 200_000,
    chunk_chars: int = 4000,
    timeout_s: float = 30.0,
    password: str | None = None,
    max_bytes: int = 100 * _MIB,
) -> PdfDocument:
    """Read a PDF into page texts, metadata and chunks; over any limit the result is ``partial`` with a warning.

    Args:
        source: a path, raw bytes, or an http(s) URL (fetched only when online).
        pages: page ranges (:func:`parse_page_ranges`); None: every page.
        max_pages: most selected pages read.
        max_chars: total text cap (characters).
        chunk_chars: characters per chunk.
        timeout_s: time budget for text extraction (s), checked between pages.
        password: for encrypted files (None: the empty user password is tried).
        max_bytes: largest file read (bytes).

    Returns:
        The document: pages, metadata, chunks, ``partial`` and warnings.

    Raises:
        ToolError: unreadable, not a PDF, encrypted without password, AES without ``cryptography``.
        InputError: bad ``pages``.
        OfflineError: a URL while offline.
    """
    t0 = time.monotonic()
    data, label = _load_bytes(source, max_bytes, timeout_s)
    reader = _open(data, label, password)
    doc = PdfDocument(source=label, n_pages=len(reader.pages))
    try:
        meta = reader.metadata
    except Exception as e:  # noqa: BLE001 - broken info dictionary
        meta = None
        doc.warnings.append(f"metadata unreadable ({type(e).__name__})")
    if meta is not None:
        try:
            doc.title = (meta.title or "").strip() or None
            doc.authors = _split_authors(meta.author)
        except Exception:  # noqa: BLE001
            doc.warnings.append("metadata fields unreadable")
        doc.year = _year(meta)
    wanted = parse_page_ranges(pages, doc.n_pages)
    if pages and not wanted:
        raise InputError(
            f"page range {pages!r} selects no page of a {doc.n_pages}-page PDF",
            what="pages",
            fix=f"choose pages between 1 and {doc.n_pages}",
        )
    if len(wanted) > max_pages:
        doc.partial = True
        doc.warnings.append(
            f"{len(wanted)} pages selected; read the first {max_pages} (max_pages); "
            f"ask for more with pages='{wanted[max_pages]}-'"
        )
        wanted = wanted[:max_pages]
    _read_pages(doc, reader, wanted, max_chars=max_chars, deadline=t0 + timeout_s, timeout_s=timeout_s)
    doc.chunks = _chunks(doc.pages, chunk_chars)
    return doc


def _open(data: bytes, label: str, password: str | None) -> Any:
    """A pypdf reader of ``data``, decrypted; ToolError when it is not a PDF, malformed or locked."""
    from pypdf import PdfReader  # slow to import: only when a PDF is read
    from pypdf.errors import DependencyError, PdfReadError, PyPdfError

    if b"%PDF" not in data[:1024]:
        raise ToolError("not a PDF (no %PDF header)", what=label, fix="pass a PDF file")
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            try:
                ok = reader.decrypt(password if password is not None else "")
            except DependencyError as e:
                raise ToolError(
                    f"the PDF is encrypted with AES and cannot be decrypted here ({e})",
                    what=label,
                    fix="pip install cryptography, or pass a decrypted copy",
                ) from e
            if not ok:
                raise ToolError(
                    "the PDF is encrypted and the password is " + ("wrong" if password else "missing"),
                    what=label,
                    fix="pass password=... or a decrypted copy",
                )
        len(reader.pages)  # parses the page tree: a malformed one fails here
    except (PdfReadError, PyPdfError, ValueError, KeyError, TypeError, AttributeError, RecursionError, OSError) as e:
        raise ToolError(
            f"malformed PDF that pypdf cannot open ({type(e).__name__}: {e})",
            what=label,
            fix="repair it (e.g. `qpdf in.pdf out.pdf`) or pass another copy",
        ) from e
    return reader


def _read_pages(
    doc: PdfDocument, reader: Any, wanted: list[int], *, max_chars: int, deadline: float, timeout_s: float
) -> None:
    """Append the text of the ``wanted`` pages to ``doc`` until ``max_chars`` or the deadline (``time.monotonic``),
    marking ``doc`` partial with a warning for what is left out."""
    total = 0
    empty: list[int] = []
    for i, number in enumerate(wanted):
        if time.monotonic() > deadline:
            doc.partial = True
            doc.warnings.append(f"time limit of {timeout_s:g} s reached after {i} pages; pages {number}- not read")
            break
        try:
            text = reader.pages[number - 1].extract_text() or ""
        except Exception as e:  # noqa: BLE001 - any parser failure on a damaged page
            doc.partial = True
            doc.pages.append(PdfPage(number=number, text=""))
            doc.warnings.append(f"page {number}: text extraction failed ({type(e).__name__})")
            continue
        text = text.replace("\x00", "").strip()
        if not text:
            empty.append(number)
        if total + len(text) > max_chars:
            doc.pages.append(PdfPage(number=number, text=text[: max(max_chars - total, 0)]))
            doc.partial = True
            doc.warnings.append(f"text limit of {max_chars} characters reached on page {number}; later pages not read")
            break
        total += len(text)
        doc.pages.append(PdfPage(number=number, text=text))
    if empty and len(empty) == len(doc.pages) and doc.pages:
        doc.partial = True
        doc.warnings.append("no text layer on the pages read (image-only scan?); OCR is not available")
    elif empty:
        doc.warnings.append(f"no text on pages {', '.join(map(str, empty[:20]))}{' ...' if len(empty) > 20 else ''}")


class ReadPdfInput(BaseModel):
    """Arguments of the ``read_pdf`` tool."""

    source: str = Field(description="path of a PDF file, or an http(s) URL when online")
    pages: str | None = Field(None, description="page ranges such as '1-3,7' (default: all, up to max_pages)")
    max_pages: int = Field(20, ge=1, le=500, description="read at most this many pages")
