"""Queries built for users: natural-language questions turned into checked SPARQL."""
