"""Task 6.6: the fused Adam/AdamW step over a flat buffer."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..oracle import cuda as oracle
from ..strategies.cuda import Values, laid, tile, wrapper_layout
from .checks import check_launch
from .spec import Buffer, Case, Expect, KernelInfo, Launch, Ptr, WrapperInfo, cdiv, reproducer

BLOCK_SIZE = 64
# torch computes the bias corrections in float64 on the host, the kernel beta ** step in
# float32: the update differs by a few float32 units of itself (lr-sized), far inside the
# float32 default atol of 1e-5 for parameters of order 1
PARAM_TOLERANCE = (1.3e-6, 1e-5)


def _hyper(v: Values) -> dict[str, Any]:
    return {"lr": v.pick((1e-3, 0.1)), "betas": v.pick(((0.9, 0.999), (0.8, 0.99))),
            "eps": v.pick((1e-8, 1e-6)), "weight_decay": v.pick((0.0, 0.01, 0.1)),
            "decoupled": v.flag()}


def _launch(param: np.ndarray, grad: np.ndarray, m: np.ndarray, vv: np.ndarray, step: int,
            h: dict[str, Any], block: int = BLOCK_SIZE) -> Launch:
    n = param.size
    return Launch(
        buffers={"param": Buffer(param, inout=True), "grad": Buffer(grad),
                 "exp_avg": Buffer(m, inout=True), "exp_avg_sq": Buffer(vv, inout=True)},
        args=[Ptr("param"), Ptr("grad"), Ptr("exp_avg"), Ptr("exp_avg_sq"), n, h["lr"],
              h["betas"][0], h["betas"][1], h["eps"], h["weight_decay"], step],
        constexprs={"DECOUPLED": h["decoupled"], "BLOCK_SIZE": block},
        grid=(cdiv(n, block),))


def _expect(param: np.ndarray, grad: np.ndarray, m: np.ndarray, vv: np.ndarray, step: int,
            h: dict[str, Any]) -> dict[str, Expect]:
    p, em, ev = oracle.adam_from_state(param, grad, m, vv, step, h["lr"], h["betas"], h["eps"],
                                       h["weight_decay"], h["decoupled"])
    return {"param": Expect(p, *PARAM_TOLERANCE), "exp_avg": Expect(em),
            "exp_avg_sq": Expect(ev)}


def _adam(v: Values, dtype: str, n: int | None = None, step: int | None = None) -> Case:
    n = v.integer(1, 300) if n is None else n
    step = v.integer(1, 20) if step is None else step
    h = _hyper(v)
    block = tile(v, "BLOCK_SIZE", (BLOCK_SIZE, 32, 128))
    param = v.normal("param", (n,), dtype)
    grad = v.normal("grad", (n,), dtype)
    m = v.normal("exp_avg", (n,), dtype, 0.1)
    vv = np.abs(v.normal("exp_avg_sq", (n,), dtype, 0.01))
    v.note("exp_avg_sq = np.abs(exp_avg_sq)")
    what = f"n_elements={n}, step={step}, {h}, BLOCK_SIZE={block}"
    return Case(_launch(param, grad, m, vv, step, h, block), _expect(param, grad, m, vv, step, h),
                what, v, dtype)


def _first_steps(submission: Any, info: KernelInfo) -> None:
    """Steps 1 to 4 from zero moments (where the bias corrections matter most), each
    launch starting from the state the kernel itself left, against torch step by step."""
    v = Values(None, 5)
    for decoupled in (False, True):
        h = {"lr": 0.01, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.1,
             "decoupled": decoupled}
        param = v.normal("param", (2 * BLOCK_SIZE + 5,), "float32")
        m, vv = np.zeros_like(param), np.zeros_like(param)
        v.note("exp_avg, exp_avg_sq = np.zeros_like(param), np.zeros_like(param)")
        torch_state = (param, m, vv)
        for step in range(1, 5):
            grad = v.normal("grad", param.shape, "float32")
            case = Case(_launch(param, grad, m, vv, step, h),
                        _expect(*torch_state[:1], grad, *torch_state[1:], step, h),
                        f"step {step} from zero moments, {h}", v, "float32")
            obs = check_launch(submission, info, case, f" [step {step}]")
            # the reproducer of a later step runs this one first (the launch updates the
            # state arrays in place, as the kernel's own results feed the next step here)
            v.note(next(line for line in reproducer(case, info.module, info.name).splitlines()
                        if line.startswith("launch(")))
            param, m, vv = (obs["outputs"][k] for k in ("param", "exp_avg", "exp_avg_sq"))
            torch_state = tuple(case.expected[k].value for k in ("param", "exp_avg", "exp_avg_sq"))


KERNELS = [
    KernelInfo(
        name="adam_kernel", module="adam", task="6.6",
        params=("param_ptr", "grad_ptr", "exp_avg_ptr", "exp_avg_sq_ptr", "n_elements", "lr",
                "beta1", "beta2", "eps", "weight_decay", "step", "DECOUPLED", "BLOCK_SIZE"),
        case=_adam, dtypes=("float32",), examples=6,
        edges=(("one element, step 1", lambda v, d: _adam(v, d, 1, 1)),
               ("a tail, step 1", lambda v, d: _adam(v, d, BLOCK_SIZE + 1, 1))),
        float_params=("lr", "beta1", "beta2", "eps", "weight_decay"),
        compile_constexprs={"DECOUPLED": True, "BLOCK_SIZE": 1024},
        checks=(("first-steps", _first_steps),),
    ),
]


def _wrap_adam(v: Values) -> tuple[list[Any], dict[str, Any], list[Expect], str]:
    n, step = v.integer(1, 3000), v.integer(1, 5)
    h = _hyper(v)
    param, grad = v.normal("param", (n,), "float32"), v.normal("grad", (n,), "float32")
    m = v.normal("exp_avg", (n,), "float32", 0.1)
    vv = np.abs(v.normal("exp_avg_sq", (n,), "float32", 0.01))
    e = _expect(param, grad, m, vv, step, h)
    kwargs = {"step": step, "lr": h["lr"], "beta1": h["betas"][0], "beta2": h["betas"][1],
              "eps": h["eps"], "weight_decay": h["weight_decay"], "decoupled": h["decoupled"]}
    # the state is updated in place (the API asks for contiguous float32 state: a view
    # is refused); the gradient may be any view, and must come back unchanged
    grad_layout = wrapper_layout(v, 1)
    return [param, laid(grad, grad_layout), m, vv], kwargs, \
        [e["param"], e["exp_avg"], e["exp_avg_sq"]], \
        f"n={n}, step={step}, {h}, grad ({grad_layout})"


WRAPPERS = [WrapperInfo("adam_step", "adam", "6.6", _wrap_adam, ("adam.adam_kernel",),
                       inplace=(0, 2, 3))]
