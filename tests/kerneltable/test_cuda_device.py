"""The reference's cuda device (task 6.7) behaves as PyTorch's device does where the graders
do not look: placement, copies and their gradients, views, mixed devices, modules, and
the clear error for an op without a kernel. Run in a subprocess: the reference's
tinytrain, with Triton's interpreter switched on before triton is imported."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from ..conftest import REFERENCE

pytest.importorskip("triton")

SCRIPT = """
import numpy as np
import tinytrain as tt
from tinytrain.cuda import _runtime

launched = []
real_launch = _runtime.launch
def counting(kernel, grid, *args, **kw):
    launched.append(kernel.fn.__name__)
    return real_launch(kernel, grid, *args, **kw)
for name in ("matmul", "softmax", "_common", "elementwise"):
    module = __import__("tinytrain.cuda." + name, fromlist=["_"])
    module.launch = counting

# placement and copies
x = tt.randn(3, 4, requires_grad=True)
assert x.device == "cpu" and not x.is_cuda
y = x.to("cuda")
assert y.device == "cuda:0" and y.is_cuda and y.to("cuda") is y and x.cuda().is_cuda
assert tt.zeros(2, device="cuda").is_cuda and tt.tensor([1.0], device="cuda:0").is_cuda
assert not y.cpu().is_cuda and y.cpu().grad_fn is not None
# views, detach and gradients stay on the device; the copy's gradient comes back to the CPU
v = y.transpose(0, 1)[1:]
assert v.is_cuda and v.detach().is_cuda
z = tt.softmax(y, -1)
assert "softmax_kernel" in launched
z.backward(tt.ones(3, 4, device="cuda"))
assert x.grad is not None and not x.grad.is_cuda, "a copy's gradient goes back to its device"
assert np.allclose(x.grad.numpy(), 0, atol=1e-6)
# a device leaf's .grad is on the device
w = tt.randn(4, 2, device="cuda", requires_grad=True)
out = tt.nn.functional.linear(y.detach(), w.T)
out.backward(tt.ones(3, 2, device="cuda"))
assert w.grad.is_cuda and "matmul_kernel" in launched
# a @ b on the device, 2-D and batched (the batched operands are read-only broadcast views,
# which Triton's interpreter copies back after each launch), gradients included
a_host = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
b_host = np.random.default_rng(1).standard_normal((4, 2)).astype(np.float32)
a = tt.tensor(a_host, device="cuda", requires_grad=True)
b = tt.tensor(b_host, device="cuda", requires_grad=True)
ab = a @ b
assert ab.is_cuda and np.allclose(ab.detach().cpu().numpy(), a_host @ b_host, atol=1e-5)
ab.backward(tt.ones(3, 2, device="cuda"))
assert np.allclose(a.grad.cpu().numpy(), np.ones((3, 2)) @ b_host.T, atol=1e-5)
square = tt.tensor(a_host[:, :3], device="cuda")  # one tensor as both operands
assert np.allclose((square @ square).cpu().numpy(), a_host[:, :3] @ a_host[:, :3], atol=1e-5)
batched = tt.tensor(np.stack([a_host, 2 * a_host]), device="cuda") @ b
assert np.allclose(batched.detach().cpu().numpy()[1], 2 * a_host @ b_host, atol=1e-5)
# mixing devices: floating CPU tensors are an error, as in PyTorch
try:
    y + tt.randn(3, 4)
except RuntimeError as exc:
    assert "same device" in str(exc), exc
else:
    raise AssertionError("cuda + cpu did not raise")
# Python scalars and 0-d tensors are fine; so are CPU integer indices (moved implicitly)
assert (y * 2.0).is_cuda and (y + tt.tensor(1.0)).is_cuda
emb = tt.randn(5, 3, device="cuda", requires_grad=True)
picked = tt.nn.functional.embedding(tt.tensor([0, 4, 4]), emb)
assert picked.is_cuda and np.array_equal(picked.detach().numpy(), emb.detach().numpy()[[0, 4, 4]])
# an op without a kernel says so
try:
    tt.exp(y)
except RuntimeError as exc:
    assert "no cuda kernel for Exp" in str(exc), exc
else:
    raise AssertionError("exp on the device did not raise")
# modules move in place
layer = tt.nn.Linear(4, 2)
weight = layer.weight
layer.to("cuda")
assert layer.weight is weight and weight.is_cuda and layer.bias.is_cuda
assert layer(y.detach()).is_cuda
layer.cpu()
assert not layer.weight.is_cuda
# scaled_dot_product_attention: the CPU composite and the device kernels agree
q, k, vv = (tt.randn(1, 2, 5, 16) for _ in range(3))
for causal in (False, True):
    cpu = tt.nn.functional.scaled_dot_product_attention(q, k, vv, is_causal=causal)
    dev = tt.nn.functional.scaled_dot_product_attention(q.cuda(), k.cuda(), vv.cuda(),
                                                        is_causal=causal)
    assert dev.is_cuda and np.allclose(cpu.numpy(), dev.cpu().numpy(), atol=1e-5)
print("OK")
"""


def test_the_device_behaves_like_torch_s():
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(SCRIPT)], capture_output=True,
                          text=True, timeout=300, cwd=REFERENCE,
                          env={"PATH": "/usr/bin:/bin", "TRITON_INTERPRET": "1"})
    assert proc.returncode == 0 and proc.stdout.strip().endswith("OK"), proc.stderr[-3000:]
