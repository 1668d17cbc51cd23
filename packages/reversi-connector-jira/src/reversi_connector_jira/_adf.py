"""Plain text to Atlassian Document Format and back.

Jira Cloud's REST API v3 takes descriptions and comments as Atlassian Document Format
(ADF), a JSON tree of nodes (https://developer.atlassian.com/cloud/jira/platform/apis/document/structure/).
:func:`to_adf` turns the agent's plain text into a ``doc`` faithfully: a blank line
(``"\\n\\n"``) separates paragraphs, a single line break within a paragraph becomes a
``hardBreak`` node, every other character is kept in ``text`` nodes as it is (spaces,
tabs, Markdown-looking characters included; nothing is interpreted as formatting).
Windows (``\\r\\n``) and old Mac (``\\r``) line ends are read as ``\\n``.
:func:`to_text` reads a document back: for one :func:`to_adf` made, ``to_text(to_adf(t))
== t`` for every text ``t`` with ``\\n`` line ends. Documents written by people in Jira
(headings, lists, code blocks, mentions) are read as their text, block by block.
"""

from __future__ import annotations

from typing import Any

__all__ = ["to_adf", "to_text"]

_BLOCKS = frozenset(
    {"paragraph", "heading", "blockquote", "codeBlock", "panel", "rule", "mediaSingle", "table"}
)


def to_adf(text: str) -> dict[str, Any]:
    """An ADF ``doc`` (version 1) holding ``text``: paragraphs, hard breaks, text nodes.

    An empty text gives a document with no content. ADF refuses empty text nodes, so an
    empty line is a paragraph without nodes, and two breaks in a row are two
    ``hardBreak`` nodes.
    """
    normal = text.replace("\r\n", "\n").replace("\r", "\n")
    content: list[dict[str, Any]] = []
    if normal:
        for block in normal.split("\n\n"):
            nodes: list[dict[str, Any]] = []
            for index, line in enumerate(block.split("\n")):
                if index:
                    nodes.append({"type": "hardBreak"})
                if line:
                    nodes.append({"type": "text", "text": line})
            content.append({"type": "paragraph", "content": nodes})
    return {"type": "doc", "version": 1, "content": content}


def _inline(node: Any) -> str:
    if not isinstance(node, dict):
        return ""
    kind = node.get("type")
    given = node.get("attrs")
    attrs: dict[str, Any] = given if isinstance(given, dict) else {}
    if kind == "text":
        return str(node.get("text", ""))
    if kind == "hardBreak":
        return "\n"
    if kind in ("mention", "emoji", "status", "date"):
        return str(attrs.get("text") or attrs.get("shortName") or attrs.get("timestamp") or "")
    if kind == "inlineCard":
        return str(attrs.get("url", ""))
    return "".join(_inline(child) for child in node.get("content") or [])


def _blocks(node: Any) -> list[str]:
    """The text of each block under ``node``, in order (list items one per line)."""
    if not isinstance(node, dict):
        return []
    kind = node.get("type")
    children = node.get("content") or []
    if kind in ("bulletList", "orderedList"):
        lines = []
        for number, item in enumerate(children, start=1):
            mark = f"{number}." if kind == "orderedList" else "-"
            lines.append(f"{mark} " + "\n".join(_blocks(item)))
        return ["\n".join(lines)]
    if kind in (
        "doc",
        "listItem",
        "blockquote",
        "panel",
        "table",
        "tableRow",
        "tableCell",
        "tableHeader",
        "layoutSection",
        "layoutColumn",
        "expand",
    ):
        return [text for child in children for text in _blocks(child)]
    if kind in _BLOCKS or kind is None:
        return [_inline(node)]
    return [_inline(node)]


def to_text(document: Any) -> str | None:
    """The plain text of an ADF document (``None`` for ``None``: no description).

    Blocks are separated by a blank line, hard breaks are line breaks, list items start
    with ``-`` or their number. A value that is already a string (Jira's REST API v2
    shape) is returned as it is.
    """
    if document is None:
        return None
    if isinstance(document, str):
        return document
    return "\n\n".join(_blocks(document))
