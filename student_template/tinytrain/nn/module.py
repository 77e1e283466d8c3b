"""Module: parameters, buffers, submodules, state_dict and the train/eval switch."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np

from .. import dtypes
from ..tensor import Tensor
from .parameter import Parameter

_TENSOR_TYPENAMES = {
    "float16": "HalfTensor", "float32": "FloatTensor", "float64": "DoubleTensor",
    "int8": "CharTensor", "int16": "ShortTensor", "int32": "IntTensor", "int64": "LongTensor",
    "uint8": "ByteTensor", "bool": "BoolTensor",
}


def _typename(value: Any) -> str:
    """PyTorch's spelling of a value's type in error messages ("tinytrain.FloatTensor")."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return "tinytrain." + _TENSOR_TYPENAMES.get(value.dtype.name, "Tensor")
    if isinstance(value, Module):
        return f"{type(value).__module__}.{type(value).__qualname__}"
    return type(value).__name__


def _addindent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


class _IncompatibleKeys(NamedTuple):
    """What ``load_state_dict`` returns: the keys it missed and the ones it did not use."""

    missing_keys: list[str]
    unexpected_keys: list[str]

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return (f"_IncompatibleKeys(missing_keys={self.missing_keys}, "
                f"unexpected_keys={self.unexpected_keys})")


