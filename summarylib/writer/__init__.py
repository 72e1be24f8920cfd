"""The writer stack: records, event files, the buffered resource, the default-writer context.

Internal: every module here is private (underscored) and may change without notice. The
public API is what :mod:`summarylib` exports (``create_file_writer``, ``SummaryWriter``,
``Output``, ...); docs/architecture.md describes these parts for people changing them.
"""
