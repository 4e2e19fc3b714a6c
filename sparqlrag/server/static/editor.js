"use strict";
// YASGUI on this server's /sparql (queries and updates), with the project's prefixes, and the
// collections' graphs listed beside it: a click opens a query on that graph in a new tab.
(() => {
  const { config, headers, api, element, withPrefixes: query } = sparqlrag;
  const endpoint = new URL("sparql", location.href).href;
  let yasgui = null; // stays null when YASGUI's script did not load
  listGraphs();
  if (typeof Yasgui === "undefined") {
    // neither this server's copy (fetched by `make install` or the Docker build) nor the public CDN
    document.getElementById("yasgui").replaceChildren(
      element(
        "p",
        { class: "error", id: "no-editor" },
        "The SPARQL editor (YASGUI) could not be loaded: this installation has no copy of it and the public CDN " +
          "is out of reach. The endpoint works without it: send queries to " + endpoint + " from any SPARQL client.",
      ),
    );
    return;
  }

  Yasgui.Yasqe.defaults.value = query(
    "SELECT ?graph (COUNT(*) AS ?triples) WHERE {\n  GRAPH ?graph { ?s ?p ?o }\n}\nGROUP BY ?graph\nORDER BY ?graph",
  );
  yasgui = new Yasgui(document.getElementById("yasgui"), {
    requestConfig: { endpoint, method: "POST", headers: () => headers() },
    copyEndpointOnNewTab: true,
    endpointCatalogueOptions: { getData: () => [{ endpoint }] },
    persistenceId: "sparqlrag",
  });
  window.yasgui = yasgui; // for the browser tests and the console

  function open(name, body) {
    if (!yasgui) return;
    const tab = yasgui.addTab(true, { name }); // the rest from this page's defaults: endpoint, token
    tab.setQuery(query(body));
  }

  async function listGraphs() {
    const list = document.getElementById("graphs");
    try {
      const { collections } = await (await api("api/v1/collections")).json();
      list.replaceChildren();
      for (const c of collections) {
        const graphs = [
          ["knowledge", `${config.base}graph/${c.name}`, `${c.facts} triples`],
          ["sources", `${config.base}graph/${c.name}/source`, `${c.documents} documents, ${c.chunks} chunks`],
          ["traces", `${config.base}graph/${c.name}/trace`, "answers"],
        ];
        const items = graphs.map(([kind, iri, counts]) => {
          const link = element("a", { href: "#", title: iri }, kind);
          link.addEventListener("click", (event) => {
            event.preventDefault();
            open(`${c.name} ${kind}`, `SELECT ?s ?p ?o WHERE {\n  GRAPH <${iri}> { ?s ?p ?o }\n}\nLIMIT 100`);
          });
          return element("li", {}, link, ` (${counts})`);
        });
        list.append(element("li", { class: "collection" }, c.name, element("ul", {}, ...items)));
      }
    } catch (error) {
      list.replaceChildren(element("li", { class: "error" }, String(error.message)));
    }
  }
})();
