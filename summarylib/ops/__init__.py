"""Summary ops: one module per summary kind (metadata, a pure ``*_pb`` encoder, the op)."""
