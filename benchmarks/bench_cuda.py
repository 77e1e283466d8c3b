"""Assignment 6's Triton kernels on a GPU against PyTorch (cuBLAS, torch eager, SDPA).

    python benchmarks/bench_cuda.py [--quick] [--kernels matmul,softmax,...] [--out DIR]
    python benchmarks/bench_cuda.py --dry-run --out DIR     # on a CPU: the plumbing only

Needs a CUDA GPU, torch with CUDA and triton (the reference kernels in
reference/tinytrain/cuda are launched directly on torch CUDA tensors; the GPT step runs
tinytrain's own cuda device). Every benchmark first checks the kernel's result against
torch on its inputs, then times both with triton.testing.do_bench (median), and reports
the time, TFLOP/s or GB/s, the ratio to torch (torch's time / the kernel's: above 1 is
faster), the fraction of the GPU's peak (for the GPUs in PEAKS) and the course's target.
With ``--out`` it writes ``bench_cuda.json`` and ``bench_cuda.md`` there.

``--dry-run`` runs every benchmark at toy sizes on the CPU under Triton's interpreter
(torch CPU tensors as the kernels' buffers, torch CPU as the oracle), checks every
result the same way and writes the same files, flagged ``dry_run``: it proves the script
works before a GPU is spent on it; its times are the interpreter's and mean nothing.
Where no GPU exists and ``--dry-run`` is not given it says so and measures nothing.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# dense float16/bfloat16 tensor-core TFLOP/s and memory TB/s, from the vendor's data sheets
PEAKS = {"H200": (989.5, 4.8), "H100": (989.5, 3.35), "A100": (312.0, 2.0)}


@dataclass
class Result:
    name: str
    ours_ms: float
    torch_ms: float
    work: float  # FLOPs or bytes
    unit: str  # "TFLOP/s" or "GB/s"
    target: float | None  # minimum ratio torch_ms / ours_ms
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    dry_run: bool = False  # timed under the interpreter: no verdict

    @property
    def ratio(self) -> float:
        return self.torch_ms / self.ours_ms

    def rate(self) -> float | None:
        if not self.work:
            return None
        rate = self.work / (self.ours_ms * 1e-3)
        return rate / 1e12 if self.unit == "TFLOP/s" else rate / 1e9

    def peak_fraction(self, peak: tuple[float, float] | None) -> float | None:
        rate = self.rate()
        if peak is None or rate is None:
            return None
        return rate / (peak[0] if self.unit == "TFLOP/s" else peak[1] * 1e3)

    def verdict(self) -> str:
        if self.dry_run:
            return "n/a"
        return "" if self.target is None else ("ok" if self.ratio >= self.target else "BELOW")

    def as_dict(self, peak: tuple[float, float] | None) -> dict[str, Any]:
        out = asdict(self)
        out.update(ratio=self.ratio, rate=self.rate(), peak_fraction=self.peak_fraction(peak),
                   verdict=self.verdict())
        return out

    def row(self, peak: tuple[float, float] | None) -> str:
        rate, frac = self.rate(), self.peak_fraction(peak)
        target = "" if self.target is None else f">= {self.target:g}x"
        rate_s = "-" if rate is None else f"{rate:.1f}"
        unit = "" if rate is None else self.unit
        frac_s = "" if frac is None else f"{frac:6.1%}"
        return (f"{self.name:52s} {self.ours_ms:9.3f} {self.torch_ms:9.3f} {rate_s:>9s} "
                f"{unit:8s} {self.ratio:6.2f}x {frac_s:>7s} {target:>8s} {self.verdict():5s} "
                f"{self.note}")


class Env:
    """Where the benchmarks run: the GPU (``cuda``, do_bench), or the CPU under Triton's
    interpreter for ``--dry-run`` (toy sizes, one timed call: plumbing only)."""

    def __init__(self, dry_run: bool, quick: bool) -> None:
        self.dry_run, self.quick = dry_run, quick
        self.device = "cpu" if dry_run else "cuda"

    def pick(self, full: Any, quick: Any, dry: Any) -> Any:
        return dry if self.dry_run else (quick if self.quick else full)

    def sync(self) -> None:
        if not self.dry_run:
            import torch

            torch.cuda.synchronize()

    def bench(self, fn: Callable[[], object]) -> float:
        if self.dry_run:
            fn()
            start = time.perf_counter()
            fn()
            return (time.perf_counter() - start) * 1e3
        from triton.testing import do_bench

        return float(do_bench(fn, warmup=25, rep=100, return_mode="median"))

    def timed(self, fn: Callable[[], None], n: int, warm_up: bool = True) -> float:
        """Wall time per call of ``fn`` (synchronised), after one warm-up call unless
        ``fn`` ran already."""
        if warm_up:
            fn()
        self.sync()
        start = time.perf_counter()
        for _ in range(n):
            fn()
        self.sync()
        return (time.perf_counter() - start) / n * 1e3


def check(name: str, got: object, expected: object, rtol: float, atol: float) -> None:
    import torch

    torch.testing.assert_close(got, expected, rtol=rtol, atol=atol, check_dtype=False,
                               msg=lambda m: f"{name}: the kernel disagrees with torch: {m}")


def strides(t: object) -> tuple[int, ...]:
    return tuple(t.stride())


def _half(env: Env) -> Any:
    """float16 on the GPU; float32 in a dry run (torch's CPU kernels for half are partial)."""
    import torch

    return torch.float32 if env.dry_run else torch.float16


# ----- the benchmarks ----------------------------------------------------------------------
MATMUL_CONFIGS = ((128, 256, 64, 8, 3), (128, 128, 64, 4, 4), (256, 128, 64, 8, 3),
                  (128, 128, 32, 4, 4))  # BLOCK_M, BLOCK_N, BLOCK_K, warps, stages
DRY_MATMUL_CONFIGS = ((32, 32, 16, 4, 1),)


def _matmul_launcher(a: object, b: object, c: object, n: int,
                     config: tuple[int, ...]) -> Callable[[], None]:
    from tinytrain.cuda.matmul import matmul_kernel

    bm, bn, bk, warps, stages = config
    grid = (math.ceil(n / bm) * math.ceil(n / bn),)

    def run() -> None:
        matmul_kernel[grid](a, b, c, n, n, n, *strides(a), *strides(b), *strides(c),
                            BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=warps,
                            num_stages=stages)

    return run


def _matmul_one(env: Env, n: int, dtype: object) -> Result | None:
    import torch

    a = torch.randn(n, n, device=env.device, dtype=dtype)
    b = torch.randn(n, n, device=env.device, dtype=dtype)
    c = torch.empty(n, n, device=env.device, dtype=dtype)
    expected = a.float() @ b.float()
    best = None
    for config in env.pick(MATMUL_CONFIGS, MATMUL_CONFIGS, DRY_MATMUL_CONFIGS):
        run = _matmul_launcher(a, b, c, n, config)  # a small manual sweep (no autotune)
        try:
            c.zero_()
            run()
            check(f"matmul {dtype} tiles {config}", c.float(), expected, 2e-2, 1e-1)
            ms = env.bench(run)
        except Exception as exc:  # noqa: BLE001 - a config this GPU cannot run
            print(f"  matmul config {config} failed: {type(exc).__name__}: {exc}")
            continue
        if best is None or ms < best[0]:
            best = (ms, config)
    if best is None:
        return None
    return Result(f"matmul {n}^3 {str(dtype)[6:]} (vs cuBLAS)", best[0],
                  env.bench(lambda: torch.matmul(a, b)), 2 * n**3, "TFLOP/s", 0.9,
                  f"tiles {best[1]}")


def matmul(env: Env) -> list[Result]:
    import torch

    n = env.pick(4096, 2048, 64)
    # Triton's interpreter cannot run bfloat16 (the dry run checks float16 only)
    dtypes = (torch.float16,) if env.dry_run else (torch.float16, torch.bfloat16)
    results = [_matmul_one(env, n, dtype) for dtype in dtypes]
    if any(r is None for r in results):
        raise RuntimeError("no matmul tile config ran for some dtype (see above)")
    return results


def elementwise(env: Env) -> list[Result]:
    import torch
    import torch.nn.functional as F  # noqa: N812
    from tinytrain.cuda.elementwise import add_kernel, bias_gelu_kernel

    half = _half(env)
    n = env.pick(1 << 28, 1 << 26, 4096)
    x = torch.randn(n, device=env.device, dtype=half)
    y = torch.randn(n, device=env.device, dtype=half)
    z = torch.empty_like(x)
    block = env.pick(4096, 4096, 1024)

    def run_add() -> None:
        add_kernel[(math.ceil(n / block),)](x, y, z, n, BLOCK_SIZE=block, num_warps=8)

    run_add()
    check("add", z, x + y, 1e-3, 1e-3)
    out = [Result(f"add {n} {str(half)[6:]}", env.bench(run_add), env.bench(lambda: x + y),
                  3 * n * x.element_size(), "GB/s", 0.95)]
    rows, cols = env.pick(32768, 8192, 32), 4096 if not env.dry_run else 256
    xm = torch.randn(rows, cols, device=env.device, dtype=half)
    bias = torch.randn(cols, device=env.device, dtype=half)
    ym = torch.empty_like(xm)

    def run_gelu() -> None:
        bias_gelu_kernel[(math.ceil(rows / 16), math.ceil(cols / 256))](
            xm, bias, ym, rows, cols, *strides(xm), *strides(ym), TANH=True, BLOCK_M=16,
            BLOCK_N=256, num_warps=8)

    run_gelu()
    check("bias_gelu", ym.float(), F.gelu(xm.float() + bias.float(), approximate="tanh"),
          2e-3, 2e-3)
    out.append(Result(f"bias+gelu {rows}x{cols} {str(half)[6:]} (vs eager x+b, gelu)",
                      env.bench(run_gelu),
                      env.bench(lambda: F.gelu(xm + bias, approximate="tanh")),
                      2 * rows * cols * xm.element_size(), "GB/s", None))
    return out


def _rows_cols(env: Env) -> tuple[int, int, int]:
    """rows, cols and the kernels' BLOCK_N (one block holds a row)."""
    return env.pick(32768, 8192, 16), env.pick(4096, 4096, 128), env.pick(4096, 4096, 128)


def softmax(env: Env) -> list[Result]:
    import torch
    from tinytrain.cuda.softmax import softmax_kernel

    rows, cols, block = _rows_cols(env)
    x = torch.randn(rows, cols, device=env.device, dtype=_half(env))
    y = torch.empty_like(x)

    def run() -> None:
        softmax_kernel[(rows,)](x, y, rows, cols, *strides(x), *strides(y), LOG=False,
                                BLOCK_N=block, num_warps=8)

    run()
    check("softmax", y.float(), torch.softmax(x.float(), -1), 1e-3, 1e-5)
    return [Result(f"softmax {rows}x{cols} {str(x.dtype)[6:]}", env.bench(run),
                   env.bench(lambda: torch.softmax(x, -1)), 2 * rows * cols * x.element_size(),
                   "GB/s", 2.0)]


def layernorm(env: Env) -> list[Result]:
    import torch
    import torch.nn.functional as F  # noqa: N812
    from tinytrain.cuda.layernorm import layer_norm_kernel

    rows, cols, block = _rows_cols(env)
    half = _half(env)
    x = torch.randn(rows, cols, device=env.device, dtype=half)
    w = torch.rand(cols, device=env.device, dtype=half) + 0.5
    b = torch.randn(cols, device=env.device, dtype=half)
    y = torch.empty_like(x)
    mean = torch.empty(rows, device=env.device, dtype=torch.float32)
    rstd = torch.empty_like(mean)

    def run() -> None:
        layer_norm_kernel[(rows,)](x, w, b, y, mean, rstd, rows, cols, x.stride(0), y.stride(0),
                                   1e-5, BLOCK_N=block, num_warps=8)

    run()
    check("layer_norm", y.float(), F.layer_norm(x.float(), (cols,), w.float(), b.float()),
          2e-3, 2e-3)
    return [Result(f"layer_norm {rows}x{cols} {str(half)[6:]}", env.bench(run),
                   env.bench(lambda: F.layer_norm(x, (cols,), w, b)),
                   2 * rows * cols * x.element_size(), "GB/s", 2.0)]


def cross_entropy(env: Env) -> list[Result]:
    import torch
    import torch.nn.functional as F  # noqa: N812
    from tinytrain.cuda.cross_entropy import cross_entropy_kernel

    rows, cols = env.pick(8192, 2048, 8), env.pick(50304, 50304, 300)
    block = env.pick(4096, 4096, 128)
    logits = torch.randn(rows, cols, device=env.device, dtype=_half(env))
    targets = torch.randint(0, cols, (rows,), device=env.device)
    loss = torch.empty(rows, device=env.device, dtype=torch.float32)
    dlogits = torch.empty_like(logits)

    def run() -> None:
        cross_entropy_kernel[(rows,)](logits, targets, loss, dlogits, rows, cols,
                                      *strides(logits), *strides(dlogits), -100, 1.0 / rows,
                                      BLOCK_N=block, num_warps=8)

    def eager() -> None:
        z = logits.detach().requires_grad_()
        F.cross_entropy(z.float(), targets).backward()

    run()
    z = logits.detach().float().requires_grad_()
    expected = F.cross_entropy(z, targets)
    expected.backward()
    check("cross_entropy loss", loss.mean(), expected.detach(), 1e-4, 1e-4)
    check("cross_entropy dlogits", dlogits.float(), z.grad, 1e-3, 1e-5)
    # fwd+bwd fused: reads the logits, writes their gradient
    return [Result(f"cross_entropy fwd+bwd {rows}x{cols} {str(logits.dtype)[6:]}",
                   env.bench(run), env.bench(eager), 2 * rows * cols * logits.element_size(),
                   "GB/s", 2.0)]


ATTN_FWD = (128, 64, 8, 3)  # BLOCK_M, BLOCK_N, warps, stages
ATTN_BWD_CONFIGS = ((64, 64, 4, 2), (32, 64, 4, 2), (32, 32, 4, 1))


def _attention_shape(env: Env) -> tuple[int, int, int, int]:
    return env.pick((4, 16, 4096, 64), (2, 16, 2048, 64), (1, 2, 64, 16))


def attention(env: Env) -> list[Result]:
    import torch
    import torch.nn.functional as F  # noqa: N812
    from tinytrain.cuda.attention import flash_attention_kernel

    out = []
    z, h, t, d = _attention_shape(env)
    bm, bn, warps, stages = env.pick(ATTN_FWD, ATTN_FWD, (16, 16, 4, 1))
    for causal in (False, True):
        q, k, v = (torch.randn(z, h, t, d, device=env.device, dtype=_half(env))
                   for _ in range(3))
        o = torch.empty_like(q)
        lse = torch.empty(z * h, t, device=env.device, dtype=torch.float32)

        def run(q: object = q, k: object = k, v: object = v, o: object = o, lse: object = lse,
                causal: bool = causal) -> None:
            flash_attention_kernel[(math.ceil(t / bm), z * h)](
                q, k, v, o, lse, *strides(q), h, t, 1 / math.sqrt(d), CAUSAL=causal,
                BLOCK_M=bm, BLOCK_N=bn, HEAD_DIM=d, num_warps=warps, num_stages=stages)

        run()
        check("flash attention", o.float(),
              F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal),
              2e-2, 2e-2)
        flops = 4 * z * h * t * t * d / (2 if causal else 1)
        out.append(Result(f"flash attention fwd {(z, h, t, d)} causal={causal}",
                          env.bench(run),
                          env.bench(lambda q=q, k=k, v=v, causal=causal:
                                    F.scaled_dot_product_attention(q, k, v, is_causal=causal)),
                          flops, "TFLOP/s", 0.8))
    return out


