"""Every use case written once: each takes a request model and a checked collection, and returns
a view or a refusal; the HTTP routes, the MCP tools and the CLI commands are its adapters."""
