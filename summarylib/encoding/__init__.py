"""Value encoding: user data to protobuf wire bytes.

``wire`` holds the hand-written protobuf primitives used on hot paths,
``events`` composes Event/Summary/Value bytes from them, ``arrays`` turns user
data (numbers, numpy arrays, framework tensors) into numpy without importing any
framework, and ``tensor`` converts numpy arrays to and from ``TensorProto``.
"""
