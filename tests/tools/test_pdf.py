"""read_pdf on PDFs generated here (matplotlib PdfPages + pypdf writer)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.backends.backend_pdf import PdfPages  # noqa: E402
from pypdf import PdfReader, PdfWriter  # noqa: E402

from sgieval.core import InputError, ToolError  # noqa: E402
from sgieval.tools import ToolPool, parse_page_ranges, read_pdf  # noqa: E402


def make_pdf(
    path: Path,
    texts: list[str],
    *,
    title="Graphene Transport",
    author="Ada Lovelace; Alan Turing",
    created=datetime(2021, 5, 4),
) -> Path:
    with PdfPages(path, metadata={"Title": title, "Author": author, "CreationDate": created}) as pdf:
        for t in texts:
            fig = plt.figure(figsize=(4, 3))
            if t:
                fig.text(0.05, 0.5, t)
            pdf.savefig(fig)
            plt.close(fig)
    return path


@pytest.fixture(scope="module")
def paper(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("pdf")
    return make_pdf(d / "paper.pdf", [f"Page {i} electron mobility" for i in range(1, 6)])


def test_pages_metadata_and_chunks(paper):
    doc = read_pdf(paper)
    assert doc.n_pages == 5
    assert [p.number for p in doc.pages] == [1, 2, 3, 4, 5]
    assert doc.pages[2].text == "Page 3 electron mobility"
    assert doc.title == "Graphene Transport"
    assert doc.authors == ["Ada Lovelace", "Alan Turing"]
    assert doc.year == 2021
    assert doc.partial is False and doc.warnings == []
    # one chunk holds everything: 5 pages x 24 chars + 4 separators of 2 chars = 128 < 4000
    assert len(doc.chunks) == 1
    assert (doc.chunks[0].first_page, doc.chunks[0].last_page) == (1, 5)


def test_page_ranges_and_small_chunks(paper):
    doc = read_pdf(paper, pages="2,4-5", chunk_chars=30)
    assert [p.number for p in doc.pages] == [2, 4, 5]
    # each page text is 24 chars; a chunk of 30 holds one page (24) + "\n\n" (2) + 4 chars of the next
    assert [(c.first_page, c.last_page) for c in doc.chunks] == [(2, 4), (4, 5), (5, 5)]
    assert doc.chunks[0].text == "Page 2 electron mobility\n\nPage"


def test_parse_page_ranges():
    assert parse_page_ranges("1-3,7", 10) == [1, 2, 3, 7]
    assert parse_page_ranges("8-", 10) == [8, 9, 10]
    assert parse_page_ranges("-2", 10) == [1, 2]
    assert parse_page_ranges(None, 3) == [1, 2, 3]
    assert parse_page_ranges("2,2,1", 3) == [2, 1]
    with pytest.raises(InputError, match=r"pages: bad page range '5-2'"):
        parse_page_ranges("5-2", 10)
    with pytest.raises(InputError, match=r"pages: bad page range 'x'"):
        parse_page_ranges("x", 10)


def test_corrupted_pdf_is_a_clear_error(paper, tmp_path):
    data = paper.read_bytes()
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(data[:200] + b"\x00garbage" * 50)
    with pytest.raises(ToolError) as ei:
        read_pdf(bad)
    assert str(ei.value).startswith(f"{bad}: ")
    assert "Fix:" in str(ei.value)
    notpdf = tmp_path / "notes.pdf"
    notpdf.write_text("just text")
    with pytest.raises(ToolError, match=r"not a PDF \(no %PDF header\)"):
        read_pdf(notpdf)
    with pytest.raises(ToolError, match="no such PDF file"):
        read_pdf(tmp_path / "missing.pdf")


def test_truncated_pdf_is_a_clear_error(paper):
    data = paper.read_bytes()
    with pytest.raises(ToolError) as ei:
        read_pdf(data[: int(len(data) * 0.6)])
    assert str(ei.value) == (
        "<bytes>: malformed PDF that pypdf cannot open (PdfStreamError: Stream has ended unexpectedly). "
        "Fix: repair it (e.g. `qpdf in.pdf out.pdf`) or pass another copy"
    )


def test_damaged_page_keeps_the_others(paper, tmp_path):
    from pypdf.generic import NameObject, NumberObject

    w = PdfWriter(clone_from=str(paper))
    w.pages[2][NameObject("/Resources")] = NumberObject(7)  # page 3: resources replaced by a number
    bad = tmp_path / "damaged.pdf"
    w.write(str(bad))
    doc = read_pdf(bad)
    assert [p.text for p in doc.pages] == [
        "Page 1 electron mobility",
        "Page 2 electron mobility",
        "",
        "Page 4 electron mobility",
        "Page 5 electron mobility",
    ]
    assert doc.warnings == ["no text on pages 3"]


def test_encrypted_pdf(paper, tmp_path):
    w = PdfWriter(clone_from=str(paper))
    w.encrypt(user_password="s3cret", algorithm="RC4-128")
    enc = tmp_path / "enc.pdf"
    with open(enc, "wb") as fh:
        w.write(fh)
    with pytest.raises(ToolError) as ei:
        read_pdf(enc)
    assert (
        str(ei.value)
        == f"{enc}: the PDF is encrypted and the password is missing. Fix: pass password=... or a decrypted copy"
    )
    with pytest.raises(ToolError, match="password is wrong"):
        read_pdf(enc, password="nope")
    doc = read_pdf(enc, password="s3cret")
    assert doc.pages[0].text == "Page 1 electron mobility"


def test_image_only_pdf_is_partial(tmp_path):
    pdf = make_pdf(tmp_path / "scan.pdf", ["", ""])
    doc = read_pdf(pdf)
    assert doc.partial is True
    assert doc.warnings == ["no text layer on the pages read (image-only scan?); OCR is not available"]
    assert [p.text for p in doc.pages] == ["", ""]


def test_500_page_pdf_respects_limits(tmp_path):
    base = make_pdf(tmp_path / "ten.pdf", [f"Section {i} text" for i in range(10)])
    w = PdfWriter()
    src = PdfReader(str(base))
    for _ in range(50):
        for page in src.pages:
            w.add_page(page)
    big = tmp_path / "big.pdf"
    with open(big, "wb") as fh:
        w.write(fh)
    doc = read_pdf(big)  # default max_pages=50
    assert doc.n_pages == 500
    assert len(doc.pages) == 50 and doc.pages[-1].number == 50
    assert doc.partial is True
    assert doc.warnings == ["500 pages selected; read the first 50 (max_pages); ask for more with pages='51-'"]
    doc = read_pdf(big, pages="491-", max_pages=50)
    assert [p.number for p in doc.pages] == list(range(491, 501))
    # page 491 is copy 49 of the 10-page base, position 0 -> "Section 0 text"
    assert doc.pages[0].text == "Section 0 text" and doc.partial is False
    # text cap: each page 14 chars; 100 chars = 7 pages (98) + 2 chars of page 8
    doc = read_pdf(big, max_chars=100)
    assert len(doc.pages) == 8 and doc.pages[-1].text == "Se"
    assert doc.partial is True
    assert "text limit of 100 characters reached on page 8" in doc.warnings[-1]
    # time budget exhausted before the first page: partial with a warning, no hang
    doc = read_pdf(big, timeout_s=0.0)
    assert doc.pages == [] and doc.partial is True
    assert doc.warnings[-1] == "time limit of 0 s reached after 0 pages; pages 1- not read"
    with pytest.raises(InputError, match="selects no page of a 500-page PDF"):
        read_pdf(big, pages="900-")


def test_read_pdf_tool(paper):
    [tool] = ToolPool.from_names("pdf").tools
    out = tool.invoke({"source": str(paper), "pages": "1"})
    assert out["pages"] == [{"number": 1, "text": "Page 1 electron mobility"}]
    assert tool.name == "read_pdf"
    assert set(tool.args) == {"source", "pages", "max_pages"}
