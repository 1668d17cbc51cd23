"""Just enough of a GraphQL reader for the fake: one operation, its root field, its selection.

The fake must answer with exactly the fields a document selects, as a GraphQL server
does, without depending on a GraphQL library at run time (the fake ships in the
connector's wheel). It reads documents of the shape the connector sends
(https://spec.graphql.org/October2021/#sec-Language): ``query``/``mutation``, an
optional name and variable definitions, one root field whose arguments are variables
or literals, and nested selections. Aliases, fragments and directives are refused with
``ValueError`` (the connector sends none); the package's tests validate every document
against Linear's schema with graphql-core, which this module does not replace.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Field", "Operation", "parse_operation", "select"]

# GraphQL's ignored tokens are tab, space, line ends, commas and the BOM, its digits 0-9
# (https://spec.graphql.org/October2021/#sec-Language.Source-Text): spelt out, since
# Python's \s and \d would also take other Unicode spaces and digits.
_TOKEN = re.compile(
    r"""(?P<skip>[\t\n\r ,\ufeff]+|\#[^\n\r]*)
      | (?P<name>[_A-Za-z][_0-9A-Za-z]*)
      | (?P<string>"(?:[^"\\\n]|\\.)*")
      | (?P<number>-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)
      | (?P<punct>\.\.\.|[{}()\[\]:$!=@])""",
    re.VERBOSE,
)


@dataclass(frozen=True)
class Field:
    """A selected field: its name, its arguments and the fields selected below it."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    """Literal values, or :class:`Variable` references."""
    selections: tuple[Field, ...] = ()


@dataclass(frozen=True)
class Variable:
    """A ``$name`` argument value."""

    name: str


@dataclass(frozen=True)
class Operation:
    """One operation: ``query`` or ``mutation``, its name, its root field."""

    kind: str
    name: str | None
    root: Field


def _tokens(text: str) -> Iterator[tuple[str, str]]:
    pos = 0
    while pos < len(text):
        found = _TOKEN.match(text, pos)
        if found is None:
            raise ValueError(f"Syntax Error: Unexpected character {text[pos]!r}")
        pos = found.end()
        kind = found.lastgroup or "skip"
        if kind != "skip":
            yield kind, found.group()


class _Reader:
    def __init__(self, text: str) -> None:
        self.items = list(_tokens(text))
        self.pos = 0

    def peek(self) -> str | None:
        return self.items[self.pos][1] if self.pos < len(self.items) else None

    def take(self, expected: str | None = None) -> tuple[str, str]:
        if self.pos >= len(self.items):
            raise ValueError("Syntax Error: Unexpected <EOF>")
        kind, value = self.items[self.pos]
        if expected is not None and value != expected:
            raise ValueError(f"Syntax Error: Expected {expected!r}, found {value!r}")
        self.pos += 1
        return kind, value

    def name(self) -> str:
        kind, value = self.take()
        if kind != "name":
            raise ValueError(f"Syntax Error: Expected Name, found {value!r}")
        return value

    def value(self) -> Any:
        kind, value = self.take()
        if value == "$":
            return Variable(self.name())
        if kind == "string":
            return json.loads(value)
        if kind == "number":
            return json.loads(value)
        if value in ("true", "false", "null"):
            return json.loads(value)
        raise ValueError(f"the fake reads no argument value like {value!r}")

    def arguments(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        if self.peek() != "(":
            return found
        self.take("(")
        while self.peek() != ")":
            key = self.name()
            self.take(":")
            found[key] = self.value()
        self.take(")")
        return found

    def selections(self) -> tuple[Field, ...]:
        if self.peek() != "{":
            return ()
        self.take("{")
        fields = []
        while self.peek() != "}":
            if self.peek() in ("...", "@"):
                raise ValueError("the fake reads no fragments or directives")
            name = self.name()
            if self.peek() == ":":
                raise ValueError("the fake reads no aliases")
            fields.append(Field(name, self.arguments(), self.selections()))
        self.take("}")
        if not fields:
            raise ValueError("Syntax Error: Expected Name, found '}'")
        return tuple(fields)

    def skip_variable_definitions(self) -> None:
        if self.peek() != "(":
            return
        depth = 0
        while True:
            _, value = self.take()
            depth += {"(": 1, ")": -1}.get(value, 0)
            if depth == 0:
                return


def parse_operation(text: str) -> Operation:
    """Read a document holding one operation with one root field; ``ValueError`` otherwise."""
    reader = _Reader(text)
    kind, name = "query", None
    if reader.peek() in ("query", "mutation", "subscription"):
        kind = reader.take()[1]
        if reader.peek() not in ("(", "{"):
            name = reader.name()
        reader.skip_variable_definitions()
    roots = reader.selections()
    if reader.peek() is not None:
        raise ValueError("the fake reads one operation per document")
    if len(roots) != 1:
        raise ValueError("the fake reads one root field per operation")
    return Operation(kind, name, roots[0])


def select(value: Any, selections: tuple[Field, ...], where: str) -> Any:
    """``value`` with only the fields ``selections`` name, as a GraphQL server answers.

    Raises ``KeyError`` naming the path of a selected field the fake's object does not
    model (a broken fake, not a vendor answer).
    """
    if not selections or value is None:
        return value
    if isinstance(value, list):
        return [select(item, selections, where) for item in value]
    if not isinstance(value, Mapping):
        raise KeyError(f"{where} is a leaf; it has no fields to select")
    out: dict[str, Any] = {}
    for chosen in selections:
        if chosen.name not in value:
            raise KeyError(f"the fake does not model {where}.{chosen.name}")
        out[chosen.name] = select(value[chosen.name], chosen.selections, f"{where}.{chosen.name}")
    return out
