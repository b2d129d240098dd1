#!/usr/bin/python3
"""Checks Pocket's default q4/q8 configuration end to end against
int8_reference.py (docs/testing.md, "The default configuration").

Usage:
  /usr/bin/python3 run_default_path_tests.py POCKET_CLI WORK_DIR
        [--only SUBSTR] [--mutate NAME] [--no-mutations]

For every case (a model, a quantization, a layout) and every KV type
(bf16, f16, q8) it runs
  pocket convert DIR -o X.pocket --quant Q [--group G] [--layout L]
  pocket bench -m X.pocket --kv KV --json ...   (attention_math, cpu_target)
  pocket logits -m X.pocket --tokens <64 ids> --kv KV --out X.npy
(the default --quant-math int8) and compares the logits with the reference
computed from the file's bytes: every position within TOL, except at most
MAX_OFF positions that a near tie the search cannot resolve leaves off.
Then it runs the mutation checks: the same comparison with a reference that
reads or rounds one thing wrongly must fail. Prints one line per case and
ends with "N passed, M failed"; exits 1 on any failure.
"""

import json
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
import make_tiny_models as tiny  # noqa: E402
import pocket_reader as pr  # noqa: E402

N_TOKENS = 64
KV_TYPES = ("bf16", "f16", "q8")
# Per logit, after near ties are resolved (docs/testing.md derives it):
# f32 accumulation in another order, amplified by the int8 arithmetic's
# sensitivity to its scales: 10x the largest `noise` measured (1.8e-4).
TOL = 2e-3
# Positions a near tie the search could not resolve may leave off (two
# ties that interact, or one whose engine value lies outside the window);
# a wrong scale, a dropped group or a misplaced row moves nearly every
# position (the mutation checks: 30 to 64 of 64).
MAX_OFF = 4
# A case is only meaningful where the reference itself is well conditioned:
# rounding every Linear output by 2^-23 relative, every rounding decision
# kept, must move its logits by less than TOL / 4 (deep q4 models fail
# this: docs/testing.md).
NOISE_LIMIT = TOL / 4

# (name, tiny model, spec overrides, quant, group, layout)
WIDE = dict(hidden=128, ffn=384, heads=4, kv_heads=2, head_dim=32, layers=1, seed=51)
CASES = [
    ("llama q8", "llama", {}, "q8", 32, "rows16"),
    ("llama-tied q8", "llama-tied", {}, "q8", 32, "rows16"),
    ("qwen2 q8", "qwen2", {}, "q8", 32, "rows16"),
    ("qwen2-untied q8", "qwen2-untied", {}, "q8", 32, "rows16"),
    ("qwen3 q8", "qwen3", {}, "q8", 32, "rows16"),
    ("qwen3-untied q8", "qwen3-untied", {}, "q8", 32, "rows16"),
    ("llama-1L q8 row_major", "llama", dict(layers=1, seed=41), "q8", 32, "row_major"),
    ("llama-1L q4 g32", "llama", dict(layers=1, seed=41), "q4", 32, "rows16"),
    ("llama-1L q4 g64", "llama", dict(layers=1, seed=41), "q4", 64, "rows16"),
    ("llama-1L q4 g64 row_major", "llama", dict(layers=1, seed=41), "q4", 64, "row_major"),
    ("qwen2-1L q4 g32", "qwen2", dict(layers=1, seed=42), "q4", 32, "rows16"),
    ("qwen3-1L q4 g32", "qwen3", dict(layers=1, seed=43), "q4", 32, "rows16"),
    ("wide-1L q8", "llama", WIDE, "q8", 32, "rows16"),
    ("stories260K q8", None, {}, "q8", 32, "rows16"),
]


def run(cmd, timeout=300):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    if p.returncode != 0:
        msg = (p.stderr.decode(errors="replace").strip() or
               p.stdout.decode(errors="replace").strip())
        raise RuntimeError(f"exit {p.returncode}: {' '.join(cmd[1:3])}...: {msg[-600:]}")
    return p.stdout.decode(errors="replace")


