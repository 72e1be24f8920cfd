"""numpy's float64 sum, in numpy's order, as operations of compiled code.

``numpy.add.reduce`` of a contiguous float64 array (``values.sum()``) adds ``0.0`` to its
*pairwise sum*: a block of at most 128 values is summed in eight interleaved partial sums
(``r[j] += a[i + j]``), combined as ``((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))``,
then the values past the last multiple of eight one by one; fewer than eight values are
added one by one to ``0.0``; a longer array is split at half its length rounded down to a
multiple of eight and the two sums added. Floating-point addition is not associative, so
a compiled function reproduces numpy's result bit for bit only by adding in this order.

:func:`pairwise_plan` lays the order out for a length known when the code is traced
(leaves of equal length are summed together, the tree's nodes level by level);
:func:`jax_pairwise_sum` and :func:`torch_pairwise_sum` run it on a 1-D float64 array as
that framework's operations (a dozen or so per level of the tree, whatever the length).
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["PairwisePlan", "jax_pairwise_sum", "pairwise_plan", "torch_pairwise_sum"]

_BLOCK = 128  # numpy's PW_BLOCKSIZE


class PairwisePlan(NamedTuple):
    """The order of numpy's pairwise sum of ``n`` values.

    ``leaves``: ``(length, starts)`` per leaf length: the blocks summed directly; their
    results, in this order, are the tree's first node ids. ``levels``: ``(left, right)``
    node ids per level of the tree, each level's sums taking the next ids. ``root``: the
    id of the whole sum (-1 for no values).
    """

    leaves: tuple[tuple[int, tuple[int, ...]], ...]
    levels: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]
    root: int


def pairwise_plan(n: int) -> PairwisePlan:
    """The order numpy adds ``n`` values in (see the module docstring); plain Python
    ints, so that compiled code can hold it as constants."""
    if n == 0:
        return PairwisePlan((), (), -1)
    blocks: list[tuple[int, int]] = []  # (start, length), in position order
    joins: list[tuple[tuple[bool, int], tuple[bool, int], int]] = []  # children, height

    def build(start: int, count: int) -> tuple[tuple[bool, int], int]:
        if count <= _BLOCK:
            blocks.append((start, count))
            return (True, len(blocks) - 1), 0
        half = count // 2
        half -= half % 8
        left, hl = build(start, half)
        right, hr = build(start + half, count - half)
        height = max(hl, hr) + 1
        joins.append((left, right, height))
        return (False, len(joins) - 1), height

    top, _ = build(0, n)
    by_length: dict[int, list[int]] = {}
    for i, (_, length) in enumerate(blocks):
        by_length.setdefault(length, []).append(i)
    block_id = [0] * len(blocks)
    leaves: list[tuple[int, tuple[int, ...]]] = []
    next_id = 0
    for length, members in sorted(by_length.items()):
        for i in members:
            block_id[i] = next_id
            next_id += 1
        leaves.append((length, tuple(blocks[i][0] for i in members)))
    join_id = [0] * len(joins)

    def node(ref: tuple[bool, int]) -> int:
        return block_id[ref[1]] if ref[0] else join_id[ref[1]]

    levels: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    for height in range(1, max((h for _, _, h in joins), default=0) + 1):
        members = [j for j, (_, _, h) in enumerate(joins) if h == height]
        left = tuple(node(joins[j][0]) for j in members)
        right = tuple(node(joins[j][1]) for j in members)
        for j in members:
            join_id[j] = next_id
            next_id += 1
        levels.append((left, right))
    return PairwisePlan(tuple(leaves), tuple(levels), node(top))


def _leaf_sums(take: Any, zeros: Any, length: int, starts: Any) -> Any:
    # The sums of the blocks of one length starting at ``starts``, as numpy adds a block:
    # take(starts, length) gives them as rows.
    rows = take(starts, length)
    if length < 8:
        total = zeros(len(starts))
        for i in range(length):
            total = total + rows[:, i]
        return total
    r = rows[:, 0:8]
    full = length - length % 8
    for i in range(8, full, 8):
        r = r + rows[:, i : i + 8]
    total = (((r[:, 0] + r[:, 1]) + (r[:, 2] + r[:, 3]))
             + ((r[:, 4] + r[:, 5]) + (r[:, 6] + r[:, 7])))
    for i in range(full, length):
        total = total + rows[:, i]
    return total


def jax_pairwise_sum(values: Any) -> Any:
    """``numpy.add.reduce`` of the float64 JAX array ``values`` (traced under
    ``jax.enable_x64``) over its first axis, bit for bit: a float64 scalar for 1-D
    ``values``, else one sum per trailing position (several sums in one pass: their
    compiled code is shared)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    plan = pairwise_plan(int(values.shape[0]))
    tail = tuple(values.shape[1:])
    if plan.root < 0:
        return jnp.zeros(tail, jnp.float64)
    # Loops (fori_loop) rather than one operation per step of the order: unrolled, a
    # 100k-value sum was ~400 operations and took XLA's CPU compiler 3 s; the loops'
    # bodies are compiled once. The additions and their order are the same.
    sums = []
    for length, starts in plan.leaves:
        rows = values[jnp.asarray(starts)[:, None] + jnp.arange(length)[None, :]]
        if length < 8:
            total = jnp.zeros((len(starts), *tail), jnp.float64)
            for i in range(length):
                total = total + rows[:, i]
            sums.append(total)
            continue
        full = length - length % 8

        def chunk(c: Any, r: Any, rows: Any = rows) -> Any:
            return r + jax.lax.dynamic_slice_in_dim(rows, c * 8, 8, axis=1)

        r = jax.lax.fori_loop(1, full // 8, chunk, rows[:, 0:8])
        total = (((r[:, 0] + r[:, 1]) + (r[:, 2] + r[:, 3]))
                 + ((r[:, 4] + r[:, 5]) + (r[:, 6] + r[:, 7])))
        for i in range(full, length):
            total = total + rows[:, i]
        sums.append(total)
    leaves = sum(len(starts) for _, starts in plan.leaves)
    if not plan.levels:
        return _plus_zero(jnp, jnp.concatenate(sums)[plan.root])
    # Each level's sums go to the next ids; a level narrower than the widest reads and
    # writes a scratch slot past the last id (never read as a result).
    scratch = plan.root + 1
    width = max(len(left) for left, _ in plan.levels)
    left_ids = np.full((len(plan.levels), width), scratch, np.int32)
    right_ids = np.full_like(left_ids, scratch)
    out_ids = np.full_like(left_ids, scratch)
    next_id = leaves
    for i, (left, right) in enumerate(plan.levels):
        left_ids[i, : len(left)] = left
        right_ids[i, : len(right)] = right
        out_ids[i, : len(left)] = np.arange(next_id, next_id + len(left))
        next_id += len(left)
    lefts, rights, outs = (jnp.asarray(a) for a in (left_ids, right_ids, out_ids))

    def level(i: Any, nodes: Any) -> Any:
        return nodes.at[outs[i]].set(nodes[lefts[i]] + nodes[rights[i]])

    nodes = jnp.concatenate([*sums, jnp.zeros((scratch + 1 - leaves, *tail), jnp.float64)])
    nodes = jax.lax.fori_loop(0, len(plan.levels), level, nodes)
    return _plus_zero(jnp, nodes[plan.root])


def _plus_zero(jnp: Any, total: Any) -> Any:
    # numpy adds the sum to 0.0: -0.0 becomes +0.0 (written out, so that no simplifier
    # that ignores the sign of zero drops it).
    return jnp.where(total == 0, jnp.float64(0.0), total)


def torch_pairwise_sum(values: Any, plan: PairwisePlan) -> Any:
    """``numpy.add.reduce`` of the 1-D float64 tensor ``values``, bit for bit, as torch
    operations (traceable by dynamo): a float64 scalar tensor. ``plan``:
    :func:`pairwise_plan` of its length (computed outside the trace)."""
    import torch

    if plan.root < 0:
        return torch.zeros((), dtype=torch.float64, device=values.device)

    def take(starts: Any, length: int) -> Any:
        index = (torch.tensor(starts, device=values.device)[:, None]
                 + torch.arange(length, device=values.device)[None, :])
        return values[index]

    def zeros(count: int) -> Any:
        return torch.zeros(count, dtype=torch.float64, device=values.device)

    nodes = torch.cat([_leaf_sums(take, zeros, length, starts)
                       for length, starts in plan.leaves])
    for left, right in plan.levels:
        left_t = torch.tensor(left, device=values.device)
        right_t = torch.tensor(right, device=values.device)
        nodes = torch.cat([nodes, nodes[left_t] + nodes[right_t]])
    total = nodes[plan.root]
    return torch.where(total == 0, torch.zeros_like(total), total)

