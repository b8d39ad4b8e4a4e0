"""The small Markdown subset sskj writes (headings, tables, lists, code, images) as HTML. Pure."""

from __future__ import annotations

import html
import math
import re
from typing import Sequence

from ..contract.escape import md_unescape

# --------------------------------------------------------------------------- Markdown -> HTML (our own subset)


_INLINE = re.compile(r"``\s(.+?)\s``|`([^`]+)`|\*\*(.+?)\*\*|!\[([^\]]*)\]\(([^)]*)\)")


def _text(text: str) -> str:
    return html.escape(md_unescape(text) if "\\" in text else text)


def inline(text: str) -> str:
    """Inline Markdown of report.py: `code`, `` code with ` ``, **bold**; images become their alt text.
    Backslash escapes (contract.escape.md_text) show the character itself."""
    if "`" not in text and "*" not in text and "![" not in text:
        return _text(text)  # no markup (most cells and lines): only escapes
    out: list[str] = []
    pos = 0
    for m in _INLINE.finditer(text):
        if m.start() > 0 and text[m.start() - 1] == "\\" and not text[:m.start()].endswith("\\\\"):
            continue  # an escaped `*`, `` ` `` or `[`: text, not markup
        out.append(_text(text[pos:m.start()]))
        if m.group(1) is not None or m.group(2) is not None:
            out.append(f"<code>{html.escape(m.group(1) if m.group(1) is not None else m.group(2))}</code>")
        elif m.group(3) is not None:
            out.append(f"<strong>{_text(m.group(3))}</strong>")
        else:
            out.append(_text(m.group(4)))
        pos = m.end()
    out.append(_text(text[pos:]))
    return "".join(out)


def _cells(line: str) -> list[str]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    if "\\" not in body:  # no escaped `|`: every `|` ends a cell
        return [c.strip() for c in body.split("|")]
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", body)]


def _table(lines: list[str]) -> str:
    head = _cells(lines[0])
    aligns = ["right" if c.strip().endswith(":") else "left" for c in _cells(lines[1])]
    out = ['<div class="scroll"><table class="sortable"><thead><tr>']
    out += [f'<th class="{a}">{inline(h)}</th>' for h, a in zip(head, aligns)]
    out.append("</tr></thead><tbody>")
    for line in lines[2:]:
        row = _cells(line)
        # a line without markup or backslash escapes (most): each cell's HTML is its text escaped, one escape a
        # line, none when it holds nothing to escape
        if _MARKUP.search(line) is not None:
            shown = [inline(v) for v in row]
        else:
            shown = row if _HTML_SPECIAL.search(line) is None else _cells(html.escape(line))
        tds = []
        for value, text, align in zip(row, shown, aligns):
            bare = value.strip("*")
            cls = f"{align} v-{bare.replace(' ', '-')}" if bare in ("faster", "slower") else align
            # a cell is left-aligned unless a class says otherwise: no class="left" on every cell (a tenth of a
            # long table's bytes)
            attr = "" if cls == "left" else f' class="{cls}"'
            tds.append(f'<td{attr}{_sort_value(bare)}>{text}</td>')
        out.append("<tr>" + "".join(tds) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


# what inline() turns into markup or unescapes: a line without any is text
_MARKUP = re.compile(r"[`*\\]|!\[")
_HTML_SPECIAL = re.compile("[&<>\"']")  # what html.escape changes
# a text that float() could read after `,` and a leading `<` are dropped: digits, space, sign, point, exponent,
# `_`, and the letters of inf/nan/infinity; and at least one digit (inf and nan are not finite: no sort value)
_NUMBERISH = re.compile(r"[\d\s+\-._eEiInNfFtTyYaA,<]*\d[\d\s+\-._eEiInNfFtTyYaA,<]*")


def _sort_value(text: str) -> str:
    if _NUMBERISH.fullmatch(text) is None:
        return ""  # not a finite number: float() would refuse it or give inf/nan
    try:
        value = float(text.replace(",", "").lstrip("<"))
    except ValueError:
        return ""
    return f' data-v="{value!r}"' if math.isfinite(value) else ""


def markdown_blocks(lines: Sequence[str]) -> str:
    """HTML of Markdown lines: paragraphs, `-` lists, pipe tables, ```fences```, ### headings."""
    out: list[str] = []
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
        elif line.startswith("```"):
            fence = _fence(line)
            j = i + 1
            while j < n and not (_fence(lines[j]) >= fence and not lines[j].strip("`").strip()):
                j += 1
            out.append("<pre><code>" + html.escape("\n".join(lines[i + 1:j])) + "</code></pre>")
            i = j + 1
        elif line.startswith("### "):
            out.append(f"<h3>{inline(line[4:])}</h3>")
            i += 1
        elif line.startswith("|") and i + 1 < n and re.match(r"^\|?\s*:?-{3,}", lines[i + 1]):
            j = i
            while j < n and lines[j].startswith("|"):
                j += 1
            out.append(_table(list(lines[i:j])))
            i = j
        elif line.startswith("- "):
            items = []
            while i < n and lines[i].startswith("- "):
                items.append(f"<li>{inline(lines[i][2:])}</li>")
                i += 1
            out.append("<ul>" + "".join(items) + "</ul>")
        else:
            # a paragraph holds at least this line (a `|` line without a separator row, say):
            # every pass of the loop moves on
            para = [line]
            i += 1
            while i < n and lines[i].strip() and not lines[i].startswith(("- ", "|", "```", "### ")):
                para.append(lines[i])
                i += 1
            out.append(f"<p>{inline(' '.join(para))}</p>")
    return "\n".join(out)


_FENCE = re.compile(r"`{3,}")


def _fence(line: str) -> int:
    """The length of the backtick fence a line opens or closes (0 when it is none)."""
    if not line.startswith("```"):
        return 0
    m = _FENCE.match(line)
    return len(m.group(0)) if m else 0


def split_sections(markdown: str) -> tuple[str, list[tuple[str, list[str]]]]:
    """(title, [(section title, its lines)]) of a report.md / comparison.md."""
    title = ""
    sections: list[tuple[str, list[str]]] = []
    fence = 0  # inside a fenced block: a `## ` line is text
    for line in markdown.split("\n"):
        if fence:
            fence = 0 if _fence(line) >= fence and not line.strip("`").strip() else fence
        elif _fence(line):
            fence = _fence(line)
        if line.startswith("# ") and not title and not sections:
            title = line[2:]
        elif line.startswith("## ") and not fence:
            sections.append((line[3:], []))
        elif sections:
            sections[-1][1].append(line)
    return title, sections

