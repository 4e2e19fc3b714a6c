"""The HTTP skin: a starlette app over the store and (later) the RAG services."""
