"""Host computations whose results a ``torch.compile`` graph keeps as constants.

An op traced by dynamo may need numbers computed on the host from constants of the call
(a histogram's bucket edges, the order numpy adds ``n`` values in). Traced, such Python
and numpy code would become graph operations or break the graph; marked with
``torch._dynamo.assume_constant_result``, it runs once when traced and the graph holds
its result. The marking needs torch, so this module is imported only once torch is (by
an op that finds dynamo tracing).
"""

from __future__ import annotations

import torch

from summarylib.encoding._pairwise import pairwise_plan
from summarylib.ops._bins import fixed_edges

__all__ = ["constant_edges", "constant_plan"]

#: :func:`~summarylib.encoding._pairwise.pairwise_plan`, run when traced.
constant_plan = torch._dynamo.assume_constant_result(pairwise_plan)  # type: ignore[no-untyped-call]
#: :func:`~summarylib.ops._bins.fixed_edges`, run when traced.
constant_edges = torch._dynamo.assume_constant_result(fixed_edges)  # type: ignore[no-untyped-call]
