"""Models: embedder (fastembed), reranker (flashrank | embedding cosine), LLM clients, prompts.

Nothing here imports the store or anything above it.
"""
