"""``DeviceMesh`` and ``init_device_mesh`` (``torch.distributed.device_mesh``): the ranks laid out as an n-D array,
with one process group per dimension for each rank (the ranks that share its coordinates on every other
dimension).

Each dimension's groups are made with ``new_group`` (every rank of the default group takes part, in the same
order), keeping the mesh's order of ranks; a dimension that spans the whole default group uses it. Slicing by
dimension names (``mesh["tp"]``, ``mesh["dp", "tp"]``) gives a mesh of this rank's slice that shares the
parent's groups. DTensor, ``from_group`` and flattening dimensions are not there.
"""
from __future__ import annotations

import numpy as np

from ..core.factories import tensor as make_tensor
from .process_group import GroupMember, default_group, get_rank, init_process_group, is_initialized, new_group

__all__ = ["DeviceMesh", "init_device_mesh"]


def _groups_along(rank_map: np.ndarray, dim: int) -> list:
    """The rank lists of the 1-D slices of ``rank_map`` along ``dim``, in a fixed order."""
    return np.moveaxis(rank_map, dim, -1).reshape(-1, rank_map.shape[dim]).tolist()


class DeviceMesh:
    """Ranks laid out as ``mesh`` (an array-like of global ranks), on ``device_type`` devices."""

    def __init__(self, device_type: str, mesh=None, *, mesh_dim_names=None, backend_override=None,
                 _init_backend: bool = True, _dim_groups=None):
        if mesh is None:
            raise ValueError("DeviceMesh needs a mesh: an array of global ranks")
        rank_map = np.asarray(mesh.tolist() if hasattr(mesh, "tolist") else mesh, dtype=np.int64)
        if rank_map.ndim == 0:
            raise ValueError("the mesh must have at least one dimension")
        if len(np.unique(rank_map)) != rank_map.size:
            raise RuntimeError(f"DeviceMesh cannot have duplicate values, but found {rank_map.tolist()}")
        if mesh_dim_names is not None:
            mesh_dim_names = tuple(mesh_dim_names)
            if len(set(mesh_dim_names)) != len(mesh_dim_names):
                raise RuntimeError("Each mesh_dim_name must be unique. Found repeated mesh_dim_name in "
                                   f"mesh_dim_names {mesh_dim_names}")
            if len(mesh_dim_names) != rank_map.ndim:
                raise RuntimeError("mesh_shape and mesh_dim_names should have same length! Found "
                                   f"len(mesh_dim_names): {len(mesh_dim_names)} and len(mesh_shape):{rank_map.ndim}.")
        if backend_override is not None and any(o not in (None, (None, None)) for o in backend_override):
            raise ValueError("backend_override is not supported: every mesh dimension uses the default group's "
                             "backends")
        self.device_type = device_type
        self._rank_map = rank_map
        self._mesh_dim_names = mesh_dim_names
        if not is_initialized():
            init_process_group()
        where = np.argwhere(rank_map == get_rank())
        self._coordinate_on_dim = tuple(int(c) for c in where[0]) if where.size else None
        if _dim_groups is not None:
            self._dim_groups = list(_dim_groups)
        elif _init_backend:
            self._dim_groups = [self._make_dim_group(d) for d in range(rank_map.ndim)]

    def _make_dim_group(self, dim: int):
        """This rank's group along ``dim``; every rank makes every group of the dimension, in the same order."""
        world = default_group()
        mine = None
        for ranks in _groups_along(self._rank_map, dim):
            if sorted(ranks) == list(range(world.size())) and ranks == sorted(ranks):
                group = world
            else:
                group = new_group(ranks, sort_ranks=False)
            if get_rank() in ranks:
                mine = group
        return mine if mine is not None else GroupMember.NON_GROUP_MEMBER

    # --- shape -------------------------------------------------------------------------------------------------
    @property
    def mesh(self):
        """The global ranks, as an int32 cpu tensor shaped as the mesh."""
        return make_tensor(self._rank_map.astype(np.int32))

    @property
    def mesh_dim_names(self):
        return self._mesh_dim_names

    @property
    def ndim(self) -> int:
        return self._rank_map.ndim

    @property
    def shape(self) -> tuple:
        return tuple(self._rank_map.shape)

    def size(self, mesh_dim: int | None = None) -> int:
        return int(self._rank_map.size if mesh_dim is None else self._rank_map.shape[mesh_dim])

    # --- this rank ---------------------------------------------------------------------------------------------
    def get_rank(self) -> int:
        """This process's global rank."""
        return get_rank()

    def get_coordinate(self):
        """This rank's index on every dimension, or None when the mesh does not hold it."""
        return self._coordinate_on_dim

    def _dim_index(self, mesh_dim) -> int:
        if isinstance(mesh_dim, str):
            if not self._mesh_dim_names:
                raise KeyError("No `mesh_dim_names` found.")
            if mesh_dim not in self._mesh_dim_names:
                raise KeyError(f"Mesh dimension '{mesh_dim}' does not exist.",
                               f"Available mesh dimensions are: mesh_dim_names={self._mesh_dim_names}")
            return self._mesh_dim_names.index(mesh_dim)
        return mesh_dim

    def get_group(self, mesh_dim=None):
        """The group of ``mesh_dim`` (an index or a name; optional on a 1-D mesh)."""
        if not hasattr(self, "_dim_groups"):
            raise RuntimeError("DeviceMesh process groups not initialized!")
        if self.ndim > 1 and mesh_dim is None:
            raise RuntimeError(f"Found the DeviceMesh have {self.ndim} dimensions",
                               "Optional kwarg `mesh_dim` needs to be specified when device_mesh.ndim > 1.",
                               "If you want to get the list of all the ProcessGroups in the DeviceMesh,"
                               "please use `get_all_groups()` instead.")
        return self._dim_groups[0 if mesh_dim is None else self._dim_index(mesh_dim)]

    def get_all_groups(self) -> list:
        return [self.get_group(d) for d in range(self.ndim)]

    def get_local_rank(self, mesh_dim=None) -> int:
        """This rank's rank in the group of ``mesh_dim`` (its coordinate on that dimension)."""
        if self.ndim > 1 and mesh_dim is None:
            raise RuntimeError(f"Found the DeviceMesh have {self.ndim} dimensions",
                               "Optional kwarg `mesh_dim` needs to be specified when device_mesh.ndim > 1.")
        return get_rank(self.get_group(0 if mesh_dim is None else mesh_dim))

    # --- slicing -----------------------------------------------------------------------------------------------
    def __getitem__(self, mesh_dim_names) -> "DeviceMesh":
        if not self._mesh_dim_names:
            raise RuntimeError("Cannot slice a DeviceMesh without mesh_dim_names!")
        names = (mesh_dim_names,) if isinstance(mesh_dim_names, str) else tuple(mesh_dim_names)
        if any(n not in self._mesh_dim_names for n in names):
            raise KeyError(f"Invalid mesh_dim_names {names} specified. Valid mesh_dim_names are "
                           f"{list(self._mesh_dim_names)}.")
        dims = [self._mesh_dim_names.index(n) for n in names]
        if dims != sorted(dims):
            raise KeyError(f"Invalid mesh_dim_names {names} specified. Mesh dim indices should be in ascending "
                           f"order.")
        if names == self._mesh_dim_names:
            return self
        if self._coordinate_on_dim is None:
            raise RuntimeError("this rank is not part of the mesh: it has no slice of it")
        index = tuple(slice(None) if d in dims else c for d, c in enumerate(self._coordinate_on_dim))
        return DeviceMesh(self.device_type, self._rank_map[index], mesh_dim_names=names,
                          _dim_groups=[self._dim_groups[d] for d in dims])

    def __repr__(self):
        sizes = self.shape
        shown = (f"({', '.join(f'{k}={v}' for k, v in zip(self._mesh_dim_names, sizes))})" if self._mesh_dim_names
                 else f"{sizes}")
        strides = np.array(self._rank_map.strides) // self._rank_map.itemsize
        stride = tuple(() if size == 1 else int(s) for size, s in zip(sizes, strides))
        return f"DeviceMesh({shown}, '{self.device_type}', stride={stride})"

    def __eq__(self, other):
        return (isinstance(other, DeviceMesh) and self.device_type == other.device_type
                and np.array_equal(self._rank_map, other._rank_map) and self._mesh_dim_names == other._mesh_dim_names)

    def __hash__(self):
        return hash((self.device_type, self._rank_map.tobytes(), self.shape, self._mesh_dim_names))


