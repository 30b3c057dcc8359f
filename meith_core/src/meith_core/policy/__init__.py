"""Policy: grants, the permission service, approvals, child tokens, sessions and confinement of started processes."""
