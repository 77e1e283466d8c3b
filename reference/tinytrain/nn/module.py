"""Module: parameters, submodules and the train/eval switch."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .parameter import Parameter


class Module:
    """Base class of layers and models; assigning a Parameter or Module registers it."""

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "training", True)

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        object.__setattr__(self, name, value)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define forward")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Parameter]]:
        seen: set[int] = set()
        for name, module in self.named_modules(prefix):
            for pname, param in module._parameters.items():
                if id(param) not in seen:
                    seen.add(id(param))
                    yield (f"{name}.{pname}" if name else pname), param

    def parameters(self) -> Iterator[Parameter]:
        for _, param in self.named_parameters():
            yield param

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        yield prefix, self
        for name, module in self._modules.items():
            yield from module.named_modules(f"{prefix}.{name}" if prefix else name)

    def modules(self) -> Iterator[Module]:
        for _, module in self.named_modules():
            yield module

    def train(self, mode: bool = True) -> Module:
        """Switch train/eval behaviour (Dropout ...); this does not change grad mode."""
        for module in self.modules():
            object.__setattr__(module, "training", bool(mode))
        return self

    def eval(self) -> Module:
        """Same as ``train(False)``; autograd keeps recording."""
        return self.train(False)

    def zero_grad(self) -> None:
        for param in self.parameters():
            param.grad = None
