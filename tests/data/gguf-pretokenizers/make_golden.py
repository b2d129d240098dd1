#!/usr/bin/env python3
"""Goldens for the byte-level BPE pre-tokenizers of GGUF tokenizer.ggml.pre.

Usage (offline; needs the `tokenizers` PyPI package, 0.23.3 was used):
  python3 make_golden.py > golden.jsonl

For each family of pre-tokenizer names (src/convert/gguf_pretokenizers.cc
maps the names) this encodes TEXTS with Hugging Face `tokenizers`, using
Qwen3's byte-level vocabulary and merges (tests/data/qwen3-tokenizer) and a
Sequence of Split(Isolated) pre-tokenizers holding the family's patterns,
then ByteLevel without its own regex; no normalizer. One JSON line per
(family, text): {"pre": NAME, "text": ..., "words": [...]}, `words` being
what the Splits alone make of the text, and for the families in IDS also
"ids" (Qwen3's vocabulary has no multi-digit tokens, so ids alone would not
show how digits split; importing Qwen3's vocabulary once per family would
make the test slow, so ids are kept for one family of each set of flags).

For the families whose patterns come from llama.cpp rather than a model's
tokenizer.json (default, gpt-2, falcon, smollm, deepseek-coder), the words Hugging Face's
splitting makes of every text are also checked against an emulation, written
here from llama.cpp's documented behaviour (a regex list applied in turn to
each word of the previous step; its hand-written GPT-2 splitter; Unicode
general categories), so the goldens say what llama.cpp does on these texts.
"""

import json
import os
import sys
import unicodedata

from tokenizers import Regex, Tokenizer, pre_tokenizers

HERE = os.path.dirname(os.path.abspath(__file__))
QWEN3 = os.path.join(HERE, "..", "qwen3-tokenizer", "tokenizer.json")

GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
          r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
TEKKEN = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|"
          r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|"
          r"\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")

DIGITS = pre_tokenizers.Digits(individual_digits=True)
# name -> (steps: a regex for Split(Isolated) or a pre-tokenizer, ignore_merges).
# deepseek-coder is DeepSeek Coder's tokenizer.json: four Splits, then Digits.
FAMILIES = {
    "default": ([r"[\p{P}$+<=>^~|]+", GPT2, r"\p{N}+", r"[0-9][0-9][0-9]"], False),
    "gpt-2": ([GPT2], False),
    "falcon": ([r"[\p{P}$+<=>^~|`]+", GPT2, r"[0-9][0-9][0-9]"], False),
    "smollm": ([r"\p{N}", GPT2], False),
    "llama-bpe": ([LLAMA3], True),
    "tekken": ([TEKKEN], True),
    "deepseek-coder": ([r"[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", "[一-龥ࠀ-一가-퟿]+", DIGITS],
                       False),
}

TEXTS = [
    "Hello world",
    "It's 12345 o'clock; the year 2024!",
    "don't I'LL WE'RE you've they'd",
    "$100+200=300 <tag> a|b ^c ~d `e` x==y",
    "  leading and trailing  ",
    "tabs\tand\nnewlines\n\n  x\r\n",
    "a  b   c    d",
    "1,234,567.89 and 1234567 and 12",
    "mixed123abc4567def",
    "#hashtag @user 50% off!!! (really?) [yes] {no}",
    "path/to/file.txt -- a_b-c",
    "code: if (a >= b) { return a->c[i]; }",
    "naïve café — déjà vu… “quoted” ‘single’",
    "Größe Straße ÄÖÜ äöü",
    "Привет, мир! 123",
    "日本語のテキスト、句読点。全角１２３",
    "العربية ١٢٣٤٥",
    "x² + y³ = ½ ⅓",
    "emoji 😀👍 ok",
    "\u00a0nbsp\u00a0text\u3000ideographic",
    "ThisIsCamelCase HTTPServer iPhone ÉCOLE école",
    "end with spaces   ",
    "¿Qué? ¡Sí! «guillemets» 10€ £5 ¥3",
]

IDS = ("default", "tekken")

# --- llama.cpp's splitting, emulated -------------------------------------

WHITESPACE = set(map(chr, [9, 10, 11, 12, 13, 32, 0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F,
                           0x205F, 0x3000] + list(range(0x2000, 0x200B))))


def kind(ch):
    """'W' whitespace, 'L', 'N', 'O' any other assigned character, '' none."""
    if ch is None:
        return ""
    if ch in WHITESPACE:
        return "W"
    cat = unicodedata.category(ch)
    if cat[0] in "LN":
        return cat[0]
    return "" if cat == "Cn" else "O"


def split_runs(word, member, single=False):
    """Isolated split on maximal runs (or single characters) of `member`."""
    out, gap, i = [], 0, 0
    while i < len(word):
        if not member(word[i]):
            i += 1
            continue
        j = i + 1
        while not single and j < len(word) and member(word[j]):
            j += 1
        if i > gap:
            out.append(word[gap:i])
        out.append(word[i:j])
        gap = i = j
    if gap < len(word):
        out.append(word[gap:])
    return out


