#!/usr/bin/python3
"""How far the default q8 and q4 configurations of stories260K land from the
unquantized model, held in bounds just above what was measured
(docs/testing.md, "Quality against the unquantized model").

Usage:
  /usr/bin/python3 run_quality_tests.py POCKET_CLI WORK_DIR [--cli-arg ARG ...]

The unquantized model is tests/data/stories260K-hf as the float64 reference
of hf_reference.py computes it (checked here against the stored llama2.c-side
logits JSON at 1e-4). For q8 (g32), q4 g64 (the converter's default) and q4
g32, all with the default int8 activations and a bf16 KV cache:
  * KL(f32 || quantized) per position and top-1 agreement, over the 16
    positions of the stored JSON and over the 600 positions of the three
    llama2.c greedy stories (golden-greedy.jsonl);
  * `pocket perplexity --ctx 128` of tests/reference/held_story.txt (written
    for this test, not model output), against the same perplexity computed
    by the references from the same token ids (spm_bpe.py, itself checked
    against the stored sentencepiece ids): the f32 model's by the float64
    reference, each quantized model's by int8_reference.py.
Every figure has a bound in BOUNDS; exits 1 if one is passed.
"""

import json
import math
import os
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.normpath(os.path.join(HERE, "..", "data"))
sys.path.insert(0, HERE)
import hf_reference as ref  # noqa: E402
import int8_reference as ir  # noqa: E402
import pocket_reader as pr  # noqa: E402
import spm_bpe  # noqa: E402

CTX = 128
KV = "bf16"
QUANTS = [("q8", ["--quant", "q8"]), ("q4 g64", ["--quant", "q4", "--group", "64"]),
          ("q4 g32", ["--quant", "q4", "--group", "32"])]
# Bounds, each just above the worst value measured on the x86 targets
# AVX3_DL, AVX3, AVX2 and SSE4 (`--cli-arg --cpu-target --cli-arg NAME`;
# docs/testing.md has every figure): a regression in the quantizers, the
# int8 path or the cache fails them.
BOUNDS = {
    # mean KL(f32 || q) in nats over the JSON's 16 positions / the stories' 600
    ("q8", "kl_json"): 2e-4, ("q8", "kl_stories"): 7e-4,          # measured 1.31e-4, 5.46e-4
    ("q4 g64", "kl_json"): 0.025, ("q4 g64", "kl_stories"): 0.075,  # 0.0198, 0.0645
    ("q4 g32", "kl_json"): 0.035, ("q4 g32", "kl_stories"): 0.06,   # 0.0282, 0.0511
    # top-1 agreement with f32, fraction of positions (at least)
    ("q8", "top1_json"): 1.0, ("q8", "top1_stories"): 0.98,         # 16/16, 592/600
    ("q4 g64", "top1_json"): 0.9375, ("q4 g64", "top1_stories"): 0.87,  # 16/16, 534/600
    ("q4 g32", "top1_json"): 0.875, ("q4 g32", "top1_stories"): 0.875,  # 15/16, 535/600
    # perplexity of the held story over the f32 model's (at most)
    ("q8", "ppl_ratio"): 1.0015, ("q4 g64", "ppl_ratio"): 1.21,     # 1.00078, 1.1943
    ("q4 g32", "ppl_ratio"): 1.14,                                   # 1.1226
}
# |engine mean NLL - the reference's on the same file and arithmetic|, nats
# per token. The f32 model follows the reference to f32 rounding (measured
# 6e-6). The int8 path's near ties (docs/testing.md) are not searched here:
# each one the engine rounds the other way moves the log-probabilities of
# its window's later tokens, measured up to 5.9e-4 (q8) and 6.4e-3 (q4).
NLL_TOL = {"f32": 1e-4, "q8": 1e-3, "q4 g64": 1e-2, "q4 g32": 1e-2}


def run(cmd, timeout=300):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    if p.returncode != 0:
        msg = p.stderr.decode(errors="replace").strip() or p.stdout.decode(errors="replace")
        raise RuntimeError(f"exit {p.returncode}: {' '.join(cmd[1:3])}...: {msg[-600:]}")
    return p.stdout.decode(errors="replace")


class Results:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, ok, detail):
        self.passed += ok
        self.failed += not ok
        print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)


def windows(ids_text, bos):
    """docs/cli.md: windows of CTX tokens, BOS then CTX - 1 text tokens."""
    per = CTX - 1
    return [[bos] + ids_text[s:s + per] for s in range(0, len(ids_text), per)]


def reference_nll(logits_fn, wins):
    total, count = 0.0, 0
    for w in wins:
        lp = ir.log_softmax(logits_fn(w)[:-1])
        total += float(-lp[np.arange(len(w) - 1), np.asarray(w[1:])].sum())
        count += len(w) - 1
    return total / count, count


def engine_logits(cli, model, ids, out, extra):
    if os.path.exists(out):
        os.remove(out)
    run([cli, "logits", "-m", model, "--tokens", ",".join(str(int(i)) for i in ids),
         "--kv", KV, "--out", out] + extra)
    return np.load(out).astype(np.float64)


def engine_perplexity(cli, model, text_file, extra):
    return json.loads(run([cli, "perplexity", "-m", model, "-f", text_file, "--ctx", str(CTX),
                           "--kv", KV, "--json"] + extra))


