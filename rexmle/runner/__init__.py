"""Running agents: workspaces, sandboxes, the validation server, run records and the executor."""
