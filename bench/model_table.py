#!/usr/bin/env python3
"""The modelled benchmark table: hk's kernels timed by vgpu's timing model (docs/vgpu-timing.md) on each product,
next to the published figures of other libraries (../shared/reference/cdna.md, copied into PUBLISHED below with the
date they were gathered).

Run inside the toolchain root, after `./hk build`:
    tools/toolchain run python3 bench/model_table.py [--only gemm|skinny|formats|attn|memory|decode] [--products mi300x,mi355x] [--quick]
Writes bench/results/model_table.md, model_table.png and model_table.json (the raw predictions; cases already in it
are reused unless --fresh, so an interrupted run resumes). Every prediction is one `hk-run ... --model P` process in
the model's sample-only mode (only the sampled workgroups execute).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
BUILD = os.environ.get("HK_BUILD", os.path.join(REPO, "build"))
HK_RUN = os.path.join(BUILD, "tools", "hk-run")
RESULTS = os.path.join(HERE, "results")
PRODUCTS = ["mi300x", "mi325x", "mi350x", "mi355x"]

# Published figures (TFLOP/s, or ms for the memory-bound kernels), cdna.md as of 2026-12-01: MI355X from the
# HipKittens repository (Nov 2025), MI325X 8192^3 bf16 from the same, MI300X fp8 8192^3 hipBLASLt from Azure's
# benchmarking guide [AZ], MI300X/MI325X max-achievable FLOPs from AMD's ROCm blog [MAF] (hipBLASLt, 4096 x 4864 x
# 32896, not a cube: listed beside 8192^3 as the best a tuned library reaches).
PUBLISHED = {
    ("gemm", "bf16", 8192, "mi355x"): {"HipKittens": 1610, "AITER": 1591, "hipBLASLt": 1575, "PyTorch": 1521,
                                         "Triton": 1091, "CK": 504},
    ("gemm", "bf16", 4096, "mi355x"): {"HipKittens": 1413, "AITER": 1114, "hipBLASLt": 1433, "PyTorch": 1139,
                                         "Triton": 934, "CK": 931},
    ("gemm", "fp8", 8192, "mi355x"): {"HipKittens": 3327, "hipBLASLt": 3233},
    ("gemm", "bf16", 8192, "mi325x"): {"HipKittens": 749, "PyTorch": 785, "hipBLASLt MAF": 843},
    ("gemm", "fp8", 8192, "mi325x"): {"hipBLASLt MAF": 1519},
    ("gemm", "bf16", 8192, "mi300x"): {"hipBLASLt MAF": 708},
    ("gemm", "fp8", 8192, "mi300x"): {"hipBLASLt": 1159, "hipBLASLt MAF": 1273},
}
# HipKittens' bf16 GEMM on the same model (TFLOP/s): analysis/bf16_gemm/mi350x/kernel_4096.cpp and kernel_8192.cpp at
# f09e9685, compiled and run as ATTN_HIPKITTENS_ON_MODEL below (2026-12-06). Its MI325X kernel at that commit no
# longer compiles against its own headers; the issue tracker's earlier run gave 726 at 8192^3.
# f16: HipKittens has no f16-in, fp32-accumulate GEMM (its mma_ABt static_assert admits half only with a half
# accumulator); the same kernel files with bf16 -> half, compiled after widening that one assert (its mfma161632 for
# half_2 -> float2 exists), run on the model at f16's clock as hk's f16 row is (2026-12-06).
GEMM_HIPKITTENS_ON_MODEL = {("bf16", 4096, "mi355x"): 1591.9, ("bf16", 8192, "mi355x"): 1608.9,
                            ("f16", 4096, "mi355x"): 1490.9, ("f16", 8192, "mi355x"): 1506.1}
# Attention forward on MI355X, TFLOP/s (HipKittens / AITER and others), keyed by (variant, D, N).
ATTN_PUBLISHED = {
    ("gqa", 128, 8192): {"HipKittens": 1298, "AITER": 1281, "PyTorch": 841, "Triton": 994, "CK": 896},
    ("gqa_causal", 128, 8192): {"HipKittens": 1216, "AITER": 1205, "PyTorch": 705, "Triton": 594, "CK": 866},
    ("gqa", 64, 4096): {"HipKittens": 934, "AITER": 782, "PyTorch": 681, "Triton": 858, "CK": 795},
    ("mha", 128, 1024): {"HipKittens": 953, "AITER": 828},
    ("mha_causal", 128, 1024): {"HipKittens": 634, "AITER": 555},
    ("gqa", 128, 1024): {"HipKittens": 1000, "AITER": 1032},
    ("gqa_causal", 128, 1024): {"HipKittens": 718, "AITER": 715},
    ("mha", 128, 4096): {"HipKittens": 1228, "AITER": 1211},
    ("mha_causal", 128, 4096): {"HipKittens": 1048, "AITER": 1069},
    ("gqa", 128, 4096): {"HipKittens": 1262, "AITER": 1231},
    ("gqa_causal", 128, 4096): {"HipKittens": 1085, "AITER": 1101},
    ("mha", 64, 1024): {"HipKittens": 739, "AITER": 483},
    ("gqa", 64, 1024): {"HipKittens": 770, "AITER": 679},
    ("mha", 64, 4096): {"HipKittens": 941, "AITER": 720},
    ("gqa_causal", 64, 4096): {"HipKittens": 821, "AITER": 392},
}
# HipKittens' forward kernels on the same model (MI355X, TFLOP/s counted as ATTN_PUBLISHED): HazyResearch/HipKittens
# f09e9685, kernels/attn/gqa and gqa_causal (kernel.cpp for D128, kernel_d64.cpp for D64), compiled outside this
# repository by the toolchain's clang-21 as their Makefiles (-O3 -ffast-math, gfx950) with ATTN_B/H/H_KV/N/D set per
# row and a small host harness, run with HK_VGPU_TIMING=mi355x HK_VGPU_TIMING_SAMPLE_ONLY=1 (2026-12-06). Their code
# never enters this repository; the figures carry over.
ATTN_HIPKITTENS_ON_MODEL = {
    ("gqa", 128, 8192): 1267.8, ("gqa_causal", 128, 8192): 1283.1, ("gqa", 64, 4096): 808.7,
    ("mha", 128, 1024): 1102.0, ("mha_causal", 128, 1024): 745.1, ("gqa", 128, 1024): 1116.0,
    ("gqa_causal", 128, 1024): 780.7, ("mha", 128, 4096): 1244.9, ("mha_causal", 128, 4096): 1148.3,
    ("gqa", 128, 4096): 1246.1, ("gqa_causal", 128, 4096): 1171.6, ("mha", 64, 1024): 733.8,
    ("gqa", 64, 1024): 742.7, ("mha", 64, 4096): 808.0, ("gqa_causal", 64, 4096): 757.6,
}
# Attention backward on MI355X, TFLOP/s counted as 2.5x the forward's FLOPs (cdna.md), keyed by (variant, D, N);
# hk's figure is the total over its launches (delta, dK/dV, dQ).
ATTN_BWD_PUBLISHED = {
    ("gqa", 128, 8192): {"HipKittens": 1156, "AITER": 384},
    ("gqa_causal", 128, 8192): {"HipKittens": 933, "AITER": 272},
    ("gqa", 64, 4096): {},
}
# HipKittens' backward on the same model (MI355X, the sum of its three launches: prep 0.698 ms, the combined dK/dV/dQ
# kernel, dQ shuffle 0.693 ms; its dQ goes out through bf16 atomics): kernels/attn/gqa_backwards and
# gqa_causal_backwards at f09e9685, compiled and run as ATTN_HIPKITTENS_ON_MODEL (bwd kernel 65.106 ms, causal 29.900).
ATTN_BWD_HIPKITTENS_ON_MODEL = {("gqa", 128, 8192): 1322.8, ("gqa_causal", 128, 8192): 1405.7}
# The attention's features (issue 32: each loses at most 10% against the plain kernel of the same shape), forward and
# backward at GQA H64 Hkv8 D128 N8192 B16, each with its hk-run flags.
ATTN_FEATURES = {
    "plain": [],
    "softcap 30": ["--softcap", "30"],
    "ALiBi": ["--alibi"],
    "sinks": ["--sinks"],
    "dropout 0.1": ["--dropout", "0.1"],
    # Two or three together (the kernels' instance of several features)
    "softcap 30 + ALiBi": ["--softcap", "30", "--alibi"],
    "ALiBi + dropout 0.1": ["--alibi", "--dropout", "0.1"],
    "softcap 30 + dropout 0.1": ["--softcap", "30", "--dropout", "0.1"],
    "softcap 30 + ALiBi + dropout 0.1": ["--softcap", "30", "--alibi", "--dropout", "0.1"],
}
ATTN_FEATURE_PRODUCTS = ("mi300x", "mi355x")
# The features at Gemma's head dim 256 (the wide kernels' one featured instance, which also runs them together),
# against the plain D256 row of ATTN_HEAD_DIMS.
ATTN_WIDE_FEATURES = {
    "softcap 30": ["--softcap", "30"],
    "ALiBi": ["--alibi"],
    "dropout 0.1": ["--dropout", "0.1"],
    "softcap 30 + ALiBi + dropout 0.1": ["--softcap", "30", "--alibi", "--dropout", "0.1"],
}
# Head dims beyond 128 (Gemma's 256, DeepSeek-V3's 192 for Q/K with 128 for V), same shape otherwise.
ATTN_HEAD_DIMS = {
    "128": ["--d", "128"],
    "192": ["--d", "192"],
    "256": ["--d", "256"],
    "192 / 128": ["--d", "192", "--dv", "128"],
}
# Memory-bound kernels on MI355X, ms.
MEMORY_PUBLISHED = {
    ("rotary", 2048): {"HipKittens": 0.072, "AITER": 0.072},
    ("rotary", 16384): {"HipKittens": 0.629, "AITER": 0.903, "torch.compile": 0.907},
    ("norm", 16384): {"HipKittens": 1.104, "torch.compile": 1.579},
}

# HipKittens' kernels on the same model (MI355X, ms): analysis/rotary/mi350x/kernel_2048.cpp, kernel_16384.cpp and
# analysis/layernorm/mi350x/kernel_16384.cpp at f09e9685 (dropout + residual + LayerNorm, B16 x 16384 rows of 2048),
# compiled and run as ATTN_HIPKITTENS_ON_MODEL (2026-12-06).
MEMORY_HIPKITTENS_ON_MODEL = {("rotary", 2048): 0.0725, ("rotary", 16384): 0.5582, ("norm", 16384): 2.0082}

# The GEMM formats (hk::gemm_mx on gfx950's products, hk::gemm_int8, hk::gemm_blockwise), A*B^T cubes, and the MoE
# GEMM (hk::grouped_gemm, bf16): 8 of 64 experts active with 1024 tokens each, N = K = 4096, weights N x K.
# Published: cdna.md's "newer published figures" (HipKittens' repository: MXFP8 "2900+", FP6 8192^3 2861.5, INT8 4096^3
# 2187 / 8192^3 2696 TOPS, blockwise FP8 (fp32 scales) MI355X 1859, MI300X 963).
FORMATS = ("mxfp8", "mxfp6", "mxfp4", "int8", "fp8_block")
MX_PRODUCTS = ("mi350x", "mi355x")  # the MX formats need gfx950's scaled MFMA
MOE_GROUPS = ",".join(["1024"] * 8 + ["0"] * 56)
FORMAT_PUBLISHED = {
    ("mxfp8", 8192, "mi355x"): {"HipKittens": 2900},
    ("mxfp6", 8192, "mi355x"): {"HipKittens": 2861},
    ("int8", 4096, "mi355x"): {"HipKittens": 2187},
    ("int8", 8192, "mi355x"): {"HipKittens": 2696},
    ("fp8_block", 8192, "mi355x"): {"HipKittens": 1859},
    ("fp8_block", 8192, "mi300x"): {"HipKittens": 963},
}

MODEL_LINE = re.compile(r"^  model (\S+) (\S+): ([0-9.]+) ms(?:, ([0-9.]+) TFLOP/s)?(?:, ([0-9.]+) GB/s)?")
# hk-run decode's line: the bytes a decode step must move over the modelled time, and its share of sustained HBM.
DECODE_LINE = re.compile(r"^  decode: .* = ([0-9.]+) TB/s = ([0-9.]+)% of \S+'s sustained ([0-9.]+) TB/s HBM")
SKINNY_M = (1, 16, 64, 256)  # rows of A of the skinny GEMMs (tokens in flight at decode)
ROOFLINE_LINE = re.compile(r"^  HBM roofline: .* runs at ([0-9.]+)% of it")
TOTAL_LINE = re.compile(r"^  model (\S+) (total) of \d+ launches: ([0-9.]+) ms, ([0-9.]+) TFLOP/s(?:, ([0-9.]+) GB/s)?")


# Decode attention (hk::attention_decode) rows: bf16 cache pages of 64, Hq 64 Hkv 8 D 128, Sq 1. B x context up to
# 2^21 keys: the model's run commits the cache pages its sampled workgroups touch, and past that (B64 x 131072: 17 GB
# per cache) it outgrows this machine's 23 GB; B64 and B256 take 32768 in place of 131072.
DECODE_BATCHES = (1, 16, 64, 256)
DECODE_CONTEXTS = (1024, 8192, 32768, 131072)
DECODE_MAX_KEYS = 1 << 21


def decode_cases():
    return [(b, ctx) for b in DECODE_BATCHES for ctx in DECODE_CONTEXTS
            if b * ctx <= DECODE_MAX_KEYS and (ctx != 32768 or b * 131072 > DECODE_MAX_KEYS)]


def overall(launches):
    """A prediction's figure: the total over its launches where it has several (a GEMM whose last round runs as half
    tiles, the attention backward), else its one launch."""
    return next((l for l in launches if l["kernel"] == "total"), launches[0])


def run_case(args, timeout=300):
    """One hk-run --model process: its modelled launches (product, kernel, ms, TFLOP/s, GB/s) and wall seconds."""
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(BUILD, "vgpu", "hip"))
    start = time.time()
    proc = subprocess.run([HK_RUN] + args, capture_output=True, text=True, env=env, timeout=timeout)
    wall = time.time() - start
    if proc.returncode != 0:
        raise RuntimeError(f"hk-run {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    launches = []
    section = ""
    roofline = None
    for line in proc.stdout.splitlines():
        if not line.startswith(" "):
            section = line
        r = ROOFLINE_LINE.match(line)
        if r:
            roofline = float(r.group(1))
        m = MODEL_LINE.match(line) or TOTAL_LINE.match(line)
        if m:
            launches.append({"section": section, "kernel": m.group(2), "ms": float(m.group(3)),
                             "tflops": float(m.group(4)) if m.group(4) else None,
                             "gbs": float(m.group(5)) if m.group(5) else None})
    out = {"launches": launches, "roofline": roofline, "wall_s": round(wall, 1), "stdout": proc.stdout}
    for line in proc.stdout.splitlines():
        m = DECODE_LINE.match(line)
        if m:
            out["decode"] = {"tbs": float(m.group(1)), "pct_sustained": float(m.group(2)), "sustained_tbs": float(m.group(3))}
    return out


def cases(only, products, quick):
    sizes = [1024, 2048, 4096] if quick else [1024, 2048, 4096, 8192]
    out = []
    if only in (None, "gemm"):
        for product in products:
            for dtype in ("bf16", "f16", "fp8"):
                for n in sizes if dtype != "f16" else [n for n in sizes if n >= 4096]:
                    out.append((("gemm", dtype, n, product),
                                ["gemm", "--m", str(n), "--n", str(n), "--k", str(n), "--bt", "--dtype", dtype,
                                 "--model", product]))
    if only in (None, "gemm", "skinny"):
        for product in products:
            for dtype in ("bf16", "fp8"):
                for m in SKINNY_M:
                    out.append((("skinny", dtype, m, product),
                                ["gemm", "--m", str(m), "--n", "8192", "--k", "8192", "--bt", "--dtype", dtype,
                                 "--model", product]))
    if only in (None, "formats"):
        for product in products:
            for fmt in FORMATS:
                if fmt.startswith("mx") and product not in MX_PRODUCTS:
                    continue
                for n in (4096, 8192):
                    out.append((("format", fmt, n, product),
                                ["gemm", "--m", str(n), "--n", str(n), "--k", str(n), "--bt", "--dtype", fmt,
                                 "--model", product]))
            out.append((("moe", "bf16", product),
                        ["grouped-gemm", "--groups", MOE_GROUPS, "--n", "4096", "--k", "4096", "--bt", "--model",
                         product]))
    if only in (None, "attn"):
        for (variant, d, n) in ATTN_PUBLISHED:
            if quick and n > 4096:
                continue
            heads = ["--hq", "64", "--hkv", "8"] if variant.startswith("gqa") else ["--hq", "16", "--hkv", "16"]
            causal = ["--causal"] if variant.endswith("causal") else []
            for product in products:
                out.append((("attn", variant, d, n, product),
                            ["attn", "--b", "16", "--sq", str(n), "--sk", str(n), "--d", str(d)] + heads + causal +
                            ["--model", product]))
        for (variant, d, n) in ATTN_BWD_PUBLISHED:
            if quick and n > 4096:
                continue
            causal = ["--causal"] if variant.endswith("causal") else []
            for product in products:
                out.append((("attn_bwd", variant, d, n, product),
                            ["attn", "--b", "16", "--sq", str(n), "--sk", str(n), "--d", str(d), "--hq", "64", "--hkv",
                             "8", "--bwd"] + causal + ["--model", product]))
        # The features at D128 and the head dims, forward and backward at GQA N8192 B16.
        rows = [("attn_feature", name, ["--d", "128"] + flags) for name, flags in ATTN_FEATURES.items()]
        rows += [("attn_heads", name, flags) for name, flags in ATTN_HEAD_DIMS.items()]
        rows += [("attn_wide_feature", name, ["--d", "256"] + flags) for name, flags in ATTN_WIDE_FEATURES.items()]
        for kind, name, flags in [] if quick else rows:
            for product in products:
                if product in ATTN_FEATURE_PRODUCTS:
                    out.append(((kind, name, product),
                                ["attn", "--b", "16", "--sq", "8192", "--sk", "8192", "--hq", "64", "--hkv", "8",
                                 "--bwd"] + flags + ["--model", product]))
        for product in [] if quick else products:  # the FP8 forward (forward only: no --bwd)
            if product in ATTN_FEATURE_PRODUCTS:
                out.append((("attn_fp8", product),
                            ["attn", "--b", "16", "--sq", "8192", "--sk", "8192", "--hq", "64", "--hkv", "8", "--d",
                             "128", "--dtype", "fp8", "--model", product]))
    if only in (None, "decode"):
        for product in products:
            for b, ctx in decode_cases():
                out.append((("decode", b, ctx, product),
                            ["decode", "--b", str(b), "--ctx", str(ctx), "--hq", "64", "--hkv", "8", "--d", "128",
                             "--page", "64", "--model", product]))
    if only in (None, "memory"):
        for product in products:
            for n in (2048, 16384):
                out.append((("rotary", n, product),
                            ["rotary", "--b", "16", "--s", str(n), "--h", "16", "--d", "128", "--q-only", "--model",
                             product]))
            out.append((("norm", 16384, product),
                        ["norm", "--rows", str(16 * 16384), "--cols", "2048", "--p", "0.1", "--model", product]))
    return out


def pct(model, published):
    return f"{100 * (model / published - 1):+.0f}%"


def feature_cell(launches, plain):
    """A feature's forward / forward+backward TFLOP/s, each with its change against the plain kernel's when given."""
    if not launches:
        return ""
    fwd, bwd = launches[0]["tflops"], overall(launches)["tflops"]
    if not plain:
        return f"{fwd:.0f} / {bwd:.0f}"
    return f"{fwd:.0f} ({pct(fwd, plain[0]['tflops'])}) / {bwd:.0f} ({pct(bwd, overall(plain)['tflops'])})"


def peer_cell(peer, ours, text):
    """A peer's figure on the model (`text` formats it) and hk's Δ against it; empty where the peer was not measured."""
    return f"{text(peer)} ({pct(ours, peer) if ours is not None else '?'})" if peer else ""


def write_markdown(results, products, path):
    names = {p: p.upper() for p in products}
    lines = ["# hk's kernels modelled by vgpu's timing model, next to published figures", "",
             "Generated by `bench/model_table.py` (docs/vgpu-timing.md says what the model does). Modelled figures are "
             "predictions for hk's kernels, which have never run on these GPUs; published figures are measurements of "
             "other libraries (cdna.md). Δ = modelled / published - 1.", ""]

    def get(key):
        r = results.get(json.dumps(key))
        return r["launches"] if r else None

    lines += ["## GEMM, A*B^T, fp32 out, TFLOP/s (% of the data-sheet dense peak)", "",
              "| size | dtype | " + " | ".join(names[p] for p in products) + " | published (Δ of the model) |",
              "|---|---|" + "---|" * len(products) + "---|"]
    for dtype in ("bf16", "f16", "fp8"):
        for n in (1024, 2048, 4096, 8192):
            cells, pubs = [], []
            for p in products:
                launches = get(("gemm", dtype, n, p))
                cells.append(f"{overall(launches)['tflops']:.0f}" if launches else "")
                if (dtype, n, p) in GEMM_HIPKITTENS_ON_MODEL:
                    fig = GEMM_HIPKITTENS_ON_MODEL[(dtype, n, p)]
                    delta = pct(overall(launches)["tflops"], fig) if launches else "?"
                    pubs.append(f"{names[p]} HipKittens on the model {fig:.0f} ({delta})")
                for lib, fig in PUBLISHED.get(("gemm", dtype, n, p), {}).items():
                    delta = pct(overall(launches)["tflops"], fig) if launches else "?"
                    pubs.append(f"{names[p]} {lib} {fig} ({delta})")
            if any(cells):
                lines.append(f"| {n}^3 | {dtype} | " + " | ".join(cells) + " | " + "; ".join(pubs) + " |")
    lines += ["", "## Skinny GEMM (decode), A*B^T, N = K = 8192, fp32 out: ms (% of the HBM roofline: the bytes of A, B "
              "and C at the product's sustained HBM bandwidth; hk: the total over its launches)", "",
              "| M | dtype | " + " | ".join(names[p] for p in products) + " |",
              "|---|---|" + "---|" * len(products)]
    for dtype in ("bf16", "fp8"):
        for m in SKINNY_M:
            cells = []
            for p in products:
                r = results.get(json.dumps(("skinny", dtype, m, p)))
                cells.append(f"{overall(r['launches'])['ms']:.4f} ({r['roofline']:.0f}%)" if r and r.get("roofline") else "")
            if any(cells):
                lines.append(f"| {m} | {dtype} | " + " | ".join(cells) + " |")
    lines += ["", "## GEMM formats, A*B^T, TFLOP/s (int8: TOPS; hk: the total over its launches); MoE: 8 of 64 experts x "
              "1024 tokens, N = K = 4096, bf16", "",
              "| format | size | " + " | ".join(names[p] for p in products) + " | published (Δ of the model) |",
              "|---|---|" + "---|" * len(products) + "---|"]
    for fmt in FORMATS:
        for n in (4096, 8192):
            cells, pubs = [], []
            for p in products:
                launches = get(("format", fmt, n, p))
                cells.append(f"{overall(launches)['tflops']:.0f}" if launches else "")
                for lib, fig in FORMAT_PUBLISHED.get((fmt, n, p), {}).items():
                    delta = pct(overall(launches)["tflops"], fig) if launches else "?"
                    pubs.append(f"{names[p]} {lib} {fig} ({delta})")
            if any(cells):
                lines.append(f"| {fmt} | {n}^3 | " + " | ".join(cells) + " | " + "; ".join(pubs) + " |")
    cells = [f"{overall(get(('moe', 'bf16', p)))['tflops']:.0f}" if get(("moe", "bf16", p)) else "" for p in products]
    if any(cells):
        lines.append("| MoE bf16 | 8 x 1024 x 4096 x 4096 | " + " | ".join(cells) + " |  |")
    lines += ["", "## Attention forward, bf16, B16 (MHA H16; GQA H64 Hkv8), TFLOP/s (4·B·N²·H·D, causal: visible "
              "pairs)", "",
              "| variant | D | N | " + " | ".join(names[p] for p in products) +
              " | HipKittens on the model, MI355X (Δ of hk) | published MI355X (Δ of the model) |",
              "|---|---|---|" + "---|" * len(products) + "---|---|"]
    for (variant, d, n), pub in ATTN_PUBLISHED.items():
        cells = []
        for p in products:
            launches = get(("attn", variant, d, n, p))
            cells.append(f"{launches[0]['tflops']:.0f}" if launches else "")
        mi355 = get(("attn", variant, d, n, "mi355x"))
        pubs = "; ".join(f"{lib} {fig} ({pct(mi355[0]['tflops'], fig) if mi355 else '?'})" for lib, fig in pub.items())
        peer = peer_cell(ATTN_HIPKITTENS_ON_MODEL.get((variant, d, n)), mi355[0]["tflops"] if mi355 else None,
                         lambda x: f"{x:.0f}")
        if any(cells):
            lines.append(f"| {variant} | {d} | {n} | " + " | ".join(cells) + f" | {peer} | {pubs} |")
    lines += ["", "## Attention backward, bf16, B16 GQA H64 Hkv8, TFLOP/s (2.5x the forward's count; hk: the total over "
              "its launches)", "",
              "| variant | D | N | " + " | ".join(names[p] for p in products) +
              " | HipKittens on the model, MI355X (Δ of hk) | published MI355X (Δ of the model) |",
              "|---|---|---|" + "---|" * len(products) + "---|---|"]
    for (variant, d, n), pub in ATTN_BWD_PUBLISHED.items():
        totals = {p: [l for l in (get(("attn_bwd", variant, d, n, p)) or []) if l["kernel"] == "total"] for p in products}
        cells = [f"{totals[p][0]['tflops']:.0f}" if totals[p] else "" for p in products]
        mi355 = totals.get("mi355x")
        pubs = "; ".join(f"{lib} {fig} ({pct(mi355[0]['tflops'], fig) if mi355 else '?'})" for lib, fig in pub.items())
        peer = peer_cell(ATTN_BWD_HIPKITTENS_ON_MODEL.get((variant, d, n)), mi355[0]["tflops"] if mi355 else None,
                         lambda x: f"{x:.0f}")
        if any(cells):
            lines.append(f"| {variant} | {d} | {n} | " + " | ".join(cells) + f" | {peer} | {pubs} |")
    feature_products = [p for p in products if p in ATTN_FEATURE_PRODUCTS]
    lines += ["", "## Attention features, bf16, B16 GQA H64 Hkv8 D128 N8192: forward / backward TFLOP/s (Δ against the "
              "plain kernel)", "",
              "| feature | " + " | ".join(names[p] for p in feature_products) + " |",
              "|---|" + "---|" * len(feature_products)]
    for feature in ATTN_FEATURES:
        cells = []
        for p in feature_products:
            plain = get(("attn_feature", "plain", p)) if feature != "plain" else None
            cells.append(feature_cell(get(("attn_feature", feature, p)), plain))
        if any(cells):
            lines.append(f"| {feature} | " + " | ".join(cells) + " |")
    cells = []
    for p in feature_products:
        launches, plain = get(("attn_fp8", p)), get(("attn_feature", "plain", p))
        if launches:
            fp8 = overall(launches)["tflops"]
            cells.append(f"{fp8:.0f}" + (f" ({pct(fp8, plain[0]['tflops'])})" if plain else ""))
        else:
            cells.append("")
    if any(cells):
        lines += ["", "## Attention FP8 forward (e4m3 Q, K, V with (B, Hkv) descales, bf16 O; S on the fp8 MFMA, P V in "
                  "bf16), B16 GQA H64 Hkv8 D128 N8192: TFLOP/s over its two launches (Δ against the bf16 forward)", "",
                  "| " + " | ".join(names[p] for p in feature_products) + " |",
                  "|" + "---|" * len(feature_products), "| " + " | ".join(cells) + " |"]
    lines += ["", "## Attention head dims, bf16, B16 GQA H64 Hkv8 N8192: forward / backward TFLOP/s (Q/K head dim / V's)",
              "", "| head dim | " + " | ".join(names[p] for p in feature_products) + " |",
              "|---|" + "---|" * len(feature_products)]
    for heads in ATTN_HEAD_DIMS:
        cells = []
        for p in feature_products:
            launches = get(("attn_heads", heads, p))
            cells.append(f"{launches[0]['tflops']:.0f} / {overall(launches)['tflops']:.0f}" if launches else "")
        if any(cells):
            lines.append(f"| {heads} | " + " | ".join(cells) + " |")
    lines += ["", "## Attention features at head dim 256, bf16, B16 GQA H64 Hkv8 N8192: forward / backward TFLOP/s (Δ "
              "against the plain D256 kernel)", "", "| feature | " + " | ".join(names[p] for p in feature_products) + " |",
              "|---|" + "---|" * len(feature_products)]
    for feature in ATTN_WIDE_FEATURES:
        cells = []
        for p in feature_products:
            cells.append(feature_cell(get(("attn_wide_feature", feature, p)), get(("attn_heads", "256", p))))
        if any(cells):
            lines.append(f"| {feature} | " + " | ".join(cells) + " |")
    lines += ["", "## Memory-bound kernels, bf16, forward: ms (GB/s)", "",
              "rotary: Q alone, B16 S=N H16 D128 (read and written once); LayerNorm: dropout p=0.1 + residual, "
              "B16 x N rows of 2048 (x, residual in; y, r, statistics out; no mask: the backward regenerates it from Philox).", "",
              "| kernel | N | " + " | ".join(names[p] for p in products) +
              " | HipKittens on the model, MI355X (Δ of hk's time) | published MI355X (Δ of the model's time) |",
              "|---|---|" + "---|" * len(products) + "---|---|"]
    for (kind, n), pub in MEMORY_PUBLISHED.items():
        cells = []
        for p in products:
            launches = get((kind, n, p))
            if launches:
                cells.append(f"{launches[0]['ms']:.3f} ({launches[0]['gbs']:.0f})")
            else:
                cells.append("")
        mi355 = get((kind, n, "mi355x"))
        pubs = "; ".join(f"{lib} {fig} ms ({pct(mi355[0]['ms'], fig) if mi355 else '?'})" for lib, fig in pub.items())
        peer = peer_cell(MEMORY_HIPKITTENS_ON_MODEL.get((kind, n)), mi355[0]["ms"] if mi355 else None,
                         lambda x: f"{x} ms")
        if any(cells):
            lines.append(f"| {kind} | {n} | " + " | ".join(cells) + f" | {peer} | {pubs} |")
    lines += ["", "## Decode attention (flash_attn_with_kvcache), bf16 paged cache (pages of 64), Hq 64 Hkv 8 D 128, Sq 1: "
              "TB/s (% of the product's sustained HBM bandwidth)", "",
              "Bytes: every cached key's K and V row once, Q, O and the LSE; time: the model's total over the launches "
              "(decode and, when the keys are split, the combine).", "",
              "| B | context | " + " | ".join(names[p] for p in products) + " |",
              "|---|---|" + "---|" * len(products)]
    for b, ctx in decode_cases():
        cells = []
        for p in products:
            r = results.get(json.dumps(("decode", b, ctx, p)))
            d = r.get("decode") if r else None
            cells.append(f"{d['tbs']:.2f} ({d['pct_sustained']:.0f}%)" if d else "")
        if any(cells):
            lines.append(f"| {b} | {ctx} | " + " | ".join(cells) + " |")
    walls = [r["wall_s"] for r in results.values()]
    lines += ["", f"{len(walls)} predictions; wall time per prediction on this machine (2 shared cores): "
              f"{min(walls):.0f}-{max(walls):.0f} s." if walls else ""]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def write_plot(results, products, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(13, 5))
    sizes = [1024, 2048, 4096, 8192]
    for ax, dtype in zip(axes, ("bf16", "fp8")):
        for p in products:
            xs, ys = [], []
            for n in sizes:
                r = results.get(json.dumps(("gemm", dtype, n, p)))
                if r:
                    xs.append(n), ys.append(overall(r["launches"])["tflops"])
            if xs:
                ax.plot(xs, ys, marker="o", label=f"hk, modelled {p.upper()}")
        markers = iter("sv^DPX*<>")
        for (kind, dt, n, p), pub in PUBLISHED.items():
            if dt != dtype:
                continue
            for lib, fig_value in pub.items():
                ax.scatter([n], [fig_value], marker=next(markers, "x"), label=f"{lib} {p.upper()} (published)")
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes, [f"{n}^3" for n in sizes])
        ax.set_ylabel("TFLOP/s")
        ax.set_title(f"GEMM {dtype} A*B^T")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=["gemm", "skinny", "formats", "attn", "memory", "decode"])
    parser.add_argument("--products", default=",".join(PRODUCTS))
    parser.add_argument("--quick", action="store_true", help="skip the largest sizes")
    parser.add_argument("--fresh", action="store_true", help="ignore predictions already in model_table.json")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per prediction before it counts as failed")
    args = parser.parse_args()
    products = args.products.split(",")
    os.makedirs(RESULTS, exist_ok=True)
    store = os.path.join(RESULTS, "model_table.json")
    results = {}
    if os.path.exists(store) and not args.fresh:
        with open(store) as f:
            results = json.load(f)
    failed = 0
    for key, argv in cases(args.only, products, args.quick):
        k = json.dumps(key)
        if k in results:
            continue
        try:
            r = run_case(argv, args.timeout)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            print(f"{key}: {e}", file=sys.stderr)
            failed += 1
            continue
        del r["stdout"]
        results[k] = r
        first = r["launches"][0] if r["launches"] else {}
        print(f"{key}: {first.get('ms')} ms, {first.get('tflops')} TFLOP/s, {first.get('gbs')} GB/s "
              f"({r['wall_s']} s)", flush=True)
        with open(store, "w") as f:
            json.dump(results, f, indent=1)
    all_products = [p for p in PRODUCTS if any(json.loads(k)[-1] == p for k in results)]
    write_markdown(results, all_products, os.path.join(RESULTS, "model_table.md"))
    write_plot(results, all_products, os.path.join(RESULTS, "model_table.png"))
    print(f"wrote {RESULTS}/model_table.md and model_table.png ({len(results)} predictions, {failed} failed)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