def attention_backward(env: Env) -> list[Result]:
    """The three backward kernels (preprocess, dK/dV, dQ) from the forward's o and lse,
    against SDPA's backward (autograd through scaled_dot_product_attention, forward
    excluded: torch's time is fwd+bwd minus fwd)."""
    import torch
    import torch.nn.functional as F  # noqa: N812
    from tinytrain.cuda.attention import (
        flash_attention_backward_dkdv_kernel,
        flash_attention_backward_dq_kernel,
        flash_attention_backward_preprocess_kernel,
        flash_attention_kernel,
    )

    z, h, t, d = _attention_shape(env)
    out = []
    for causal in (False, True):
        q, k, v, do = (torch.randn(z, h, t, d, device=env.device, dtype=_half(env))
                       for _ in range(4))
        scale = 1 / math.sqrt(d)
        o = torch.empty_like(q)
        lse = torch.empty(z * h, t, device=env.device, dtype=torch.float32)
        bm, bn, warps, stages = env.pick(ATTN_FWD, ATTN_FWD, (16, 16, 4, 1))
        flash_attention_kernel[(math.ceil(t / bm), z * h)](
            q, k, v, o, lse, *strides(q), h, t, scale, CAUSAL=causal, BLOCK_M=bm, BLOCK_N=bn,
            HEAD_DIM=d, num_warps=warps, num_stages=stages)
        qr, kr, vr = (x.detach().float().requires_grad_() for x in (q, k, v))
        F.scaled_dot_product_attention(qr, kr, vr, is_causal=causal).backward(do.float())
        delta = torch.empty(z * h, t, device=env.device, dtype=torch.float32)
        dq, dk, dv = torch.empty_like(q), torch.empty_like(q), torch.empty_like(q)
        best = None
        for config in env.pick(ATTN_BWD_CONFIGS, ATTN_BWD_CONFIGS, ((16, 16, 4, 1),)):
            cm, cn, cw, cs = config

            def run(cm: int = cm, cn: int = cn, cw: int = cw, cs: int = cs, q: object = q,
                    k: object = k, v: object = v, o: object = o, do: object = do,
                    lse: object = lse, causal: bool = causal, delta: object = delta,
                    dq: object = dq, dk: object = dk, dv: object = dv,
                    scale: float = scale) -> None:
                st = strides(q)
                flash_attention_backward_preprocess_kernel[(math.ceil(t / cm), z * h)](
                    o, do, delta, *st, h, t, BLOCK_M=cm, HEAD_DIM=d, num_warps=cw)
                flash_attention_backward_dkdv_kernel[(math.ceil(t / cn), z * h)](
                    q, k, v, do, lse, delta, dk, dv, *st, h, t, scale, CAUSAL=causal,
                    BLOCK_M=cm, BLOCK_N=cn, HEAD_DIM=d, num_warps=cw, num_stages=cs)
                flash_attention_backward_dq_kernel[(math.ceil(t / cm), z * h)](
                    q, k, v, do, lse, delta, dq, *st, h, t, scale, CAUSAL=causal,
                    BLOCK_M=cm, BLOCK_N=cn, HEAD_DIM=d, num_warps=cw, num_stages=cs)

            try:
                run()
                for name, got, ref in (("dq", dq, qr.grad), ("dk", dk, kr.grad),
                                       ("dv", dv, vr.grad)):
                    check(f"flash attention backward {name} tiles {config}", got.float(), ref,
                          3e-2, 3e-2)
                ms = env.bench(run)
            except Exception as exc:  # noqa: BLE001 - a config this GPU cannot run
                print(f"  attention backward config {config} failed: "
                      f"{type(exc).__name__}: {exc}")
                continue
            if best is None or ms < best[0]:
                best = (ms, config)
        if best is None:
            raise RuntimeError("no attention backward tile config ran (see above)")
        qt, kt, vt = (x.detach().requires_grad_() for x in (q, k, v))

        def sdpa_fwd(qt: object = qt, kt: object = kt, vt: object = vt,
                     causal: bool = causal) -> object:
            return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)

        def sdpa_fwd_bwd(do: object = do, sdpa_fwd: Callable[[], Any] = sdpa_fwd) -> None:
            sdpa_fwd().backward(do)

        with torch.no_grad():
            fwd_ms = env.bench(sdpa_fwd)
        torch_bwd = max(env.bench(sdpa_fwd_bwd) - fwd_ms, 1e-6)
        flops = 10 * z * h * t * t * d / (2 if causal else 1)  # 2.5x the forward's
        out.append(Result(f"flash attention bwd {(z, h, t, d)} causal={causal}", best[0],
                          torch_bwd, flops, "TFLOP/s", None,
                          f"tiles {best[1]}; torch = SDPA fwd+bwd minus fwd"))
    return out