def engine_math(cli, model, kv):
    """How the engine multiplies attention for this model and cache on this
    CPU (`bench --json`): the reference then models that arithmetic."""
    j = json.loads(run([cli, "bench", "-m", model, "--kv", kv, "-p", "4", "-n", "1",
                        "-r", "1", "--json"]))
    return j["attention_math"], j.get("cpu_target", "")


def int16_weights(cpu_target, head_dim):
    """docs/kernels.md: int8 attention sums int16-rounded weights in pairs
    on AVX3_DL (heads of 64s) and AVX2_VNNI (heads of 32s)."""
    return (cpu_target == "AVX3_DL" and head_dim % 64 == 0) or \
        (cpu_target == "AVX2_VNNI" and head_dim % 32 == 0)


def engine_logits(cli, model, ids, kv, out):
    if os.path.exists(out):
        os.remove(out)
    run([cli, "logits", "-m", model, "--tokens", ",".join(str(int(i)) for i in ids),
         "--kv", kv, "--out", out])
    arr = np.load(out)
    if arr.dtype != np.float32 or arr.shape[0] != len(ids):
        raise RuntimeError(f"{out}: {arr.dtype} {arr.shape}")
    return arr.astype(np.float64)


def conditioning(reference, ids, kv, math, i16):
    """How far rounding every Linear output by 2^-23 relative (about what f32
    accumulation in another order does) moves the reference's logits when
    every rounding decision stays as it was: the gain of the arithmetic
    itself, which the tolerance must cover, apart from near ties."""
    first = ir.Rounding()
    base = reference.logits(ids, kv, math, first, i16)
    rng = np.random.default_rng(7)
    linear = ir.linear

    def noisy(x, m, rnd, bias=None, acts=None):
        y = linear(x, m, rnd, bias, acts)
        return y * (1 + 2.0 ** -23 * rng.standard_normal(y.shape))
    ir.linear = noisy
    try:
        again = reference.logits(ids, kv, math, ir.Rounding(replay=first.results), i16)
        return float(np.abs(again - base).max())
    finally:
        ir.linear = linear


class Results:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def report(self, name, problems, detail):
        ok = not problems
        self.passed += ok
        self.failed += not ok
        line = f"{'PASS' if ok else 'FAIL'} {name}: {detail}"
        if problems:
            line += " | " + "; ".join(problems)
        print(line, flush=True)


def compare(reference, got, ids, kv, math, i16):
    """(problems, detail) of the engine's logits against the reference."""
    d, toggles, off, n_near, passes = ir.explain(
        lambda rnd: reference.logits(ids, kv, math, rnd, i16), got, TOL, max_left_off=MAX_OFF)
    on = [p for p in range(len(d)) if p not in off]
    worst_on = float(d[on].max()) if on else float("nan")
    bad_on = [p for p in on if d[p] > TOL]
    problems = []
    if len(off) + len(bad_on) > MAX_OFF:
        problems.append(f"{len(off) + len(bad_on)} positions off by more than {TOL:g} "
                        f"(at most {MAX_OFF}): max |diff| {d.max():.3e}")
    worst_on = float(max([d[p] for p in on if d[p] <= TOL], default=float("nan")))
    detail = (f"attention {math}; max |diff| {worst_on:.2e} at {len(on) - len(bad_on)} positions"
              f" (tol {TOL:g}), {len(off) + len(bad_on)} off (max {d.max():.2e}); "
              f"{len(toggles)} of {n_near} near ties rounded the other way; {passes} passes")
    return problems, detail


def model_source(work, model, overrides):
    if model is None:
        src = os.path.join(DATA, "stories260K-hf")
        return src, ref.HFConfig(ref.load_hf_dir(src)[0])
    spec = dict(tiny.MODELS[model], **overrides)
    tag = model + "".join(f"-{k}{v}" for k, v in sorted(overrides.items()))
    src = os.path.join(work, "models", tag)
    if not os.path.isdir(src):
        tiny.write_model(src, model, spec)
    with open(os.path.join(src, "config.json")) as f:
        return src, ref.HFConfig(json.load(f))


