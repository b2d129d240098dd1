#!/usr/bin/env python3
"""Renders the Qwen3 tool-calling goldens of tests/data/qwen3-tokenizer with
Hugging Face transformers' apply_chat_template (tools=...), an implementation
independent of Pocket's native renderer.

Usage: python3 tools/make_tool_chat_goldens.py

Needs `pip install transformers` (never needed by the build or CI: the
golden file is committed). Writes chat-template-tools-golden.jsonl: one row
per conversation with its messages, tools (in the order and key order
given), options and the rendered text.
"""
import json
from pathlib import Path

DIR = Path(__file__).resolve().parent.parent / "tests" / "data" / "qwen3-tokenizer"


def tool(name, description, parameters):
    return {"type": "function",
            "function": {"name": name, "description": description, "parameters": parameters}}


WEATHER = tool("get_weather", "Current weather for a city.", {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "City name, e.g. \"Zürich\""},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city"],
})
SEARCH = tool("search_flights", "Find flights.\nDates are ISO 8601 <YYYY-MM-DD> & times local.", {
    "type": "object",
    "properties": {
        "route": {
            "type": "object",
            "properties": {"from": {"type": "string", "minLength": 3, "maxLength": 3},
                           "to": {"type": "string", "pattern": "^[A-Z]{3}$"}},
            "required": ["from", "to"],
            "additionalProperties": False,
        },
        "date": {"type": "string", "format": "date"},
        "passengers": {"type": "integer", "minimum": 1, "maximum": 9},
        "max_price": {"type": "number", "minimum": 0, "default": 250.5},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 4},
        "direct": {"type": "boolean"},
    },
    "required": ["route", "date"],
})
NO_ARGS = tool("now", "The time, in \t tabs and \\ backslashes.",
               {"type": "object", "properties": {}})

CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'

ROWS = [
    ("tools_user", [{"role": "user", "content": "Weather in Paris?"}], [WEATHER], {}),
    ("tools_system_user", [{"role": "system", "content": "You are terse."},
                           {"role": "user", "content": "Fly me to Rome"}],
     [WEATHER, SEARCH, NO_ARGS], {}),
    ("tools_nothink", [{"role": "user", "content": "What time is it?"}], [NO_ARGS],
     {"enable_thinking": False}),
    ("tools_call_and_response", [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "<think>\nNeed the tool.\n</think>\n\n" + CALL},
        {"role": "tool", "content": "{\"temp\": 21}"},
    ], [WEATHER], {}),
    ("tools_two_responses_then_answer", [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris and Oslo?"},
        {"role": "assistant", "content": CALL + "\n" + CALL.replace("Paris", "Oslo")},
        {"role": "tool", "content": "21 C"},
        {"role": "tool", "content": "3 C"},
        {"role": "assistant", "content": "Paris 21 C, Oslo 3 C."},
        {"role": "user", "content": "Thanks"},
    ], [WEATHER, SEARCH], {"enable_thinking": False}),
    ("tool_response_without_tools", [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "ok"},
        {"role": "tool", "content": "result"},
    ], [], {}),
]


def main():
    from transformers import AutoTokenizer, __version__
    tok = AutoTokenizer.from_pretrained(str(DIR))
    out = []
    for name, messages, tools, options in ROWS:
        text = tok.apply_chat_template(messages, tools=tools or None, tokenize=False,
                                       add_generation_prompt=True, **options)
        row = {"name": name, "messages": messages, "tools": tools, "add_generation_prompt": True}
        row.update(options)
        row["text"] = text
        out.append(json.dumps(row, ensure_ascii=False))
    (DIR / "chat-template-tools-golden.jsonl").write_text("\n".join(out) + "\n", encoding="utf-8")
    print(f"{len(out)} rows (transformers {__version__})")


if __name__ == "__main__":
    main()
