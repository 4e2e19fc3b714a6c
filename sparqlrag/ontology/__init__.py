"""Ontologies: OWL files loaded into their own named graphs and into owlready2, so that
extraction can be guided by them and questions can become SPARQL over them."""
