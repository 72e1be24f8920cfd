"""Logging from the hooks of training frameworks, through summarylib's writer.

One module per framework, each importing its framework only when used:

* :mod:`summarylib.integrations.clu` — ``MetricWriter`` for JAX/Flax loops (clu's interface,
  with or without clu and TensorFlow);
* :mod:`summarylib.integrations.torch` — ``watch(model)``: weight and gradient histograms.

Importing this package imports no framework.
"""
