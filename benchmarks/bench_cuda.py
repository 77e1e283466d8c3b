"""Assignment 6's Triton kernels on a GPU against PyTorch (cuBLAS, torch eager, SDPA).

    python benchmarks/bench_cuda.py [--quick] [--kernels matmul,softmax,...]

Needs a CUDA GPU, torch with CUDA and triton (the reference kernels in
reference/tinytrain/cuda are launched directly on torch CUDA tensors). Every benchmark
first checks the kernel's result against torch on its inputs, then times both with
triton.testing.do_bench (median), and prints the time, TFLOP/s or GB/s, the ratio to torch
(torch's time / the kernel's: above 1 is faster), the fraction of the GPU's peak (for the
GPUs in PEAKS) and the course's target. Where no GPU exists it says so and measures nothing.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

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

    def row(self, peak: tuple[float, float] | None) -> str:
        rate = self.work / (self.ours_ms * 1e-3)
        rate = rate / 1e12 if self.unit == "TFLOP/s" else rate / 1e9
        ratio = self.torch_ms / self.ours_ms
        frac = ""
        if not self.work:
            return (f"{self.name:44s} {self.ours_ms:9.3f} {self.torch_ms:9.3f} {'-':>9s} "
                    f"{'':8s} {ratio:6.2f}x {'':>7s} {self.target or '':>8} {self.note}")
        if peak is not None:
            top = peak[0] if self.unit == "TFLOP/s" else peak[1] * 1e3
            frac = f"{rate / top:6.1%}"
        verdict = "" if self.target is None else ("ok" if ratio >= self.target else "BELOW")
        target = "" if self.target is None else f">= {self.target:g}x"
        return (f"{self.name:44s} {self.ours_ms:9.3f} {self.torch_ms:9.3f} {rate:9.1f} "
                f"{self.unit:8s} {ratio:6.2f}x {frac:>7s} {target:>8s} {verdict:5s} {self.note}")


def bench(fn: Callable[[], object]) -> float:
    from triton.testing import do_bench

    return float(do_bench(fn, warmup=25, rep=100, return_mode="median"))


def check(name: str, got: object, expected: object, rtol: float, atol: float) -> None:
    import torch

    torch.testing.assert_close(got, expected, rtol=rtol, atol=atol, check_dtype=False,
                               msg=lambda m: f"{name}: the kernel disagrees with torch: {m}")


def strides(t: object) -> tuple[int, ...]:
    return tuple(t.stride())


# ----- the benchmarks ----------------------------------------------------------------------
MATMUL_CONFIGS = ((128, 256, 64, 8, 3), (128, 128, 64, 4, 4), (256, 128, 64, 8, 3),
                  (128, 128, 32, 4, 4))  # BLOCK_M, BLOCK_N, BLOCK_K, warps, stages


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


def _matmul_one(n: int, dtype: object) -> Result | None:
    import torch

    a = torch.randn(n, n, device="cuda", dtype=dtype)
    b = torch.randn(n, n, device="cuda", dtype=dtype)
    c = torch.empty(n, n, device="cuda", dtype=dtype)
    best = None
    for config in MATMUL_CONFIGS:  # a small manual sweep (no autotune)
        run = _matmul_launcher(a, b, c, n, config)
        try:
            ms = bench(run)
        except Exception as exc:  # noqa: BLE001 - a config this GPU cannot run
            print(f"  matmul config {config} failed: {exc}")
            continue
        if best is None or ms < best[0]:
            best = (ms, run, config)
    if best is None:
        return None
    best[1]()
    check(f"matmul {dtype}", c.float(), a.float() @ b.float(), 2e-2, 1e-1)
    return Result(f"matmul {n}^3 {str(dtype)[6:]} (cuBLAS)", best[0],
                  bench(lambda: torch.matmul(a, b)), 2 * n**3, "TFLOP/s", 0.95,
                  f"tiles {best[2]}")


def matmul(quick: bool) -> list[Result]:
    import torch

    n = 2048 if quick else 4096
    results = [_matmul_one(n, dtype) for dtype in (torch.float16, torch.bfloat16)]
    return [r for r in results if r is not None]


def elementwise(quick: bool) -> list[Result]:
    import torch
    import torch.nn.functional as F  # noqa: N812
    from tinytrain.cuda.elementwise import add_kernel, bias_gelu_kernel

    n = (1 << 26) if quick else (1 << 28)
    x = torch.randn(n, device="cuda", dtype=torch.float16)
    y = torch.randn(n, device="cuda", dtype=torch.float16)
    z = torch.empty_like(x)
    block = 4096

    def run_add() -> None:
        add_kernel[(math.ceil(n / block),)](x, y, z, n, BLOCK_SIZE=block, num_warps=8)

    run_add()
    check("add", z, x + y, 1e-3, 1e-3)
    out = [Result(f"add {n} float16", bench(run_add), bench(lambda: x + y), 3 * n * 2, "GB/s",
                  0.95)]
    rows, cols = (8192 if quick else 32768), 4096
    xm = torch.randn(rows, cols, device="cuda", dtype=torch.float16)
    bias = torch.randn(cols, device="cuda", dtype=torch.float16)
    ym = torch.empty_like(xm)

    def run_gelu() -> None:
        bias_gelu_kernel[(math.ceil(rows / 16), math.ceil(cols / 256))](
            xm, bias, ym, rows, cols, *strides(xm), *strides(ym), TANH=True, BLOCK_M=16,
            BLOCK_N=256, num_warps=8)

    run_gelu()
    check("bias_gelu", ym.float(), F.gelu(xm.float() + bias.float(), approximate="tanh"),
          2e-3, 2e-3)
    out.append(Result(f"bias+gelu {rows}x{cols} float16 (vs eager x+b, gelu)", bench(run_gelu),
                      bench(lambda: F.gelu(xm + bias, approximate="tanh")), 2 * rows * cols * 2,
                      "GB/s", None))
    return out


def softmax(quick: bool) -> list[Result]:
    import torch
    from tinytrain.cuda.softmax import softmax_kernel

    rows, cols = (8192 if quick else 32768), 4096
    x = torch.randn(rows, cols, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)

    def run() -> None:
        softmax_kernel[(rows,)](x, y, rows, cols, *strides(x), *strides(y), LOG=False,
                                BLOCK_N=4096, num_warps=8)

    run()
    check("softmax", y.float(), torch.softmax(x.float(), -1), 1e-3, 1e-5)
    return [Result(f"softmax {rows}x{cols} float16", bench(run),
                   bench(lambda: torch.softmax(x, -1)), 2 * rows * cols * 2, "GB/s", 2.0)]


def layernorm(quick: bool) -> list[Result]:
    import torch
    import torch.nn.functional as F  # noqa: N812
    from tinytrain.cuda.layernorm import layer_norm_kernel

    rows, cols = (8192 if quick else 32768), 4096
    x = torch.randn(rows, cols, device="cuda", dtype=torch.float16)
    w = torch.rand(cols, device="cuda", dtype=torch.float16) + 0.5
    b = torch.randn(cols, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)
    mean = torch.empty(rows, device="cuda", dtype=torch.float32)
    rstd = torch.empty_like(mean)

    def run() -> None:
        layer_norm_kernel[(rows,)](x, w, b, y, mean, rstd, rows, cols, x.stride(0), y.stride(0),
                                   1e-5, BLOCK_N=4096, num_warps=8)

    run()
    check("layer_norm", y.float(), F.layer_norm(x.float(), (cols,), w.float(), b.float()),
          2e-3, 2e-3)
    return [Result(f"layer_norm {rows}x{cols} float16", bench(run),
                   bench(lambda: F.layer_norm(x, (cols,), w, b)), 2 * rows * cols * 2, "GB/s",
                   2.0)]


def cross_entropy(quick: bool) -> list[Result]:
    import torch
    import torch.nn.functional as F  # noqa: N812
    from tinytrain.cuda.cross_entropy import cross_entropy_kernel

    rows, cols = (2048 if quick else 8192), 50304
    logits = torch.randn(rows, cols, device="cuda", dtype=torch.float16)
    targets = torch.randint(0, cols, (rows,), device="cuda")
    loss = torch.empty(rows, device="cuda", dtype=torch.float32)
    dlogits = torch.empty_like(logits)

    def run() -> None:
        cross_entropy_kernel[(rows,)](logits, targets, loss, dlogits, rows, cols,
                                      *strides(logits), *strides(dlogits), -100, 1.0 / rows,
                                      BLOCK_N=4096, num_warps=8)

    def eager() -> None:
        z = logits.detach().requires_grad_()
        F.cross_entropy(z.float(), targets).backward()

    run()
    check("cross_entropy", loss.mean(), F.cross_entropy(logits.float(), targets), 1e-4, 1e-4)
    return [Result(f"cross_entropy fwd+bwd {rows}x{cols} float16", bench(run), bench(eager),
                   2 * rows * cols * 2, "GB/s", 2.0)]


def attention(quick: bool) -> list[Result]:
    import torch
    import torch.nn.functional as F  # noqa: N812
    from tinytrain.cuda.attention import flash_attention_kernel

    out = []
    z, h, t, d = (2, 16, 2048, 64) if quick else (4, 16, 4096, 64)
    for causal in (False, True):
        q, k, v = (torch.randn(z, h, t, d, device="cuda", dtype=torch.float16) for _ in range(3))
        o = torch.empty_like(q)
        lse = torch.empty(z * h, t, device="cuda", dtype=torch.float32)

        def run(q: object = q, k: object = k, v: object = v, o: object = o, lse: object = lse,
                causal: bool = causal) -> None:
            flash_attention_kernel[(math.ceil(t / 128), z * h)](
                q, k, v, o, lse, *strides(q), h, t, 1 / math.sqrt(d), CAUSAL=causal,
                BLOCK_M=128, BLOCK_N=64, HEAD_DIM=d, num_warps=8, num_stages=3)

        run()
        check("flash attention", o.float(),
              F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal),
              2e-2, 2e-2)
        flops = 4 * z * h * t * t * d / (2 if causal else 1)
        out.append(Result(f"flash attention fwd {(z, h, t, d)} causal={causal}", bench(run),
                          bench(lambda q=q, k=k, v=v, causal=causal:
                                F.scaled_dot_product_attention(q, k, v, is_causal=causal)),
                          flops, "TFLOP/s", 0.8))
    return out


def adam(quick: bool) -> list[Result]:
    import torch
    from tinytrain.cuda.adam import adam_kernel

    n = (1 << 24) if quick else (1 << 26)
    p = torch.randn(n, device="cuda")
    g = torch.randn(n, device="cuda")
    m, v = torch.zeros(n, device="cuda"), torch.zeros(n, device="cuda")
    block = 4096

    def run() -> None:
        adam_kernel[(math.ceil(n / block),)](p, g, m, v, n, 1e-3, 0.9, 0.999, 1e-8, 0.01, 1,
                                             DECOUPLED=True, BLOCK_SIZE=block, num_warps=8)

    ref = torch.nn.Parameter(p.clone())
    ref.grad = g.clone()
    opt = torch.optim.AdamW([ref], lr=1e-3, weight_decay=0.01, fused=True)
    opt.step()
    run()
    check("adam", p, ref.detach(), 1e-5, 1e-5)
    return [Result(f"AdamW step {n} float32 (vs torch fused=True)", bench(run),
                   bench(opt.step), 7 * n * 4, "GB/s", None)]


def gpt_step(quick: bool) -> list[Result]:
    """A GPT training step on tinytrain's cuda device against torch eager on the GPU. The
    device keeps tensors in host memory (NumPy arrays) and stages them to the GPU for each
    launch: the number shows that cost, not the kernels'."""
    import time

    import torch

    sys.path.insert(0, str(ROOT))
    import tinytrain as tt

    from graders.oracle import gpt as twin

    cfg = twin.config(vocab_size=64, block_size=64, n_layer=2, n_head=4, n_embd=128, bias=False)
    model = twin.GPT(cfg)
    weights = twin.random_weights(model, 0, torch.float32)
    model.cuda()
    idx = torch.randint(0, 64, (8, 64), device="cuda")
    opt = model.configure_optimizers(0.1, 1e-3, (0.9, 0.95))

    def torch_step() -> None:
        opt.zero_grad()
        model(idx, idx)[1].backward()
        opt.step()

    from graders.probes.gpt import _gpt

    ours = _gpt(tt, cfg, weights)
    ours.to("cuda")
    ours_opt = ours.configure_optimizers(0.1, 1e-3, (0.9, 0.95))
    tidx = tt.tensor(idx.cpu().numpy()).to("cuda")

    def our_step() -> None:
        ours_opt.zero_grad()
        ours(tidx, tidx)[1].backward()
        ours_opt.step()

    def timed(fn: Callable[[], None], n: int) -> float:
        fn()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        return (time.perf_counter() - start) / n * 1e3

    return [Result("GPT training step (2x128, batch 8x64) vs torch eager", timed(our_step, 3),
                   timed(torch_step, 20), 0.0, "GB/s", 1.0,
                   "host-staged device memory, see the docstring")]


