"""Plain text to Atlassian Document Format and back: paragraphs and line breaks kept exactly."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reversi_connector_jira._adf import to_adf, to_text


def test_paragraphs_and_line_breaks() -> None:
    assert to_adf("One\ntwo\n\nThree") == {
        "type": "doc",
        "version": 1,
        "content": [
            {
                "type": "paragraph",
                "content": [
                    {"type": "text", "text": "One"},
                    {"type": "hardBreak"},
                    {"type": "text", "text": "two"},
                ],
            },
            {"type": "paragraph", "content": [{"type": "text", "text": "Three"}]},
        ],
    }


def test_no_empty_text_node_and_odd_characters_kept_as_they_are() -> None:
    doc = to_adf("a\n\n\n\nb\n\n")
    texts = [n for p in doc["content"] for n in p["content"] if n["type"] == "text"]
    assert all(n["text"] for n in texts)
    assert [len(p["content"]) for p in doc["content"]] == [1, 0, 1, 0]
    odd = "  *not bold* <b>x</b> 100% ünï\tcode  "
    assert to_adf(odd)["content"][0]["content"] == [{"type": "text", "text": odd}]
    assert to_adf("") == {"type": "doc", "version": 1, "content": []}
    assert to_adf("a\r\nb\rc") == to_adf("a\nb\nc")


@given(st.text(alphabet=st.sampled_from(["a", "é", " ", "\t", "\n", "*", "#"]), max_size=40))
def test_text_comes_back_exactly(text: str) -> None:
    assert to_text(to_adf(text)) == text


def test_documents_people_write_are_read_as_text() -> None:
    doc = {
        "type": "doc",
        "version": 1,
        "content": [
            {
                "type": "heading",
                "attrs": {"level": 2},
                "content": [{"type": "text", "text": "Steps"}],
            },
            {
                "type": "orderedList",
                "content": [
                    {
                        "type": "listItem",
                        "content": [
                            {"type": "paragraph", "content": [{"type": "text", "text": "run"}]}
                        ],
                    },
                    {
                        "type": "listItem",
                        "content": [
                            {
                                "type": "paragraph",
                                "content": [
                                    {"type": "text", "text": "ask "},
                                    {"type": "mention", "attrs": {"id": "1", "text": "@Ann"}},
                                ],
                            }
                        ],
                    },
                ],
            },
            {"type": "codeBlock", "content": [{"type": "text", "text": "x = 1"}]},
        ],
    }
    assert to_text(doc) == "Steps\n\n1. run\n2. ask @Ann\n\nx = 1"
    assert to_text(None) is None
    assert to_text("already text") == "already text"
