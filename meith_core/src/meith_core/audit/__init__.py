"""The audit trail: redaction and the append-only writer."""
