"""The writer stack: records, event files, the buffered resource, the default-writer context."""