def check_case(results, cli, work, case, ids_all):
    name, model, overrides, quant, group, layout = case
    stem = os.path.join(work, name.replace(" ", "_"))
    try:
        src, cfg = model_source(work, model, overrides)
        cmd = [cli, "convert", src, "-o", stem + ".pocket", "--quant", quant,
               "--layout", layout]
        if quant == "q4":
            cmd += ["--group", str(group)]
        run(cmd)
        pf = pr.PocketFile(stem + ".pocket")
        layouts = {t.layout for n, t in pf.tensors.items() if t.dtype == quant}
        want = pr.LAYOUT_ROWS16 if layout == "rows16" else pr.LAYOUT_ROW_MAJOR
        if want not in layouts:
            raise RuntimeError(f"no {quant} tensor stored {layout}")
        reference = ir.DefaultPathReference(cfg, pf)
    except Exception as e:  # noqa: BLE001 - report and go on
        results.report(name, [str(e)], "error")
        return None
    if model is None:
        ids = ids_all["stories"]
    else:
        ids = ids_all["tiny"]
    for kv in KV_TYPES:
        tag = f"{name} kv {kv}"
        try:
            math, target = engine_math(cli, stem + ".pocket", kv)
            i16 = int16_weights(target, cfg.head_dim)
            got = engine_logits(cli, stem + ".pocket", ids, kv, f"{stem}-{kv}.npy")
            noise = conditioning(reference, ids, kv, math, i16)
            problems, detail = compare(reference, got, ids, kv, math, i16)
            if noise > NOISE_LIMIT:
                problems.append(f"reference ill-conditioned: f32-size noise moves logits "
                                f"{noise:.2e} > {NOISE_LIMIT:g}")
            results.report(tag, problems, detail + f"; noise {noise:.1e}")
        except Exception as e:  # noqa: BLE001
            results.report(tag, [str(e)], "error")
    return stem


# ---------------------------------------------------------------------------
# mutations: a reference that reads or rounds one thing wrongly must fail

def _scale_of_next_group(m):
    """One matrix reads each row's second group scale as its first's."""
    if m.name == "blk.0.ffn_up.weight" and m.quantized and m.scales.shape[1] > 1:
        m.scales = m.scales.copy()
        m.scales[:, 0] = m.scales[:, 1]
    return m


def _dropped_group(m):
    """One matrix's last group of every row is left out of the dot."""
    if m.name == "blk.0.attn_v.weight" and m.quantized:
        m.codes = m.codes.copy()
        m.codes[:, -1, :] = 0
        if m.mins is not None:
            m.mins = m.mins.copy()
            m.mins[:, -1] = 0
    return m


def _misplaced_row(m):
    """Two rows of a 16-row block swapped (a rows16 lane read as its
    neighbour's)."""
    if m.name == "blk.0.attn_output.weight" and m.quantized:
        for a in ("codes", "scales", "mins"):
            v = getattr(m, a)
            if v is not None:
                v = v.copy()
                v[[4, 5]] = v[[5, 4]]
                setattr(m, a, v)
    return m


def _scale_halved_lsb(m):
    """Every f16 weight scale of one matrix one f16 step too large (what
    an unrounded or differently rounded scale gives)."""
    if m.name == "blk.0.ffn_down.weight" and m.quantized:
        s16 = m.scales.astype(np.float16)
        m.scales = (s16.view(np.uint16) + 1).view(np.float16).astype(np.float64)
    return m


READ_MUTATIONS = {
    "neighbour group scale": _scale_of_next_group,
    "dropped group": _dropped_group,
    "misplaced row": _misplaced_row,
    "scale one f16 step off": _scale_halved_lsb,
}