def main(argv):
    args = argv[1:]
    extra, pos = [], []
    i = 0
    while i < len(args):
        if args[i] == "--cli-arg" and i + 1 < len(args):
            extra.append(args[i + 1])
            i += 2
        else:
            pos.append(args[i])
            i += 1
    if len(pos) != 2:
        print(__doc__)
        return 2
    cli, work = os.path.abspath(pos[0]), os.path.abspath(pos[1])
    if os.path.isdir(work):
        shutil.rmtree(work)
    os.makedirs(work)
    res = Results()
    src = os.path.join(DATA, "stories260K-hf")
    cfg_json, weights = ref.load_hf_dir(src)
    cfg = ref.HFConfig(cfg_json)
    f64 = ref.HFReference(cfg, weights)

    # The tokenizer of the perplexity reference against sentencepiece's ids.
    tok = spm_bpe.default_tokenizer()
    with open(os.path.join(DATA, "stories260K", "tok512-golden.jsonl")) as f:
        golden_tok = [json.loads(line) for line in f]
    bad = [g["text"] for g in golden_tok if tok.encode(g["text"]) != g["ids"]]
    res.check("spm_bpe vs tok512-golden.jsonl", not bad,
              f"{len(golden_tok) - len(bad)}/{len(golden_tok)} texts give sentencepiece's ids"
              + (f"; differ: {bad[:3]}" if bad else ""))

    # The unquantized model: the reference against the stored logits.
    with open(os.path.join(DATA, "stories260K", "logits-once-upon-a-time.json")) as f:
        golden = json.load(f)
    want = np.asarray(golden["logits"], np.float64)
    json_ids = golden["input_ids"]
    f32_json = f64.logits(json_ids)[:len(want)]
    d = float(np.abs(f32_json - want).max())
    res.check("f32 reference vs logits JSON", d <= 1e-4, f"max |diff| {d:.2e} (tol 1e-4)")
    with open(os.path.join(DATA, "stories260K", "golden-greedy.jsonl")) as f:
        stories = [json.loads(line)["ids"][:200] for line in f]
    f32_stories = [f64.logits(s) for s in stories]

    held = os.path.join(HERE, "held_story.txt")
    with open(held, encoding="utf-8") as f:
        text_ids = tok.encode(f.read())
    wins = windows(text_ids, 1)

    models = {}
    for name, flags in [("f32", ["--quant", "f32"])] + QUANTS:
        models[name] = os.path.join(work, name.replace(" ", "") + ".pocket")
        run([cli, "convert", src, "-o", models[name]] + flags)

    # Perplexity of the f32 model: engine vs the reference (bf16 cache).
    pf32 = ir.DefaultPathReference(cfg, pr.PocketFile(models["f32"]))
    nll_ref_f32, count = reference_nll(lambda w: pf32.logits(w, KV, "f32"), wins)
    ppl = engine_perplexity(cli, models["f32"], held, extra)
    ok = ppl["tokens"] == count and abs(ppl["nll"] - nll_ref_f32) <= NLL_TOL["f32"]
    res.check("perplexity f32 vs reference", ok,
              f"engine {ppl['perplexity']:.4f} (nll {ppl['nll']:.6f}, {ppl['tokens']} tokens, "
              f"{ppl['windows']} windows), reference {math.exp(nll_ref_f32):.4f} "
              f"(nll {nll_ref_f32:.6f}, {count} tokens); tol {NLL_TOL['f32']:g} nats")
    ppl_f32 = ppl["perplexity"]

    for name, _flags in QUANTS:
        model = models[name]
        # KL and top-1 against the unquantized model.
        got = engine_logits(cli, model, json_ids, os.path.join(work, "json.npy"), extra)
        kl_j = ir.kl_divergence(want, got[:len(want)])
        top_j = float(np.mean(got[:len(want)].argmax(1) == want.argmax(1)))
        kls, tops = [], []
        for s, f in zip(stories, f32_stories):
            g = engine_logits(cli, model, s, os.path.join(work, "story.npy"), extra)
            kls.append(ir.kl_divergence(f, g))
            tops.append(g.argmax(1) == f.argmax(1))
        kl_s, top_s = np.concatenate(kls), float(np.mean(np.concatenate(tops)))
        for key, val, lower in (("kl_json", float(kl_j.mean()), False),
                                ("kl_stories", float(kl_s.mean()), False),
                                ("top1_json", top_j, True), ("top1_stories", top_s, True)):
            bound = BOUNDS[(name, key)]
            ok = val >= bound if lower else val <= bound
            extra_info = ""
            if key.startswith("kl"):
                arr = kl_j if key == "kl_json" else kl_s
                extra_info = f" (max {float(arr.max()):.2e} over {len(arr)} positions)"
            res.check(f"{name} {key}", ok,
                      f"{val:.4g}{extra_info}, bound {'>=' if lower else '<='} {bound:g}")
        # Perplexity: engine vs its reference, and vs the f32 model.
        pq = ir.DefaultPathReference(cfg, pr.PocketFile(model))
        j = json.loads(run([cli, "bench", "-m", model, "--kv", KV, "-p", "4", "-n", "1", "-r",
                            "1", "--json"] + extra))
        math_ = j["attention_math"]
        nll_ref, count = reference_nll(lambda w: pq.logits(w, KV, math_), wins)
        ppl = engine_perplexity(cli, model, held, extra)
        ok = ppl["tokens"] == count and abs(ppl["nll"] - nll_ref) <= NLL_TOL[name]
        res.check(f"{name} perplexity vs reference", ok,
                  f"engine {ppl['perplexity']:.4f} (nll {ppl['nll']:.6f}), reference "
                  f"{math.exp(nll_ref):.4f} (nll {nll_ref:.6f}); tol {NLL_TOL[name]:g} nats")
        ratio = ppl["perplexity"] / ppl_f32
        bound = BOUNDS[(name, "ppl_ratio")]
        res.check(f"{name} perplexity / f32's", ratio <= bound,
                  f"{ppl['perplexity']:.4f} / {ppl_f32:.4f} = {ratio:.5f}, bound <= {bound:g}")
    print(f"{res.passed} passed, {res.failed} failed")
    return 0 if res.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