def adam(env: Env) -> list[Result]:
    import torch
    from tinytrain.cuda.adam import adam_kernel

    n = env.pick(1 << 26, 1 << 24, 4096)
    p = torch.randn(n, device=env.device)
    g = torch.randn(n, device=env.device)
    m, v = torch.zeros(n, device=env.device), torch.zeros(n, device=env.device)
    block = env.pick(4096, 4096, 1024)

    def run() -> None:
        adam_kernel[(math.ceil(n / block),)](p, g, m, v, n, 1e-3, 0.9, 0.999, 1e-8, 0.01, 1,
                                             DECOUPLED=True, BLOCK_SIZE=block, num_warps=8)

    ref = torch.nn.Parameter(p.clone())
    ref.grad = g.clone()
    # torch's fused AdamW needs a GPU; the dry run compares with the single-tensor one
    opt = torch.optim.AdamW([ref], lr=1e-3, weight_decay=0.01,
                            **({} if env.dry_run else {"fused": True}))
    opt.step()
    run()
    check("adam", p, ref.detach(), 1e-5, 1e-5)
    return [Result(f"AdamW step {n} float32 (vs torch fused=True)", env.bench(run),
                   env.bench(opt.step), 7 * n * 4, "GB/s", None,
                   "the timed calls repeat step 1's update on live state")]


