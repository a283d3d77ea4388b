"""The escape a text needs in XML and HTML alike: & < > as entity references.

Its two users add their own quoting on top, each matching a reference byte for byte, so they
stay two: junit.py's attribute values as ElementTree writes them (`"` as `&quot;`, CR, LF and
tab as character references) and section.py's `esc` as markupsafe writes it (`'` as `&#39;`,
`"` as `&#34;`)."""

from __future__ import annotations


def escape_text(text: str) -> str:
    """`text` with & < > as &amp; &lt; &gt; (str.replace only where the character occurs: a
    short text costs less so than through a regular expression or a translation table)."""
    if "&" in text:
        text = text.replace("&", "&amp;")
    if "<" in text:
        text = text.replace("<", "&lt;")
    if ">" in text:
        text = text.replace(">", "&gt;")
    return text
