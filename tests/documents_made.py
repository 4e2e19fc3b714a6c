"""Real documents made in the tests: a multi-page PDF (fpdf2) with headings, a running header
and page numbers; HTML pages with navigation and footers; a DOCX (python-docx) with heading
styles, a page header and footer, and a table."""

from __future__ import annotations

import io

import docx
from fpdf import FPDF


def pdf_of(objects: list[bytes], trailer: bytes = b"") -> bytes:
    """A PDF of `objects` written by hand (numbered from 1, the first its root) with a correct
    cross-reference table; `trailer` adds entries to the trailer (such as `/Info 6 0 R`)."""
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R %s>>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, trailer, xref)
    return bytes(out)


# (heading, level, paragraph, starts a new page); each section names things found nowhere else
REPORT = [
    ("Funding", 1, "The Nordic Energy Fund lends money to Fjord Wind. Fjord Wind builds turbines in Bergen.", True),
    ("Wind projects", 2, "Fjord Wind runs the Hywind farm near Stavanger with Equinor.", False),
    ("Staff", 1, "Maria Okonkwo leads the fund from Oslo. Lars Berg manages the Bergen office.", True),
    ("Board", 2, "The board meets in Trondheim every spring.", False),
    ("Outlook", 1, "The fund plans a hydrogen plant in Tromso with Statkraft.", True),
]
RUNNING_HEADER = "Nordic Energy Fund - Annual report 2024"


def report_pdf(title: str | None = "Annual report 2024", filler: int = 4) -> bytes:
    """A 3-page report: a running header and "Page n" footer on every page; sections 1-2 on
    page 1, 3-4 on page 2, 5 on page 3; each paragraph padded with `filler` plain sentences."""

    class Report(FPDF):
        def header(self) -> None:
            self.set_font("Helvetica", size=9)
            self.cell(0, 8, RUNNING_HEADER, align="C")
            self.ln(12)

        def footer(self) -> None:
            self.set_y(-15)
            self.set_font("Helvetica", size=9)
            self.cell(0, 10, f"Page {self.page_no()}", align="C")

    pdf = Report()
    if title:
        pdf.set_title(title)
    for heading, level, paragraph, new_page in REPORT:
        if new_page:
            pdf.add_page()
        pdf.set_font("Helvetica", "B", 18 if level == 1 else 14)
        pdf.multi_cell(0, 10, heading)
        pdf.ln(2)
        pdf.set_font("Helvetica", size=11)
        pdf.multi_cell(0, 6, paragraph + " It is described in this report in some detail." * filler)
        pdf.ln(4)
    return bytes(pdf.output())


NEWS_PAGE = b"""<!doctype html><html><head><title>Wind power in the Nordics | Energy News</title></head>
<body><header><nav><a href="/">Home</a> | <a href="/about">About</a> | <a href="/contact">Contact</a></nav></header>
<main><article><h1>Wind power in the Nordics</h1>
<p>The Nordic Energy Fund supports wind farms in Norway and Denmark.</p>
<h2>Projects</h2><p>Fjord Wind built the Hywind farm with Equinor near Bergen.</p>
<h3>Offshore</h3><p>Offshore projects are led by Lars Berg from Copenhagen.</p>
</article></main>
<footer><p>Copyright 2024 Energy News. All rights reserved.</p><a href="/privacy">Privacy policy</a></footer>
</body></html>"""

# no landmarks at all: the menu and footer are anonymous divs, told apart by trafilatura
DIV_PAGE = b"""<html><head><title>Field notes</title></head><body>
<div class="menu"><a href="/">Home</a> | <a href="/about">About</a> | <a href="/contact">Contact</a></div>
<div class="content"><h1>Field notes from Svalbard</h1>
<p>Anna Holm studied polar bears near Longyearbyen for three winters with the Norwegian Polar Institute.</p>
<h2>Equipment</h2>
<p>The team used snow scooters from Tromso and satellite collars made in Trondheim for the bears.</p></div>
<div class="footer">Copyright 2024 Field Notes Ltd. All rights reserved.</div>
</body></html>"""


def memo_docx() -> bytes:
    """A DOCX with a core-properties title, a page header and footer, Heading 1/2 paragraphs, a table."""
    document = docx.Document()
    document.core_properties.title = "Board memo"
    section = document.sections[0]
    section.header.paragraphs[0].text = "CONFIDENTIAL - Nordic Energy Fund"
    section.footer.paragraphs[0].text = "Printed on recycled paper"
    document.add_heading("Decisions", level=1)
    document.add_paragraph("The board approved the Tromso hydrogen plant.")
    document.add_heading("Budget", level=2)
    document.add_paragraph("Statkraft pays half of the plant.")
    table = document.add_table(rows=2, cols=2)
    for row, (name, city) in zip(table.rows, [("Maria Okonkwo", "Oslo"), ("Lars Berg", "Bergen")]):
        row.cells[0].text, row.cells[1].text = name, city
    document.add_heading("Next steps", level=1)
    document.add_paragraph("The fund hires engineers in Narvik.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()