def split_triples(word):
    """Isolated split on ASCII digit triples, searched left to right."""
    out, gap, i = [], 0, 0
    while i + 3 <= len(word):
        if all("0" <= c <= "9" for c in word[i:i + 3]):
            if i > gap:
                out.append(word[gap:i])
            out.append(word[i:i + 3])
            gap = i = i + 3
        else:
            i += 1
    if gap < len(word):
        out.append(word[gap:])
    return out


def split_gpt2(word):
    """llama.cpp's hand-written GPT-2 splitter on one word."""
    out, i, n = [], 0, len(word)
    at = lambda j: word[j] if j < n else None  # noqa: E731
    while i < n:
        c = word[i]
        if c == "'" and i + 1 < n:
            if word[i + 1] in "stmd":
                out.append(word[i:i + 2])
                i += 2
                continue
            if word[i + 1:i + 3] in ("re", "ve", "ll"):
                out.append(word[i:i + 3])
                i += 3
                continue
        k = kind(at(i + 1)) if c == " " else kind(c)
        if k in ("L", "N", "O"):
            j = i + (1 if c == " " else 0)
            while kind(at(j)) == k:
                j += 1
            out.append(word[i:j])
            i = j
            continue
        m = 0
        while kind(at(i + m)) == "W":
            m += 1
        if m > 1 and i + m < n:
            m -= 1
        out.append(word[i:i + max(m, 1)])
        i += max(m, 1)
    return out


def split_space_runs(word, member):
    """Isolated split on `\\s?` followed by a maximal run of `member`."""
    out, gap, i = [], 0, 0
    while i < len(word):
        if kind(word[i]) == "W" and i + 1 < len(word) and member(word[i + 1]):
            j = i + 1
        elif member(word[i]):
            j = i
        else:
            i += 1
            continue
        while j < len(word) and member(word[j]):
            j += 1
        if i > gap:
            out.append(word[gap:i])
        out.append(word[i:j])
        gap = i = j
    if gap < len(word):
        out.append(word[gap:])
    return out


def cjk(ch):
    c = ord(ch)
    return 0x4E00 <= c <= 0x9FA5 or 0x0800 <= c <= 0x4E00 or 0xAC00 <= c <= 0xD7FF


def punct(extra):
    return lambda ch: unicodedata.category(ch)[0] == "P" or ch in extra


STEPS = {
    "default": [lambda w: split_runs(w, punct("$+<=>^~|")), split_gpt2,
                lambda w: split_runs(w, lambda ch: kind(ch) == "N"), split_triples],
    "gpt-2": [split_gpt2],
    "falcon": [lambda w: split_runs(w, punct("$+<=>^~|`")), split_gpt2, split_triples],
    "smollm": [lambda w: split_runs(w, lambda ch: kind(ch) == "N", single=True), split_gpt2],
    "deepseek-coder": [lambda w: split_runs(w, lambda ch: ch in "\r\n", single=True),
                       lambda w: split_space_runs(w, lambda ch: kind(ch) == "L"),
                       lambda w: split_space_runs(w, punct("")),
                       lambda w: split_runs(w, cjk),
                       lambda w: split_runs(w, lambda ch: kind(ch) == "N", single=True)],
}


def llama_cpp_words(name, text):
    words = [text]
    for step in STEPS[name]:
        words = [p for w in words for p in step(w)]
    return words


# --- Hugging Face --------------------------------------------------------


def splits(steps):
    return [pre_tokenizers.Split(Regex(p), "isolated") if isinstance(p, str) else p
            for p in steps]


def main():
    failures = 0
    for name, (patterns, ignore_merges) in FAMILIES.items():
        tok = Tokenizer.from_file(QWEN3)
        tok.normalizer = None
        tok.model.ignore_merges = ignore_merges
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            splits(patterns) + [pre_tokenizers.ByteLevel(add_prefix_space=False,
                                                         use_regex=False)])
        words_only = pre_tokenizers.Sequence(splits(patterns))
        for text in TEXTS:
            hf = [w for w, _ in words_only.pre_tokenize_str(text)]
            if name in STEPS:
                ours = llama_cpp_words(name, text)
                if hf != ours:
                    failures += 1
                    print(f"{name}: {text!r}\n  tokenizers {hf}\n  llama.cpp  {ours}",
                          file=sys.stderr)
            row = {"pre": name, "text": text, "words": hf}
            if name in IDS:
                row["ids"] = tok.encode(text, add_special_tokens=False).ids
            print(json.dumps(row, ensure_ascii=False))
    if failures:
        sys.exit(f"{failures} texts split differently")


if __name__ == "__main__":
    main()
