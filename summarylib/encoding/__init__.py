"""Value encoding: user data to protobuf wire bytes, and the one owner of the byte layout.

``wire`` holds the hand-written protobuf primitives used on hot paths,
``events`` composes Event/Summary/Value bytes from them (and defines the field keys, the
step field and the scalar Event packers), ``tfrecord`` frames records (the masked CRC and
the CRC tables), ``template_framing`` frames runs of one template at once, ``compact``
defines the markers of compact queue records, ``plugins`` each plugin's metadata,
``arrays`` turns user data (numbers, numpy arrays, framework tensors) into numpy without
importing any framework, and ``tensor`` converts numpy arrays to and from ``TensorProto``.
The writer, the ops and the readers take these definitions from here; nothing here imports
them back.
"""
