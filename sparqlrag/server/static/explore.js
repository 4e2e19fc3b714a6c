"use strict";
// The graph explorer: an entity's neighbourhood from /api/v1/collections/{c}/graph, drawn with
// drawing.js. A node's click expands it and shows its names, the merges behind them, its types
// and documents; an edge's shows its evidence (sentence, document, page, the file at that page).
// With a token that may write the collection, a node's panel also merges and splits, through the
// curation API, and the picture is drawn again. `?trace=ID` draws a Graph RAG answer's trace.
(() => {
  const { config, api, element } = sparqlrag;
  const $ = (id) => document.getElementById(id);
  const asked = new URLSearchParams(window.location.search); // ?collection=C&entity=IRI or &trace=ID
  const STEP = 40; // nodes "Show more" adds
  const MOST = 500; // the route's limit
  const state = { collection: "", centre: "", limit: STEP, nodes: new Map(), edges: new Map(), expanded: new Set(), selected: "", canWrite: false, trace: null };

  const encoded = (params) => new URLSearchParams(Object.entries(params).filter(([, v]) => v !== "" && v != null)).toString();
  const base = () => `api/v1/collections/${encodeURIComponent(state.collection)}`;
  const status = (text) => { $("status").textContent = text; };
  const link = (href, text) => element("a", { href }, text);

  async function loadCollections() {
    const { collections } = await (await api("api/v1/collections")).json();
    $("collection").replaceChildren(...collections.map((c) => element("option", { value: c.name }, `${c.name} (${c.documents} documents)`)));
    if (collections.some((c) => c.name === asked.get("collection"))) $("collection").value = asked.get("collection");
    await chooseCollection();
  }

  async function chooseCollection() {
    state.collection = $("collection").value;
    Object.assign(state, { centre: "", nodes: new Map(), edges: new Map(), trace: null }); // another collection's picture is gone
    $("graph").replaceChildren();
    $("filters").hidden = true;
    $("found").replaceChildren();
    const reach = await (await api("api/v1/access")).json();
    state.canWrite = !reach.auth || reach.writes === "all" || (Array.isArray(reach.writes) && reach.writes.includes(state.collection));
    const { documents } = await (await api(`api/v1/documents?collection=${encodeURIComponent(state.collection)}`)).json();
    $("document").replaceChildren(element("option", { value: "" }, "every document"),
      ...documents.filter((d) => d.status === "ready").map((d) => element("option", { value: d.id }, d.title)));
  }

  // -- finding an entity ------------------------------------------------------------------------

  async function find(event) {
    event.preventDefault();
    const search = $("search").value.trim();
    if (!search) return;
    status("Finding…");
    try {
      const { entities } = await (await api(`${base()}/entities?${encoded({ search, limit: 10 })}`)).json();
      $("found").replaceChildren(...entities.map((e) => {
        const button = element("button", { type: "button", class: "entity" }, e.label);
        button.addEventListener("click", () => {
          state.limit = STEP; // a new picture starts small
          start(e.entity);
        });
        return element("li", {}, button, e.name !== e.label ? ` named “${e.name}”` : "", element("span", { class: "score" }, ` ${e.score.toFixed(2)}`));
      }));
      status(entities.length ? "" : "No entity has a name near that.");
      if (entities.length) $("found").querySelector("button").focus();
    } catch (error) {
      status(`Cannot search: ${error.message}`);
    }
  }

  // -- the neighbourhood ------------------------------------------------------------------------

  async function neighbourhood(entity, depth) {
    const params = { entity, depth, limit: state.limit, relation: $("relation").value, document: $("document").value };
    return (await api(`${base()}/graph?${encoded(params)}`)).json();
  }

  // adds what the route drew to the picture, and its relations to the filter
  function include(found) {
    for (const node of found.nodes) state.nodes.set(node.id, node);
    for (const edge of found.edges) state.edges.set(edge.id, edge);
    const relations = new Map([...state.edges.values()].map((e) => [e.predicate, e.label]));
    const chosen = $("relation").value;
    if (chosen) relations.set(chosen, relations.get(chosen) || sparqlragDrawing.localName(chosen));
    $("relation").replaceChildren(element("option", { value: "" }, "every relation"),
      ...[...relations].sort((a, b) => a[1].localeCompare(b[1])).map(([iri, label]) => element("option", { value: iri }, label)));
    $("relation").value = chosen;
  }

  async function start(entity) {
    sparqlragDrawing.forget($("graph"));
    Object.assign(state, { centre: entity, nodes: new Map(), edges: new Map(), expanded: new Set([entity]), trace: null });
    $("found").replaceChildren();
    $("filters").hidden = false;
    history.replaceState(null, "", `?${encoded({ collection: state.collection, entity })}`);
    status("Drawing…");
    try {
      const found = await neighbourhood(entity, $("depth").value);
      include(found);
      $("more").disabled = !found.truncated || state.limit >= MOST;
      render();
      status(found.truncated ? `Showing ${found.nodes.length} nodes: there is more (Show more).` : "");
      await showNode(entity, found.documents);
    } catch (error) {
      status(`Cannot draw the graph: ${error.message}`);
    }
  }

  async function expand(id) {
    if (state.trace) return start(id);
    status("Expanding…");
    try {
      const found = await neighbourhood(id, 1);
      state.expanded.add(id);
      include(found);
      render(id);
      status("");
      await showNode(id, found.documents);
    } catch (error) {
      status(`Cannot expand it: ${error.message}`);
    }
  }

  function render(selected = state.selected) {
    state.selected = selected;
    const drawnAt = new Map();
    for (const edge of state.edges.values()) for (const end of [edge.source, edge.target]) drawnAt.set(end, (drawnAt.get(end) || 0) + 1);
    const nodes = [...state.nodes.values()].map((node) => {
      const hidden = node.degree - (drawnAt.get(node.id) || 0);
      const kinds = [node.id === state.centre ? "centre" : "", node.hub ? "hub" : "", node.id === selected ? "selected" : ""];
      return {
        id: node.id,
        label: node.label,
        title: `${node.label}: ${node.degree} facts${node.hub && !state.expanded.has(node.id) ? " (a hub: click to expand)" : ""}`,
        badge: hidden > 0 ? `(+${hidden} more)` : "",
        kind: kinds.join(" ").trim(),
      };
    });
    const edges = [...state.edges.values()].map((edge) => ({
      id: edge.id,
      source: edge.source,
      target: edge.target,
      label: edge.label,
      title: `${state.nodes.get(edge.source)?.label} ${edge.label} ${state.nodes.get(edge.target)?.label} (${edge.evidence} ${edge.evidence === 1 ? "chunk" : "chunks"})`,
      kind: edge.id === selected ? "selected" : "",
    }));
    sparqlragDrawing.draw($("graph"), { nodes, edges }, { onNode: expand, onEdge: showEdge });
  }

  // -- the details beside the picture ------------------------------------------------------------

  function panel(...children) {
    $("details").replaceChildren(...children);
  }

  const documentPage = (id) => `${config.base}doc/${state.collection}/${encodeURIComponent(id)}`;

  async function showNode(id, documents = []) {
    const node = state.nodes.get(id);
    if (!node) return;
    const section = [
      element("h2", {}, node.label),
      element("p", { class: "iri" }, link(id, id)),
      element("p", {}, `${node.degree} ${node.degree === 1 ? "fact" : "facts"}${node.hub ? " (a hub)" : ""}`,
        ...(node.types.length ? [" · types: ", ...node.types.map((t) => element("span", { class: "type", title: t }, sparqlragDrawing.localName(t)))] : [])),
    ];
    if (documents.length) {
      section.push(element("h3", {}, "Documents"), element("ul", {}, ...documents.map((d) =>
        element("li", {}, link(documentPage(d.id), d.title), ` (${d.facts} ${d.facts === 1 ? "fact" : "facts"})`))));
    }
    panel(...section);
    try {
      const names = await (await api(`${base()}/entities/aliases?${encoded({ entity: id })}`)).json();
      $("details").append(...aliasesOf(id, names));
    } catch (error) {
      // (a thing only named as the object of facts has no names of its own to list: 404)
      const none = error.message.startsWith("404");
      $("details").append(none ? element("p", { class: "none" }, "No name of its own.") : element("p", { class: "error" }, `Cannot list its names: ${error.message}`));
    }
    if (state.canWrite) $("details").append(curation(id));
  }

  function aliasesOf(id, names) {
    const parts = [element("h3", {}, "Names")];
    const splitButton = (alias) => {
      if (!state.canWrite) return "";
      const button = element("button", { type: "button", class: "split" }, "Split off, keep apart");
      button.title = `“${alias}” names something else: split it off and keep the two apart`;
      button.addEventListener("click", () => curate("split", { entity: id, alias }));
      return button;
    };
    parts.push(names.aliases.length
      ? element("ul", { class: "aliases" }, ...names.aliases.map((a) => element("li", {}, `“${a.name}” `,
        element("span", { class: "score" }, a.documents.length ? `in ${a.documents.join(", ")} ` : ""), splitButton(a.name))))
      : element("p", { class: "none" }, "No other name."));
    if (names.merges.length) {
      parts.push(element("h3", {}, "Why the names were merged"), element("ul", { class: "merges" }, ...names.merges.map((m) =>
        element("li", {}, `“${m.alias}”: ${m.rule}, score ${m.score.toFixed(2)}`,
          element("span", { class: "score" }, m.documents.length ? `; evidence in ${m.documents.join(", ")}` : ""), " ", splitButton(m.alias)))));
    }
    if (names.kept_apart.length) parts.push(element("p", { class: "kept-apart" }, `Kept apart: ${names.kept_apart.join(", ")}`));
    return parts;
  }

  function curation(id) {
    const other = element("input", { type: "text", id: "merge-other", placeholder: "a name or an IRI", maxlength: "4000" });
    const form = element("form", { class: "curation" }, element("h3", {}, "Curate"),
      element("label", {}, "Merge into this one: ", other), " ", element("button", { type: "submit" }, "Merge"),
      element("p", { id: "curation-result", class: "status", role: "alert" }));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      if (other.value.trim()) curate("merge", { entity: id, other: other.value.trim() });
    });
    return form;
  }

  async function curate(action, body) {
    const result = () => $("curation-result");
    try {
      await api(`${base()}/entities/${action}`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
      const { centre, selected } = state;
      await start(state.nodes.has(centre) ? centre : body.entity);
      if (selected !== centre && state.nodes.has(body.entity)) await showNode(body.entity);
      status(action === "merge" ? `Merged “${body.other}” into it.` : `Split “${body.alias}” off.`);
    } catch (error) {
      const shown = result();
      if (shown) shown.textContent = `Refused: ${error.message}`;
      else status(`Refused: ${error.message}`);
      if (shown) shown.classList.add("error");
    }
  }

  async function showEdge(id) {
    const edge = state.edges.get(id);
    const walked = edge ? null : walkedEdge(id); // a trace's: how the walk kept it
    if (!edge && !walked) return;
    const how = walked ? [element("p", { class: "walked" }, `Kept at hop ${walked.hop}, score ${walked.score.toFixed(3)}`,
      walked.via ? `, reached through: ${walked.via.text}` : "")] : [];
    if (walked?.object_is_literal) {
      panel(element("h2", {}, walked.text), ...how, element("p", { class: "none" }, `A value: its sentence is “${walked.sentence || "not kept"}”.`));
      return;
    }
    const fact = edge ? { subject: edge.source, predicate: edge.predicate, object: edge.target } : { subject: walked.subject, predicate: walked.predicate, object: walked.object };
    if (edge) render(id);
    try {
      const found = await (await api(`${base()}/graph/fact?${encoded(fact)}`)).json();
      const items = found.evidence.map((e) => {
        const item = element("li", { class: "evidence" });
        if (e.sentence) item.append(element("q", { class: "sentence" }, e.sentence), " ");
        item.append(element("span", {}, "in "), link(e.passage.document, e.passage.title));
        if (e.passage.pages) item.append(`, ${e.passage.pages[0] === e.passage.pages[1] ? `page ${e.passage.pages[0]}` : `pages ${e.passage.pages.join("-")}`}`);
        item.append(" · ", element("a", { href: e.passage.file, class: "original" }, e.passage.pages ? "open the file at this page" : "open the file"),
          " · ", link(e.passage.chunk, "the chunk"));
        return item;
      });
      panel(element("h2", {}, found.fact.text),
        element("p", { class: "iri" }, `${found.labels[0]} → ${found.labels[1]} → ${found.labels[2]}`), ...how,
        element("h3", {}, `Evidence (${items.length})`),
        items.length ? element("ol", { class: "evidence" }, ...items) : element("p", { class: "none" }, "No document states it: it was loaded as data."));
    } catch (error) {
      panel(element("p", { class: "error" }, `Cannot show the fact: ${error.message}`));
    }
  }

  // -- a trace ----------------------------------------------------------------------------------

  const walkedEdge = (id) => (state.trace?.edges || []).find((e) => `${e.subject} ${e.predicate} ${e.object}` === id);

  async function showTrace(id) {
    status("Drawing the trace…");
    try {
      const trace = await (await api(`api/v1/traces/${encodeURIComponent(id)}?collection=${encodeURIComponent(state.collection)}`)).json();
      state.trace = trace;
      const graph = sparqlragDrawing.traceGraph(trace.seeds, trace.edges, trace.sources);
      sparqlragDrawing.draw($("graph"), graph, {
        columns: true,
        onNode: (node) => (node.startsWith(`${config.base}id/`) ? start(node) : undefined),
        onEdge: showEdge,
      });
      panel(element("h2", {}, trace.question || "a question"), element("p", {}, trace.answer || ""),
        element("p", { class: "iri" }, `${trace.seeds.length} seeds, ${trace.edges.length} facts kept, ${trace.sources.length} sources · `,
          link(`page/trace/${encodeURIComponent(state.collection)}/${encodeURIComponent(id)}`, "the trace page")));
      status("");
    } catch (error) {
      status(`Cannot draw the trace: ${error.message}`);
    }
  }

  $("find").addEventListener("submit", find);
  $("collection").addEventListener("change", () => chooseCollection().catch((error) => status(`Cannot open the collection: ${error.message}`)));
  for (const id of ["depth", "relation", "document"]) $(id).addEventListener("change", () => state.centre && start(state.centre));
  $("more").addEventListener("click", () => {
    state.limit = Math.min(MOST, state.limit + STEP);
    start(state.centre);
  });
  $("missing").hidden = sparqlragDrawing.available;
  loadCollections()
    .then(() => (asked.get("trace") ? showTrace(asked.get("trace")) : asked.get("entity") ? start(asked.get("entity")) : undefined))
    .catch((error) => status(`Cannot list collections: ${error.message}`));
})();
