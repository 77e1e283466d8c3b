"""The backward engine: walk the graph from the roots and apply the chain rule."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .node import BackwardNode, gradient_edge


def backward(
    tensors: Any | Sequence[Any],
    grad_tensors: Any | Sequence[Any] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
) -> None:
    """Compute the gradient of ``tensors`` with respect to every leaf of their graph and
    add it into the leaves' ``.grad`` (PyTorch's ``torch.autograd.backward``)."""
    if create_graph:
        raise NotImplementedError("tinytrain does not support create_graph=True")
    if retain_graph is None:
        retain_graph = create_graph
    tensors = _as_tuple(tensors)
    grads = _as_tuple(grad_tensors) if grad_tensors is not None else (None,) * len(tensors)
    if len(grads) != len(tensors):
        raise RuntimeError(f"got {len(grads)} gradients for {len(tensors)} tensors")
    roots = [(gradient_edge(t), _root_grad(i, t, g))
             for i, (t, g) in enumerate(zip(tensors, grads, strict=True))]
    outer, _callbacks.queue = _callbacks.queue, []
    try:
        run_backward(roots, retain_graph)
        while _callbacks.queue:
            _callbacks.queue.pop(0)()
    finally:
        _callbacks.queue = outer


class _Callbacks(threading.local):
    queue: list[Callable[[], None]] | None = None  # None outside backward


_callbacks = _Callbacks()


def queue_callback(callback: Callable[[], None]) -> None:
    """Run ``callback()`` when the current backward pass has finished, before
    ``backward()`` returns (PyTorch's ``Variable._execution_engine.queue_callback``)."""
    if _callbacks.queue is None:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    _callbacks.queue.append(callback)


def _as_tuple(x: Any) -> tuple[Any, ...]:
    return tuple(x) if isinstance(x, (list, tuple)) else (x,)


def _root_grad(index: int, tensor: Any, grad: Any) -> np.ndarray:
    """The gradient that starts backward at ``tensor`` (ones for a one-element tensor)."""
    # HINT: PyTorch's RuntimeErrors here (the grader checks the type and the text):
    # HINT: a root that does not require grad: "element {index} of tensors does not
    # HINT: require grad and does not have a grad_fn"; no grad for a root of more than one
    # HINT: element: "grad can be implicitly created only for scalar outputs"; a grad of
    # HINT: another shape: "Mismatch in shape: grad_output[{index}] has a shape of
    # HINT: {grad.shape} and output[{index}] has a shape of {tensor.shape}."
    # HINT: (A second backward without retain_graph needs no code here: the framework
    # HINT: raises "Trying to backward through the graph a second time ..." when a node
    # HINT: reads saved tensors that run_backward freed with node._release().)
    raise NotImplementedError("task 1.2: Backward: topological order, accumulation, retain_graph")


def run_backward(
    roots: list[tuple[tuple[BackwardNode | None, int], np.ndarray]], retain_graph: bool
) -> None:
    """Propagate the root gradients through the graph, each node once, in an order where
    a node runs only after every node that sends it a gradient (a topological order).

    Gradients arriving at the same node from several paths (branches, a parameter used
    twice) are summed before the node runs. Without ``retain_graph`` each node frees its
    saved tensors after it runs.
    """
    # HINT: first count, for every reachable node, how many edges point into it.
    raise NotImplementedError("task 1.2: Backward: topological order, accumulation, retain_graph")


def _count_dependencies(roots: list[BackwardNode | None]) -> dict[BackwardNode, int]:
    """For each node reachable from ``roots``, the number of edges that point into it."""
    raise NotImplementedError("task 1.2: Backward: topological order, accumulation, retain_graph")


def _add_to_buffer(
    buffers: dict[BackwardNode, list[np.ndarray | None]],
    node: BackwardNode,
    output_nr: int,
    grad: np.ndarray,
) -> None:
    """Sum ``grad`` into the gradient waiting for ``node``'s output ``output_nr``."""
    raise NotImplementedError("task 1.2: Backward: topological order, accumulation, retain_graph")
