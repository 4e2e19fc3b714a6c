"""What the server keeps about documents and collections: the collection registry and the
librarian's catalogue (source graphs), the on-disk library of uploaded bytes and pending
markers, the per-document locks, and knowledge cores. It sits below extraction, retrieval,
ontology and queries, and imports only `store` (docs/architecture.md)."""
