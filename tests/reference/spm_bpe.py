#!/usr/bin/python3
"""A small SentencePiece BPE encoder for the stories260K tokenizer
(tests/data/stories260K/tok512.vocab: one `piece<TAB>score` per id).

Written from SentencePiece's BPE model: runs of spaces collapse to one and
leading and trailing spaces go (the model's remove_extra_whitespaces), the
text gets a leading "▁" and every space becomes "▁"; it is split into characters; then, while some
adjacent pair of symbols concatenates to a piece of the vocabulary, the pair
whose piece scores highest (the leftmost on a tie) is merged. A symbol that
is not a piece becomes its UTF-8 bytes, <0xXX> each (byte fallback).

It exists so that the perplexity reference scores the same ids as Pocket
without taking them from Pocket; run_quality_tests.py first checks it
against the sentencepiece ids stored in tok512-golden.jsonl.
"""

import os


def load_vocab(path):
    pieces, scores = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            piece, score = line.rstrip("\n").split("\t")
            pieces.append(piece)
            scores.append(float(score))
    return pieces, scores


class SpmBpe:
    def __init__(self, vocab_path):
        self.pieces, self.scores = load_vocab(vocab_path)
        self.ids = {}
        for i, p in enumerate(self.pieces):
            self.ids.setdefault(p, i)

    def encode(self, text):
        """Token ids of `text` (no BOS)."""
        text = " ".join(w for w in text.split(" ") if w)
        if not text:
            return []
        syms = list("\u2581" + text.replace(" ", "\u2581"))
        while True:
            best = None
            for i in range(len(syms) - 1):
                merged = syms[i] + syms[i + 1]
                j = self.ids.get(merged)
                if j is not None and (best is None or self.scores[j] > best[0]):
                    best = (self.scores[j], i)
            if best is None:
                break
            i = best[1]
            syms[i:i + 2] = [syms[i] + syms[i + 1]]
        out = []
        for s in syms:
            if s in self.ids:
                out.append(self.ids[s])
            else:
                out.extend(self.ids[f"<0x{b:02X}>"] for b in s.encode("utf-8"))
        return out


def default_tokenizer():
    here = os.path.dirname(os.path.abspath(__file__))
    return SpmBpe(os.path.join(here, "..", "data", "stories260K", "tok512.vocab"))
