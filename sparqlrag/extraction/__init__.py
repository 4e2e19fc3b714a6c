"""From documents to knowledge: decoding, chunking, extraction, provenance, the ingest pipeline."""