GPT2_SMALL = dict(vocab_size=50304, block_size=1024, n_layer=12, n_head=12, n_embd=768,
                  dropout=0.0, bias=True, tie_weights=True, gelu_approximate="tanh")
DRY_GPT = dict(vocab_size=64, block_size=16, n_layer=2, n_head=2, n_embd=32, dropout=0.0,
               bias=True, tie_weights=True, gelu_approximate="tanh")


def gpt_step(env: Env) -> list[Result]:
    """A GPT-2-small-sized training step (forward, backward, AdamW) on tinytrain's cuda
    device against torch eager on the same device with the same model, weights and batch.
    The losses of the first step are checked against each other before anything is timed.
    tinytrain's kernel wrappers allocate their outputs as NumPy arrays, so on a GPU each
    launch stages them (the allocator's spy counts it: ``staged per step``)."""
    import numpy as np
    import tinytrain as tt
    import torch
    import torch.nn.functional as F  # noqa: N812
    from tinytrain.cuda import _runtime

    from graders.oracle import gpt as twin
    from graders.probes.gpt import _gpt

    cfg = env.pick(GPT2_SMALL, GPT2_SMALL, DRY_GPT)
    batch, steps = env.pick((4, 256), (2, 128), (2, 16))

    class TorchGPT(twin.GPT):
        def forward(self, idx: Any, targets: Any = None) -> Any:
            x = self.transformer.wte(idx) + self.transformer.wpe(
                torch.arange(idx.shape[1], device=idx.device))
            for block in self.transformer.h:
                x = block(x)
            logits = self.lm_head(self.transformer.ln_f(x))
            return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    model = TorchGPT(cfg)
    weights = twin.random_weights(model, 0, torch.float32)
    model.to(env.device)
    rng = np.random.default_rng(0)
    idx_np = rng.integers(0, cfg["vocab_size"], (batch, steps))
    tgt_np = rng.integers(0, cfg["vocab_size"], (batch, steps))
    idx, tgt = (torch.from_numpy(a).to(env.device) for a in (idx_np, tgt_np))
    opt = model.configure_optimizers(0.1, 1e-3, (0.9, 0.95))

    ours = _gpt(tt, cfg, weights)
    ours.to("cuda")
    ours_opt = ours.configure_optimizers(0.1, 1e-3, (0.9, 0.95))
    tidx, ttgt = (tt.tensor(a).to("cuda") for a in (idx_np, tgt_np))

    losses: dict[str, list[float]] = {"torch": [], "tinytrain": []}

    def torch_step() -> None:
        opt.zero_grad()
        loss = model(idx, tgt)[1]
        loss.backward()
        opt.step()
        losses["torch"].append(float(loss.detach().cpu()))

    def our_step() -> None:
        ours_opt.zero_grad()
        loss = ours(tidx, ttgt)[1]
        loss.backward()
        ours_opt.step()
        losses["tinytrain"].append(float(loss.item()))

    copies = _runtime.allocator().copies
    before = copies.staged
    our_step()
    staged = copies.staged - before
    torch_step()
    check("GPT step 1 loss", torch.tensor(losses["tinytrain"][0]),
          torch.tensor(losses["torch"][0]), 1e-3, 1e-3)
    ours_ms = env.timed(our_step, env.pick(2, 2, 1), warm_up=False)  # step 1 warmed it
    torch_ms = env.timed(torch_step, env.pick(10, 10, 1))
    params = sum(p.numel() for p in model.parameters())
    name = "GPT-2 small" if cfg is GPT2_SMALL else "toy GPT"
    return [Result(f"{name} train step ({params / 1e6:.1f}M params, batch {batch}x{steps}) "
                   "vs torch eager", ours_ms, torch_ms, 0.0, "", 1 / 1.5,
                   f"{staged} arrays staged per step ({_runtime.allocator().name} allocator)",
                   {"staged_per_step": staged, "allocator": _runtime.allocator().name,
                    "losses": losses, "config": cfg})]