def init_device_mesh(device_type: str, mesh_shape, *, mesh_dim_names=None, backend_override=None) -> DeviceMesh:
    """A mesh of ``mesh_shape`` over global ranks 0, 1, ... in row-major order (``init_process_group`` first when
    no group is there); every rank calls it with the same arguments."""
    if mesh_dim_names is not None:
        if len(set(mesh_dim_names)) != len(mesh_dim_names):
            raise RuntimeError("Each mesh_dim_name must be unique. Found repeated mesh_dim_name in mesh_dim_names "
                               f"{mesh_dim_names}")
        if len(mesh_shape) != len(mesh_dim_names):
            raise RuntimeError("mesh_shape and mesh_dim_names should have same length! Found "
                               f"len(mesh_dim_names): {len(mesh_dim_names)} and len(mesh_shape):{len(mesh_shape)}.")
    if device_type and not device_type.isalpha():
        raise RuntimeError(f"Device type with index is not supported but got {device_type}. ",
                           "If you maintained a 'npusim.device' object, it's recommended to pass in 'device.type'.")
    if not is_initialized():
        init_process_group()
    world_size = default_group().size()
    count = int(np.prod(mesh_shape))
    if count > world_size:
        raise RuntimeError(f"Mesh should not be bigger than default world size {world_size}, but found {count} "
                           f"ranks!")
    rank_map = np.arange(count, dtype=np.int64).reshape(tuple(mesh_shape))
    return DeviceMesh(device_type, rank_map, mesh_dim_names=mesh_dim_names, backend_override=backend_override)
