"""Distributed patterns with real torch.distributed processes (gloo on 127.0.0.1, 4 ranks)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from summarylib.distributed import rank_info
from tests.observe import observe

CHILD = '''
import os, sys
import torch
import torch.distributed as dist
import summarylib as sl
from summarylib.distributed import create_distributed_writer, rank_info, reduce_scalar

rank, world = int(sys.argv[1]), int(sys.argv[2])
logdir, port = sys.argv[3], sys.argv[4]
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                        world_size=world)
info = rank_info()
assert (info.rank, info.world_size, info.source) == (rank, world, "torch.distributed"), info
zero = create_distributed_writer(logdir + "/zero")
each = create_distributed_writer(logdir + "/each", per_rank=True)
for step in range(5):
    loss = float(rank + step)
    mean = reduce_scalar(loss)                  # every rank calls the collective
    with zero.as_default(step=step):
        sl.scalar("loss_mean", mean)
    with each.as_default(step=step):
        sl.scalar("loss", loss)
zero.close()
each.close()
dist.barrier()
dist.destroy_process_group()
print("ok", rank)
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_four_gloo_ranks_both_patterns(tmp_path: Path) -> None:
    pytest.importorskip("torch.distributed")
    world, port = 4, free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(r), str(world), str(tmp_path),
                               str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for r in range(world)]
    outs = [p.communicate(timeout=240) for p in procs]
    for p, (_out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err[-3000:]
    assert sorted(o.strip() for o, _ in outs) == [f"ok {r}" for r in range(world)]
    # rank 0 only: one event file, the mean of the four ranks' losses.
    zero_files = [p for p in (tmp_path / "zero").rglob("*") if p.is_file()]
    assert len(zero_files) == 1
    assert observe(tmp_path / "zero")["."]["loss_mean"].values == [
        (0 + 1 + 2 + 3) / 4 + s for s in range(5)]
    # one run per rank, one file each, never shared.
    each = observe(tmp_path / "each")
    assert sorted(each) == [f"rank_{r}" for r in range(world)]
    for r in range(world):
        files = list((tmp_path / "each" / f"rank_{r}").iterdir())
        assert len(files) == 1 and f".{os.getpid()}." not in files[0].name
        assert each[f"rank_{r}"]["loss"].values == [float(r + s) for s in range(5)]
    pids = {f.name.split(".")[5] for f in (tmp_path / "each").rglob("*tfevents*")}
    assert len(pids) == world  # four processes, four files


@pytest.mark.parametrize("env,expected", [
    ({}, (0, 1, "default")),
    ({"RANK": "3", "WORLD_SIZE": "8"}, (3, 8, "RANK")),
    ({"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "4"}, (2, 4, "OMPI_COMM_WORLD_RANK")),
    ({"SLURM_PROCID": "5", "SLURM_NTASKS": "6"}, (5, 6, "SLURM_PROCID")),
])
def test_rank_from_the_environment(monkeypatch: pytest.MonkeyPatch, env: dict[str, str],
                                   expected: tuple[int, int, str]) -> None:
    for var in ("RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS"):
        monkeypatch.delenv(var, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    info = rank_info()
    assert (info.rank, info.world_size, info.source) == expected


def test_rank_nonzero_gets_a_noop_writer(monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path) -> None:
    import summarylib as sl
    from summarylib.distributed import create_distributed_writer

    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    writer = create_distributed_writer(tmp_path / "logs")
    with writer.as_default(step=0):
        assert sl.scalar("x", 1.0) is False
    assert not (tmp_path / "logs").exists()
    with pytest.raises(ValueError, match=r"must contain \{rank\}"):
        create_distributed_writer(tmp_path, per_rank=True, rank_template="same")
