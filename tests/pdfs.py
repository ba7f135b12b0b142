"""Real PDF files for receipt tests: a text layer pypdf reads, or none (a scanned image)."""

from __future__ import annotations


def text_pdf(*lines: str) -> bytes:
    """A one-page PDF 1.4 whose text layer holds ``lines`` (Helvetica, uncompressed)."""
    shown = "".join(
        f"({line.replace('(', '[').replace(')', ']')}) Tj 0 -16 Td " for line in lines)
    return _pdf(f"BT /F1 12 Tf 56 760 Td {shown}ET".encode("latin-1"))


def image_only_pdf() -> bytes:
    """A one-page PDF that draws a rectangle and holds no text (as a scan has none)."""
    return _pdf(b"0 0 0 rg 56 700 200 40 re f")


def _pdf(content: bytes) -> bytes:
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref)
    return bytes(out)
