"""schema_instance: a deterministic, schema-valid instance for the JSON-schema subset products use."""

from __future__ import annotations

from typing import Literal

import jsonschema
import pytest
from pydantic import BaseModel, Field

from h2hmem.testing import SchemaNotSupported, schema_instance


class Entity(BaseModel):
    name: str
    kind: Literal["person", "place", "object"]
    age: int | None = None
    aliases: list[str] = Field(default_factory=list, max_length=3)


class Edge(BaseModel):
    source: str
    target: str
    weight: float = Field(ge=0.5, le=2.0)
    since: str = Field(json_schema_extra={"format": "date-time"})


class Graph(BaseModel):
    entities: list[Entity] = Field(min_length=2)
    edges: list[Edge]
    pair: tuple[str, int]


class Node(BaseModel):
    label: str
    children: list[Node] = Field(default_factory=list)


# mem0's fact-extraction and memory-update replies, as JSON schemas
FACTS = {
    "type": "object",
    "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
    "required": ["facts"],
}
UPDATE = {
    "type": "object",
    "properties": {
        "memory": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "text": {"type": "string", "minLength": 20},
                    "event": {"type": "string", "enum": ["ADD", "UPDATE", "DELETE", "NONE"]},
                    "old_memory": {"type": ["string", "null"]},
                },
                "required": ["id", "text", "event"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["memory"],
}
SCHEMAS = {
    "mem0 facts": FACTS,
    "mem0 update": UPDATE,
    "pydantic graph ($defs, $ref, anyOf null, tuple)": Graph.model_json_schema(),
    "recursive": Node.model_json_schema(),
    "numbers": {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "exclusiveMinimum": 3, "multipleOf": 2},
            "b": {"type": "number", "exclusiveMaximum": -1.5},
            "c": {"type": "integer", "minimum": 10, "maximum": 10},
            "d": {"type": "number", "minimum": 0.25, "multipleOf": 0.25},
        },
    },
    "allOf": {
        "allOf": [
            {"type": "object", "properties": {"x": {"type": "boolean"}}, "required": ["x"]},
            {"properties": {"y": {"const": 7}}, "required": ["y"]},
        ]
    },
    "strings": {
        "type": "object",
        "properties": {
            "short": {"type": "string", "maxLength": 3},
            "long": {"type": "string", "minLength": 30},
            "day": {"type": "string", "format": "date"},
            "mail": {"type": "string", "format": "email"},
            "code": {"type": "string", "pattern": "^mock"},
        },
    },
    "oneOf first non-null": {"oneOf": [{"type": "null"}, {"type": "array", "items": {"enum": [3, 4]}, "minItems": 2}]},
    "top-level array": {"type": "array", "items": {"type": "object", "properties": {"q": {"type": "string"}}}},
    "anything": {},
}


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_the_instance_is_valid_and_the_same_every_time(name):
    schema = SCHEMAS[name]
    value = schema_instance(schema)
    jsonschema.validate(value, schema, cls=jsonschema.Draft202012Validator)
    assert schema_instance(schema) == value


def test_values_follow_the_documented_rules():
    assert schema_instance(FACTS) == {"facts": ["mock fact"]}  # one item; the property name, singular
    (item,) = schema_instance(UPDATE)["memory"]
    assert item["event"] == "ADD" and item["old_memory"] == "mock old_memory"  # first enum; non-null type
    assert len(item["text"]) == 20 and item["text"].startswith("mock text")  # padded to minLength
    numbers = schema_instance(SCHEMAS["numbers"])
    assert numbers == {"a": 4, "b": -2.0, "c": 10, "d": 0.25}
    graph = schema_instance(Graph.model_json_schema())
    assert len(graph["entities"]) == 2 and graph["entities"][0]["kind"] == "person"
    assert graph["pair"] == ["mock pair", 0] and graph["edges"][0]["since"] == "2023-05-08T13:56:00Z"
    assert schema_instance(SCHEMAS["oneOf first non-null"]) == [3, 3]


def test_recursion_stops():
    node = schema_instance(Node.model_json_schema())
    depth = 0
    while node.get("children"):
        (node,) = node["children"]
        depth += 1
    assert 1 <= depth <= 9


@pytest.mark.parametrize(
    "schema,message",
    [
        ({"type": "string", "pattern": "^[0-9]{4}$"}, "cannot generate a string matching pattern"),
        ({"$ref": "#/$defs/Missing"}, "$ref '#/$defs/Missing' does not resolve"),
        ({"$ref": "https://example.com/schema.json"}, "only local $ref"),
        ({"type": "integer", "minimum": 2, "maximum": 3, "multipleOf": 5}, "no integer fits"),
    ],
)
def test_unsatisfiable_schemas_say_why(schema, message):
    with pytest.raises(SchemaNotSupported, match=None) as err:
        schema_instance(schema)
    assert message in str(err.value)
