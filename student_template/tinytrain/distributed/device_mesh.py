"""DeviceMesh: the ranks arranged in a grid (PP x DP x TP ...), with a process group along
each dimension, as ``torch.distributed.device_mesh``."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from .collectives import api


class DeviceMesh:
    """Ranks 0..N-1 laid out row-major in ``shape`` (the last dimension varies fastest).
    ``mesh["tp"]`` is the 1-D mesh along a named dimension through this rank; its
    ``get_group()`` is the process group of those ranks. Every rank must build the same
    mesh (it makes process groups, which every rank makes in the same order)."""

    def __init__(self, shape: tuple[int, ...], mesh_dim_names: tuple[str, ...]) -> None:
        if len(shape) != len(mesh_dim_names):
            raise ValueError("one name per mesh dimension")
        world = api.get_world_size()
        if int(np.prod(shape)) != world:
            raise ValueError(f"a mesh of shape {tuple(shape)} needs {int(np.prod(shape))} ranks, "
                             f"the world has {world}")
        self.shape = tuple(int(s) for s in shape)
        self.mesh_dim_names = tuple(mesh_dim_names)
        self.mesh = np.arange(world).reshape(self.shape)
        rank = api.get_rank()
        self.coordinate = tuple(int(c) for c in np.argwhere(self.mesh == rank)[0])
        self._groups: dict[str, Any] = {}
        for dim, name in enumerate(self.mesh_dim_names):
            others = [range(n) for d, n in enumerate(self.shape) if d != dim]
            for fixed in itertools.product(*others):
                index: list[Any] = list(fixed)
                index.insert(dim, slice(None))
                ranks = [int(r) for r in self.mesh[tuple(index)]]
                group = api.new_group(ranks)
                if rank in ranks:
                    self._groups[name] = group

    def get_group(self, mesh_dim: str) -> Any:
        """The process group along ``mesh_dim`` that holds this rank."""
        return self._groups[mesh_dim]

    def get_local_rank(self, mesh_dim: str) -> int:
        """This rank's coordinate along ``mesh_dim``."""
        return self.coordinate[self.mesh_dim_names.index(mesh_dim)]

    def size(self, mesh_dim: str | None = None) -> int:
        if mesh_dim is None:
            return int(np.prod(self.shape))
        return self.shape[self.mesh_dim_names.index(mesh_dim)]

    def __getitem__(self, mesh_dim: str) -> _SubMesh:
        return _SubMesh(self, mesh_dim)

    def __repr__(self) -> str:
        return f"DeviceMesh({self.mesh.tolist()}, mesh_dim_names={self.mesh_dim_names})"


class _SubMesh:
    def __init__(self, mesh: DeviceMesh, name: str) -> None:
        self._mesh, self._name = mesh, name

    def get_group(self) -> Any:
        return self._mesh.get_group(self._name)

    def get_local_rank(self) -> int:
        return self._mesh.get_local_rank(self._name)

    def size(self) -> int:
        return self._mesh.size(self._name)


def init_device_mesh(device_type: str, mesh_shape: tuple[int, ...],
                     mesh_dim_names: tuple[str, ...]) -> DeviceMesh:
    """``DeviceMesh(mesh_shape, mesh_dim_names)`` (``device_type`` is accepted for
    torch's signature; tinytrain computes on the CPU)."""
    return DeviceMesh(tuple(mesh_shape), tuple(mesh_dim_names))
