"""Answering questions: Document RAG and Graph RAG, with an explainability trace for each answer."""
