// JSON schemas that together use every supported keyword: the random
// walks of json_schema_test.cc and the constrained generation of
// tests/runtime/grammar_generate_test.cc check their outputs against
// schema_validator.h.
#pragma once

namespace pocket::testing {

inline const char* const kTestSchemas[] = {
    R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "email": {"type": "string", "format": "email"},
        "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3}},
        "required": ["name", "age"], "additionalProperties": false})",
    R"({"type": "array", "prefixItems": [{"type": "boolean"}, {"type": "null"}],
        "items": {"type": "number"}, "minItems": 1, "maxItems": 4})",
    R"({"anyOf": [{"type": "string", "format": "date"}, {"type": "string", "format": "uuid"},
                  {"const": {"k": [1, 2]}}]})",
    R"({"type": "object", "properties": {"id": {"type": "string", "pattern": "^[a-f0-9]{4}-x$"}},
        "additionalProperties": {"type": "integer", "exclusiveMaximum": 10}})",
    R"({"$defs": {"tree": {"type": "object", "properties": {"v": {"type": "integer"},
        "kids": {"type": "array", "items": {"$ref": "#/$defs/tree"}, "maxItems": 2}},
        "required": ["v"], "additionalProperties": false}}, "$ref": "#/$defs/tree"})",
    R"({"type": "object", "properties": {"t": {"type": "string", "format": "date-time"},
        "u": {"oneOf": [{"type": "integer"}, {"type": "string", "minLength": 2, "maxLength": 6}]},
        "w": {"type": ["boolean", "null"]}}, "required": ["t", "u", "w"],
        "additionalProperties": false})",
};

}  // namespace pocket::testing
