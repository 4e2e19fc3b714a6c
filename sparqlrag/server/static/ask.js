"use strict";
// The ask page: a conversation. Each question goes to /api/v1/graph-rag or /api/v1/document-rag
// with the earlier turns (a follow-up is made to stand alone there), as a stream of server-sent
// events; each turn keeps its answer as it came, its numbered sources (each chunk with the
// sentence of the fact it supports marked), the facts used, and the explored subgraph drawn.
(() => {
  const { config, api, element, withPrefixes } = sparqlrag;
  const $ = (id) => document.getElementById(id);
  let conversation = []; // the earlier turns: {role: "user" | "assistant", content}

  const asked = new URLSearchParams(window.location.search); // ?collection=C&document=ID...: from the library

  async function loadCollections() {
    const { collections } = await (await api("api/v1/collections")).json();
    $("collection").replaceChildren(...collections.map((c) => element("option", { value: c.name }, `${c.name} (${c.documents} documents)`)));
    if (collections.some((c) => c.name === asked.get("collection"))) $("collection").value = asked.get("collection");
    await loadDocuments(asked.getAll("document"));
  }

  // The collection's ready documents, to limit a question to (sent as "documents": their ids).
  async function loadDocuments(chosen = []) {
    const collection = encodeURIComponent($("collection").value);
    const { documents } = await (await api(`api/v1/documents?collection=${collection}`)).json();
    $("documents").replaceChildren(...documents.filter((d) => d.status === "ready").map((d) =>
      element("option", { value: d.id, ...(chosen.includes(d.id) ? { selected: "" } : {}) }, `${d.title} (${d.id})`)));
    if (chosen.length) $("scope").open = true;
    countChosen();
  }

  const chosenDocuments = () => [...$("documents").selectedOptions].map((option) => option.value);

  function countChosen() {
    const count = chosenDocuments().length;
    $("scope-count").textContent = count ? `(${count} chosen)` : "";
  }

  // Server-sent events from a POST (EventSource only GETs): "event: name\ndata: json\n\n" blocks.
  async function* events(response) {
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const name = (block.match(/^event: (.*)$/m) || [])[1];
        const data = (block.match(/^data: (.*)$/m) || [])[1];
        if (name && data) yield [name, JSON.parse(data)];
      }
    }
  }

  const sameFact = (a, b) => a.subject === b.subject && a.predicate === b.predicate && a.object === b.object;

  function showSources(turn, sources, edges) {
    turn.querySelector(".sources").replaceChildren(...sources.map((source) => {
      const edge = source.supports && edges.find((e) => sameFact(e, source.supports));
      const text = element("blockquote", {});
      // the fact's evidence sentence; failing that (facts imported without one), its subject's name
      const marked = edge && [edge.sentence, edge.labels[0]].find((part) => part && source.text.includes(part));
      if (marked) {
        const at = source.text.indexOf(marked);
        text.append(source.text.slice(0, at), element("mark", {}, marked), source.text.slice(at + marked.length));
      } else {
        text.append(source.text);
      }
      const title = element("a", { href: source.chunk, title: source.headings || source.document }, source.citation || source.title); // the chunk's page
      const item = element("li", { class: "source" }, title);
      if (source.pages) item.append(" ", element("a", { href: source.file, class: "original" }, "open the file at this page"));
      item.append(text);
      if (source.copies && source.copies.length) item.append(element("p", { class: "copies" }, `also in: ${source.copies.map((c) => c.title).join("; ")}`));
      const bridge = (source.bridged_by || []).map((fact) => (edges.find((e) => sameFact(e, fact)) || { text: fact.predicate }).text);
      if (bridge.length) item.append(element("p", { class: "bridge" }, `bridge, reached through: ${bridge.join("; ")}`));
      else if (edge) item.append(element("p", { class: "supports" }, `supports: ${edge.text}`));
      return item;
    }));
  }

  function showFacts(turn, edges) {
    turn.querySelector(".facts").replaceChildren(...edges.map((edge) => element("li", {},
      element("span", { class: "fact" }, edge.text),
      element("span", { class: "score" }, ` hop ${edge.hop}, score ${edge.score.toFixed(3)}`),
      ...(edge.via ? [element("span", { class: "via" }, ` (via: ${edge.via.text})`)] : []))));
  }

  // The explored subgraph, as the explorer draws a trace (drawing.js): seeds, the facts kept at
  // each hop with their scores, then the sources; a node opens the explorer at that entity.
  function drawTrace(turn, seeds, edges, sources = []) {
    const explore = (entity) => {
      if (entity.startsWith(`${config.base}id/`)) window.open(`explore?${new URLSearchParams({ collection: $("collection").value, entity })}`, "_blank");
    };
    const drawn = sparqlragDrawing.draw(turn.querySelector("svg.trace"), sparqlragDrawing.traceGraph(seeds, edges, sources), { columns: true, onNode: explore });
    turn.querySelector(".no-drawing").hidden = drawn;
  }

  function traceQuery(trace, collection) {
    // the via fact (a triple term) as text: table views show terms of RDF 1.1
    const body = `SELECT ?hop ?score ?subject ?predicate ?object ?via WHERE {
  GRAPH <${config.base}graph/${collection}/trace> {
    <${trace}> sr:selectedEdge ?edge .
    ?edge sr:fact ?fact ; sr:hop ?hop ; sr:score ?score .
    OPTIONAL { ?edge sr:via ?viaFact }
  }
  BIND(SUBJECT(?fact) AS ?subject) BIND(PREDICATE(?fact) AS ?predicate) BIND(OBJECT(?fact) AS ?object)
  BIND(CONCAT(STR(SUBJECT(?viaFact)), " ", STR(PREDICATE(?viaFact)), " ", STR(OBJECT(?viaFact))) AS ?via)
}
ORDER BY ?hop DESC(?score)`;
    return `./?query=${encodeURIComponent(withPrefixes(body))}&tabTitle=${encodeURIComponent("trace")}`;
  }

  async function ask(event) {
    event.preventDefault();
    const collection = $("collection").value;
    const mode = $("mode").value;
    const question = $("question").value;
    const graph = mode !== "document"; // evidence, pagerank, hybrid and graph walk the graph
    const turn = $("turn").content.firstElementChild.cloneNode(true);
    turn.querySelector(".asked").textContent = question;
    turn.querySelector(".explanation").hidden = !graph;
    $("conversation").append(turn);
    $("new-conversation").hidden = false;
    const answer = turn.querySelector(".answer");
    let edges = [];
    let seeds = [];
    $("status").textContent = "Thinking…";
    try {
      const response = await api(graph ? "api/v1/graph-rag" : "api/v1/document-rag", {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
        body: JSON.stringify({
          question,
          collection,
          stream: true,
          ...(graph ? { mode } : {}),
          ...(chosenDocuments().length ? { documents: chosenDocuments() } : {}),
          ...(conversation.length ? { conversation } : {}),
        }),
      });
      for await (const [name, data] of events(response)) {
        if (name === "seeds") seeds = data.seeds;
        else if (name === "edges") {
          edges = data.edges;
          showFacts(turn, edges);
          drawTrace(turn, seeds, edges);
        } else if (name === "token") answer.append(data.text);
        else if (name === "sources") {
          showSources(turn, data.sources, edges);
          if (graph && edges.length) drawTrace(turn, seeds, edges, data.sources);
        }
        else if (name === "done") {
          $("status").textContent = "";
          conversation = [...conversation, { role: "user", content: question }, { role: "assistant", content: data.answer }];
          $("question").value = "";
          if (graph) {
            turn.querySelector(".trace-query").href = traceQuery(data.trace, collection);
            turn.querySelector(".trace-query").hidden = false;
            const traceId = data.trace.split("/").pop();
            turn.querySelector(".trace-explore").href = `explore?${new URLSearchParams({ collection, trace: traceId })}`;
            turn.querySelector(".trace-explore").hidden = false;
          }
        } else if (name === "error") throw new Error(data.detail);
        else if (name === "concepts" || name === "hop") $("status").textContent = name === "hop" ? `Walking: hop ${data.hop}…` : "Grounding…";
      }
    } catch (error) {
      $("status").textContent = `The question failed: ${error.message}`;
    }
  }

  function newConversation() {
    conversation = [];
    $("conversation").replaceChildren();
    $("new-conversation").hidden = true;
    $("status").textContent = "";
    $("question").focus();
  }

  $("ask").addEventListener("submit", ask);
  $("new-conversation").addEventListener("click", newConversation);
  $("documents").addEventListener("change", countChosen);
  $("clear-documents").addEventListener("click", () => {
    for (const option of $("documents").options) option.selected = false;
    countChosen();
  });
  $("collection").addEventListener("change", () => loadDocuments().catch((error) => {
    $("status").textContent = `Cannot list the documents: ${error.message}`;
  }));
  loadCollections().catch((error) => {
    $("status").textContent = `Cannot list collections: ${error.message}`;
  });
})();