class Module:
    """Base class of layers and models.

    Assigning a ``Parameter`` or a ``Module`` to an attribute registers it; buffers
    (non-trainable state, saved in ``state_dict`` unless ``persistent=False``) are added
    with ``register_buffer``. Registered things live in ``_parameters``, ``_buffers`` and
    ``_modules`` (in insertion order), not in the instance ``__dict__``.
    """

    training: bool

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", {})

    # ----- registration ---------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        def remove_from(*dicts_or_sets: Any) -> None:
            for d in dicts_or_sets:
                if name in d:
                    if isinstance(d, dict):
                        del d[name]
                    else:
                        d.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules,
                        self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(tinytrain.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = self.__dict__.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(self.__dict__, self._parameters, self._buffers,
                            self._non_persistent_buffers_set)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{_typename(value)}' as child module "
                                    f"'{name}' (tinytrain.nn.Module or None expected)")
                modules[name] = value
            else:
                buffers = self.__dict__.get("_buffers")
                if buffers is not None and name in buffers:
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(f"cannot assign '{_typename(value)}' as buffer "
                                        f"'{name}' (tinytrain.Tensor or None expected)")
                    buffers[name] = value
                else:
                    object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        # only called when normal lookup fails: look among the registered things
        for store in ("_parameters", "_buffers", "_modules"):
            registered = self.__dict__.get(store)
            if registered is not None and name in registered:
                return registered[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def _check_name(self, kind: str, name: Any, registry: dict[str, Any]) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f"{kind} name can't contain \".\"")
        if name == "":
            raise KeyError(f"{kind} name can't be empty string \"\"")
        if hasattr(self, name) and name not in registry:
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or a None placeholder) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name("parameter", name, self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(tinytrain.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'.")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer: state that is not trained (a running mean, a mask). Persistent
        buffers are part of ``state_dict``; non-persistent ones are not."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name("buffer", name, self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(tinytrain Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module under ``name`` (same as assigning the attribute)."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        self._check_name("module", name, self._modules)
        self._modules[name] = module

    register_module = add_module

    # ----- running --------------------------------------------------------------------
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define forward")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    # ----- traversal ------------------------------------------------------------------
    def named_children(self) -> Iterator[tuple[str, Module]]:
        """The direct submodules, each once, with their attribute names."""
        memo: set[Module] = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def children(self) -> Iterator[Module]:
        for _, module in self.named_children():
            yield module

    def named_modules(self, memo: set[Module] | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """This module and every submodule below it, depth first, each under its dotted
        path; a module reachable by several paths comes once (its first path) unless
        ``remove_duplicate=False``."""
        # HINT: yield (prefix, self) first, then recurse into self._modules with
        # HINT: "prefix.name" (no leading dot at the top); skip None children and, with
        # HINT: remove_duplicate, modules already seen (keep them in ``memo``).
        raise NotImplementedError("task 5.1: Module: parameters, buffers, submodules, state_dict, train/eval")

    def modules(self) -> Iterator[Module]:
        for _, module in self.named_modules():
            yield module

    def _named_members(self, members: Callable[[Module], Any], prefix: str = "",
                       recurse: bool = True, remove_duplicate: bool = True,
                       ) -> Iterator[tuple[str, Any]]:
        """(dotted name, tensor) for the tensors ``members(module)`` lists in every module
        (or only this one); a tensor shared by several modules comes once, under its first
        name, unless ``remove_duplicate=False``. None entries are skipped."""
        # HINT: walk self.named_modules(...) (or just [(prefix, self)] without recurse);
        # HINT: tensors compare by identity: keep the ones already yielded in a set.
        raise NotImplementedError("task 5.1: Module: parameters, buffers, submodules, state_dict, train/eval")

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """(dotted name, parameter) pairs, this module's own first, then each submodule's;
        a shared (tied) parameter comes once."""
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse,
                                   remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        """(dotted name, buffer) pairs, persistent or not."""
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse,
                                   remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call ``fn`` on every submodule (children first) and then on this module."""
        raise NotImplementedError("task 5.1: Module: parameters, buffers, submodules, state_dict, train/eval")

    # ----- modes and gradients ----------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Set train (``mode=True``) or eval behaviour in this module and all submodules
        (Dropout, BatchNorm ...). It does not change grad mode."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            raise NotImplementedError("task 5.1: Module: parameters, buffers, submodules, state_dict, train/eval")
        return self

    def eval(self) -> Module:
        """Same as ``train(False)``; autograd keeps recording."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Set ``requires_grad`` of every parameter (to freeze or unfreeze a model)."""
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters: to None (the default), or to zeros in
        place with ``set_to_none=False``."""
        raise NotImplementedError("task 5.1: Module: parameters, buffers, submodules, state_dict, train/eval")

    # ----- dtype ------------------------------------------------------------------------
    def _apply(self, fn: Callable[[np.ndarray], np.ndarray]) -> Module:
        """Convert every parameter (in place: the Parameter objects stay the same),
        gradient and buffer with ``fn`` on its array."""
        raise NotImplementedError("task 5.1: Module: parameters, buffers, submodules, state_dict, train/eval")

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """``to(dtype)`` casts floating point parameters and buffers (integer ones are left
        alone); ``to("cuda")`` / ``to("cpu")`` moves them (in place: the parameters stay
        the same objects) to assignment 6's device or back."""
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        for arg in args:
            if isinstance(arg, dtypes.DType):
                dtype = arg
            elif isinstance(arg, str) and arg.split(":")[0] in ("cpu", "cuda"):
                device = arg
            else:
                raise TypeError(f"to() got an unexpected argument {arg!r}")
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        if device is not None:
            from ..device_state import to_device_array, to_host_array

            move = to_device_array if str(device).startswith("cuda") else to_host_array
            if str(device).startswith("cuda"):
                from ..cuda import device as _load_triton  # noqa: F401 - triton, or its message
            self._apply(move)
        if dtype is None:
            return self
        if not dtype.is_floating_point:
            raise TypeError("nn.Module.to only accepts floating point dtypes, "
                            f"but got desired dtype={dtype}")
        target = dtype.np
        return self._apply(lambda a: a.astype(target) if a.dtype.kind == "f" else a)

    def cuda(self) -> Module:
        return self.to("cuda")

    def cpu(self) -> Module:
        return self.to("cpu")

    def float(self) -> Module:
        return self.to(dtypes.float32)

    def double(self) -> Module:
        return self.to(dtypes.float64)

    def half(self) -> Module:
        return self.to(dtypes.float16)

    # ----- state_dict -------------------------------------------------------------------
    def _save_to_state_dict(self, destination: dict[str, Any], prefix: str,
                            keep_vars: bool) -> None:
        """Put this module's own parameters and persistent buffers in ``destination``."""
        # HINT: keep_vars=False stores history-free aliases (tensor._alias()), not copies
        raise NotImplementedError("task 5.1: Module: parameters, buffers, submodules, state_dict, train/eval")

    def state_dict(self, *, destination: dict[str, Any] | None = None, prefix: str = "",
                   keep_vars: bool = False) -> dict[str, Any]:
        """An ordered dict from dotted names to the tensors of every parameter and
        persistent buffer: this module's own first (parameters, then buffers), then each
        child's under ``"<child>."``. Shared tensors appear under every name. Values share
        storage with the module (no copy) and carry no autograd history unless
        ``keep_vars=True``, which returns the Parameters themselves."""
        raise NotImplementedError("task 5.1: Module: parameters, buffers, submodules, state_dict, train/eval")

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str,
                              missing_keys: list[str], unexpected_keys: list[str],
                              error_msgs: list[str]) -> None:
        """Copy this module's own entries of ``state_dict`` in place; record missing and
        unexpected keys and size mismatches."""
        # HINT: copy values into the existing arrays (``param.data[...] = value.data``),
        # HINT: so Parameters keep their identity (an optimizer holds them).
        raise NotImplementedError("task 5.1: Module: parameters, buffers, submodules, state_dict, train/eval")

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True,
                        ) -> _IncompatibleKeys:
        """Copy parameters and persistent buffers from ``state_dict`` into this module.

        With ``strict`` (the default) missing or unexpected keys raise a RuntimeError, as
        does a shape mismatch in any mode. Returns ``(missing_keys, unexpected_keys)``.
        """
        raise NotImplementedError("task 5.1: Module: parameters, buffers, submodules, state_dict, train/eval")

    # ----- printing ---------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The module's own settings for ``repr`` (one line each); override in layers."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({name}): {_addindent(repr(module), 2)}"
                       for name, module in self._modules.items()]
        lines = extra_lines + child_lines
        body = ""
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                body = extra_lines[0]
            else:
                body = "\n  " + "\n  ".join(lines) + "\n"
        return f"{self._get_name()}({body})"
