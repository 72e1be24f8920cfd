"""Distributed training: which process this is, and a writer per the usual patterns.

    import summarylib as sl
    from summarylib.distributed import create_distributed_writer, reduce_scalar

    writer = create_distributed_writer("logs/run1")            # rank 0 writes; others no-op
    with writer.as_default(step=step):
        sl.scalar("loss", reduce_scalar(loss))                  # mean over ranks (torch)

``create_distributed_writer(logdir, per_rank=True)`` gives every rank its own run,
``<logdir>/rank_<k>`` (or ``rank_template``), so no two processes ever share a file.

The rank comes from, in order: ``torch.distributed`` when it is already imported and
initialized; JAX's ``jax.process_index()`` when JAX is already imported and runs several
processes; the environment variables that launchers set (``RANK``/``WORLD_SIZE`` from
torchrun and Lightning, ``OMPI_COMM_WORLD_RANK``/``OMPI_COMM_WORLD_SIZE`` from Open MPI,
``PMI_RANK``/``PMI_SIZE``, ``SLURM_PROCID``/``SLURM_NTASKS``); else rank 0 of 1. No
framework is imported to find out.
"""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["RankInfo", "create_distributed_writer", "rank_info", "reduce_scalar"]

_ENV_PAIRS = (("RANK", "WORLD_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
              ("PMI_RANK", "PMI_SIZE"), ("SLURM_PROCID", "SLURM_NTASKS"))


class RankInfo:
    """This process's ``rank`` among ``world_size``, and where that was learned."""

    __slots__ = ("rank", "source", "world_size")

    def __init__(self, rank: int, world_size: int, source: str) -> None:
        self.rank, self.world_size, self.source = rank, world_size, source

    def __repr__(self) -> str:
        return f"RankInfo(rank={self.rank}, world_size={self.world_size}, source={self.source!r})"


def rank_info() -> RankInfo:
    """This process's rank (see the module docstring for the order of the sources)."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return RankInfo(dist.get_rank(), dist.get_world_size(), "torch.distributed")
    jax = sys.modules.get("jax")
    if jax is not None:
        try:
            count = jax.process_count()
            if count > 1:
                return RankInfo(jax.process_index(), count, "jax")
        except Exception:  # not initialized as a multi-process run
            pass
    for rank_var, size_var in _ENV_PAIRS:
        rank, size = os.environ.get(rank_var), os.environ.get(size_var)
        if rank is not None and rank.strip().isdigit():
            world = int(size) if size and size.strip().isdigit() else int(rank) + 1
            return RankInfo(int(rank), max(world, int(rank) + 1), rank_var)
    return RankInfo(0, 1, "default")


def create_distributed_writer(
    logdir: str | os.PathLike[str], *, per_rank: bool = False,
    rank_template: str = "rank_{rank}", **writer_options: Any,
) -> Any:
    """A writer for this process: rank 0's file writer and no-op writers elsewhere, or
    (``per_rank=True``) a writer of the run ``<logdir>/<rank_template>`` on every rank.

    ``writer_options`` go to :func:`summarylib.create_file_writer`.

    Raises:
      ValueError: ``rank_template`` does not hold ``{rank}`` or would leave ``logdir``.
    """
    from summarylib.creation import create_file_writer, create_noop_writer
    from summarylib.writer._path_safety import safe_component

    info = rank_info()
    root = os.fspath(logdir)
    if not per_rank:
        if info.rank != 0:
            return create_noop_writer()
        return create_file_writer(root, **writer_options)
    if "{rank}" not in rank_template:
        raise ValueError("create_distributed_writer: 'rank_template' must contain {rank}, "
                         f"got {rank_template!r}")
    name = safe_component(rank_template.format(rank=info.rank, world_size=info.world_size),
                          "create_distributed_writer", "rank_template")
    return create_file_writer(f"{root.rstrip('/')}/{name}", **writer_options)


def reduce_scalar(value: Any, op: str = "mean") -> float:
    """``value`` reduced over every rank of ``torch.distributed`` (``"mean"``, ``"sum"``,
    ``"max"``, ``"min"``); every rank gets the result. Without an initialized process
    group it is ``float(value)``. Call it on every rank (it is a collective)."""
    if op not in ("mean", "sum", "max", "min"):
        raise ValueError(f"reduce_scalar: 'op' must be mean, sum, max or min, got {op!r}")
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return float(value)
    import torch

    tensor = torch.as_tensor(value, dtype=torch.float64).detach().reshape(()).clone()
    if dist.get_backend() == "nccl":
        tensor = tensor.cuda()
    reduce_op = {"mean": dist.ReduceOp.SUM, "sum": dist.ReduceOp.SUM,
                 "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN}[op]
    dist.all_reduce(tensor, op=reduce_op)
    result = float(tensor.item())
    return result / dist.get_world_size() if op == "mean" else result
