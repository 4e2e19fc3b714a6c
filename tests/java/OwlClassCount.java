// What Protégé does when it opens an ontology from a URL: the OWL API fetches and parses it.
// Prints, per URL, the number of classes in the ontology's signature and its ontology IRI.
import org.semanticweb.owlapi.apibinding.OWLManager;
import org.semanticweb.owlapi.model.IRI;
import org.semanticweb.owlapi.model.OWLOntology;
import org.semanticweb.owlapi.model.OWLOntologyManager;

public class OwlClassCount {
    public static void main(String[] args) throws Exception {
        for (String url : args) {
            OWLOntologyManager manager = OWLManager.createOWLOntologyManager();
            OWLOntology ontology = manager.loadOntologyFromOntologyDocument(IRI.create(url));
            String iri = ontology.getOntologyID().getOntologyIRI().map(IRI::toString).orElse("");
            System.out.println(ontology.getClassesInSignature().size() + " " + iri);
        }
    }
}
