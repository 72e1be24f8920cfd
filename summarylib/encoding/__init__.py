"""Value encoding: user data to protobuf wire bytes, and the one owner of the byte layout.

Internal: every module here is private (underscored) and may change without notice; the
public API is what :mod:`summarylib` exports.

``_wire`` holds the hand-written protobuf primitives used on hot paths,
``_events`` composes Event/Summary/Value bytes from them (and defines the field keys, the
step field and the scalar Event packers), ``_tfrecord`` frames records (the masked CRC and
the CRC tables), ``_template_framing`` frames runs of one template at once, ``_compact``
defines the markers of compact queue records, ``_plugins`` each plugin's metadata,
``_arrays`` turns user data (numbers, numpy arrays, framework tensors) into numpy without
importing any framework, and ``_tensor`` converts numpy arrays to and from ``TensorProto``.
The writer, the ops and the readers take these definitions from here; nothing here imports
them back.
"""