def _act_scale_128():
    """Activations quantized with d = max|x| / 128 instead of 127."""
    orig = ir.quantize_activations

    def q(x, group, rnd):
        codes, d, s = orig(x, group, rnd)
        xg = np.asarray(x, np.float32).reshape(codes.shape)
        amax = np.abs(xg).max(axis=-1)
        inv = np.where(amax > 0, np.float32(128) / amax, 0).astype(np.float32)
        c = np.clip(np.rint(xg * inv[..., None]), -127, 127)
        return c, (amax / np.float32(128)).astype(np.float64), s
    return "quantize_activations", q


def _kv_scale_f32():
    """q8 KV scales kept in f32 instead of rounded to f16."""
    orig = ir.Rounding.narrow

    def narrow(self, x, kind, pos_axis, exact=False):
        if kind == "f16" and np.asarray(x).shape[-1] == 1:
            self.site += 1
            return np.asarray(x, np.float32).astype(np.float64)
        return orig(self, x, kind, pos_axis, exact)
    return None, narrow


def run_mutations(results, cli, work, stems, ids_all, only):
    """The checks above, with mutated references: each must fail."""
    picks = [("llama-1L q4 g32", "q8"), ("llama-1L q4 g32", "bf16"), ("qwen2 q8", "f16")]
    for case_name, kv in picks:
        if case_name not in stems or (only and only not in case_name):
            continue
        stem = stems[case_name]
        case = next(c for c in CASES if c[0] == case_name)
        src, cfg = model_source(work, case[1], case[2])
        pf = pr.PocketFile(stem + ".pocket")
        ids = ids_all["tiny"]
        math, target = engine_math(cli, stem + ".pocket", kv)
        i16 = int16_weights(target, cfg.head_dim)
        got = np.load(f"{stem}-{kv}.npy").astype(np.float64)
        muts = [(k, f, None) for k, f in READ_MUTATIONS.items()]
        muts.append(("activation scale max/128", None, _act_scale_128))
        if kv == "q8":
            muts.append(("q8 KV scale not rounded to f16", None, _kv_scale_f32))
        for label, read, patch in muts:
            saved = None
            try:
                if patch is not None:
                    attr, fn = patch()
                    if attr is None:
                        saved = ("narrow", ir.Rounding.narrow)
                        ir.Rounding.narrow = fn
                    else:
                        saved = (attr, getattr(ir, attr))
                        setattr(ir, attr, fn)
                reference = ir.DefaultPathReference(cfg, pf, mutate=read)
                problems, detail = compare(reference, got, ids, kv, math, i16)
            finally:
                if saved is not None:
                    if saved[0] == "narrow":
                        ir.Rounding.narrow = saved[1]
                    else:
                        setattr(ir, saved[0], saved[1])
            caught = bool(problems)
            results.report(f"mutation '{label}' on {case_name} kv {kv} is caught",
                           [] if caught else ["the mutated reference passed"],
                           detail)


def main(argv):
    args = argv[1:]
    only = None
    mutations = True
    pos = []
    i = 0
    while i < len(args):
        if args[i] == "--only" and i + 1 < len(args):
            only = args[i + 1]
            i += 2
        elif args[i] == "--no-mutations":
            mutations = False
            i += 1
        else:
            pos.append(args[i])
            i += 1
    if len(pos) != 2:
        print(__doc__)
        return 2
    cli, work = os.path.abspath(pos[0]), os.path.abspath(pos[1])
    if os.path.isdir(work):
        shutil.rmtree(work)
    os.makedirs(os.path.join(work, "models"))
    results = Results()
    with open(os.path.join(DATA, "stories260K", "golden-greedy.jsonl")) as f:
        story = json.loads(f.readline())["ids"]
    ids_all = {"tiny": np.random.default_rng(1234).integers(0, 512, N_TOKENS),
               "stories": np.asarray(story[:N_TOKENS])}
    stems = {}
    for case in CASES:
        if only is None or only in case[0]:
            stem = check_case(results, cli, work, case, ids_all)
            if stem:
                stems[case[0]] = stem
    if mutations:
        run_mutations(results, cli, work, stems, ids_all, only)
    print(f"{results.passed} passed, {results.failed} failed")
    return 0 if results.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