BENCHMARKS = {"matmul": matmul, "elementwise": elementwise, "softmax": softmax,
              "layernorm": layernorm, "cross_entropy": cross_entropy, "attention": attention,
              "adam": adam, "gpt": gpt_step}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--kernels", default=",".join(BENCHMARKS),
                        help=f"comma-separated, from {', '.join(BENCHMARKS)}")
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("bench_cuda: torch is not installed; nothing measured")
        return 0
    if not torch.cuda.is_available():
        print("bench_cuda: no CUDA GPU here (torch.cuda.is_available() is False); nothing "
              "measured. The kernels are graded on any machine under Triton's interpreter; "
              "this benchmark needs a GPU.")
        return 0
    sys.path.insert(0, str(ROOT / "reference"))
    name = torch.cuda.get_device_name()
    peak = next((v for k, v in PEAKS.items() if k in name), None)
    print(f"GPU: {name}; torch {torch.__version__}; peaks {peak or 'unknown'} "
          "(dense fp16 TFLOP/s, TB/s)")
    print(f"{'benchmark':44s} {'ours ms':>9s} {'torch ms':>9s} {'rate':>9s} {'':8s} "
          f"{'ratio':>7s} {'peak':>7s} {'target':>8s}")
    failed = 0
    for key in args.kernels.split(","):
        try:
            for result in BENCHMARKS[key.strip()](args.quick):
                print(result.row(peak), flush=True)
        except Exception as exc:  # noqa: BLE001 - report and go on with the next one
            failed += 1
            print(f"{key}: failed: {type(exc).__name__}: {exc}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
