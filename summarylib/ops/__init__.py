"""Summary ops: one module per summary kind (metadata, a pure ``*_pb`` encoder, the op and
its core).

The per-kind modules (``summarylib.ops.image``, ...) are the kinds' API, also exported by
:mod:`summarylib`; the underscored modules (``_resolve``, ``_emit``, ``_device``, ...) are
internal and may change without notice.
"""
