"""The call layer: tool definitions, the context a tool gets, the catalogue, the call record, the pipeline and executor, cancellation and tasks."""
