"""Permissions: grants, plugin approvals and the two-gate PermissionService."""
