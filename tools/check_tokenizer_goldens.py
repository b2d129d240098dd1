#!/usr/bin/env python3
"""Re-derives the {text, ids} tokenizer goldens of tests/data from the
Hugging Face `tokenizers` library, an implementation independent of Pocket's.

Usage: python3 tools/check_tokenizer_goldens.py [--write]

Needs `pip install tokenizers` (never needed by the build or CI: the goldens
are committed). Without --write it reports every row whose ids differ and
exits 1 if any does; with --write it rewrites the golden files' ids.
"""
import json
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
# (golden file, tokenizer.json): ids without special tokens (no BOS).
GOLDENS = [
    ("mistral-tokenizer/golden.jsonl", "mistral-tokenizer/tokenizer.json"),
    ("qwen3-tokenizer/golden.jsonl", "qwen3-tokenizer/tokenizer.json"),
]


def main():
    from tokenizers import Tokenizer, __version__

    write = "--write" in sys.argv[1:]
    failed = 0
    for golden, tokenizer in GOLDENS:
        tok = Tokenizer.from_file(str(DATA / tokenizer))
        text = (DATA / golden).read_text(encoding="utf-8")
        rows = [json.loads(line) for line in text.split("\n") if line]
        differ = 0
        for row in rows:
            ids = tok.encode(row["text"], add_special_tokens=False).ids
            if ids != row["ids"]:
                differ += 1
                print(f"{golden}: {row['text']!r}: golden {row['ids']} tokenizers {ids}")
                row["ids"] = ids
        print(f"{golden}: {len(rows)} rows, {differ} differ (tokenizers {__version__})")
        if write and differ:
            lines = [json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in rows]
            (DATA / golden).write_text("\n".join(lines) + "\n", encoding="utf-8")
        failed += differ
    sys.exit(1 if failed and not write else 0)


if __name__ == "__main__":
    main()