BENCHMARKS = {"matmul": matmul, "elementwise": elementwise, "softmax": softmax,
              "layernorm": layernorm, "cross_entropy": cross_entropy, "attention": attention,
              "attention_backward": attention_backward, "adam": adam, "gpt": gpt_step}


def markdown(meta: dict[str, Any], rows: list[dict[str, Any]], failures: dict[str, str]) -> str:
    lines = [f"# bench_cuda: {meta['gpu']}", ""]
    if meta["dry_run"]:
        lines += ["**DRY RUN** on the CPU under Triton's interpreter at toy sizes: this checks "
                  "the script, every result against torch; the times are the interpreter's "
                  "and are not figures of anything.", ""]
    lines += [f"{meta['date']}; torch {meta['torch']}; triton {meta['triton']}; "
              f"{meta['host']}", "",
              "| benchmark | ours ms | torch ms | rate | ratio (torch/ours) | of peak | target "
              "| verdict | note |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        rate = "-" if r["rate"] is None else f"{r['rate']:.1f} {r['unit']}"
        frac = "" if r["peak_fraction"] is None else f"{r['peak_fraction']:.1%}"
        target = "" if r["target"] is None else f">= {r['target']:.2g}x"
        lines.append(f"| {r['name']} | {r['ours_ms']:.3f} | {r['torch_ms']:.3f} | {rate} | "
                     f"{r['ratio']:.2f}x | {frac} | {target} | {r['verdict']} | {r['note']} |")
    for key, why in failures.items():
        lines.append(f"| {key} | failed | | | | | | | {why} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--dry-run", action="store_true",
                        help="toy sizes on the CPU under Triton's interpreter (plumbing only)")
    parser.add_argument("--out", type=Path, help="write bench_cuda.json and bench_cuda.md here")
    parser.add_argument("--require-gpu", action="store_true",
                        help="exit 1 (instead of 0) where no GPU is found")
    parser.add_argument("--kernels", default=",".join(BENCHMARKS),
                        help=f"comma-separated, from {', '.join(BENCHMARKS)}")
    args = parser.parse_args(argv)
    keys = [k.strip() for k in args.kernels.split(",") if k.strip()]
    unknown = [k for k in keys if k not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from "
                     f"{', '.join(BENCHMARKS)}")
    if args.dry_run:
        os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported
        os.environ["TINYTRAIN_ALLOCATOR"] = "host"
    try:
        import torch
    except ImportError:
        print("bench_cuda: torch is not installed; nothing measured")
        return 0
    if not args.dry_run and not torch.cuda.is_available():
        print("bench_cuda: no CUDA GPU here (torch.cuda.is_available() is False); nothing "
              "measured. The kernels are graded on any machine under Triton's interpreter; "
              "this benchmark needs a GPU (or --dry-run to check the script on a CPU).")
        return 1 if args.require_gpu else 0
    sys.path[:0] = [str(ROOT / "reference"), str(ROOT)]
    import triton

    env = Env(args.dry_run, args.quick)
    name = "CPU (dry run, Triton interpreter)" if args.dry_run else torch.cuda.get_device_name()
    peak = None if args.dry_run else next((v for k, v in PEAKS.items() if k in name), None)
    meta = {"gpu": name, "dry_run": args.dry_run, "quick": args.quick,
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "torch": torch.__version__, "triton": triton.__version__,
            "cuda": getattr(torch.version, "cuda", None), "host": platform.node(),
            "peaks": peak}
    print(f"GPU: {name}; torch {torch.__version__}; triton {triton.__version__}; peaks "
          f"{peak or 'unknown'} (dense fp16 TFLOP/s, TB/s)")
    print(f"{'benchmark':52s} {'ours ms':>9s} {'torch ms':>9s} {'rate':>9s} {'':8s} "
          f"{'ratio':>7s} {'peak':>7s} {'target':>8s}")
    rows: list[dict[str, Any]] = []
    failures: dict[str, str] = {}
    for key in keys:
        try:
            for result in BENCHMARKS[key](env):
                result.dry_run = args.dry_run
                print(result.row(peak), flush=True)
                rows.append({"benchmark": key, **result.as_dict(peak)})
        except Exception as exc:  # noqa: BLE001 - report and go on with the next one
            failures[key] = f"{type(exc).__name__}: {exc}"
            print(f"{key}: failed: {failures[key]}", flush=True)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "bench_cuda.json").write_text(json.dumps(
            {"meta": meta, "results": rows, "failures": failures}, indent=2, default=str))
        (args.out / "bench_cuda.md").write_text(markdown(meta, rows, failures))
        print(f"wrote {args.out / 'bench_cuda.json'} and {args.out / 'bench_cuda.md'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
