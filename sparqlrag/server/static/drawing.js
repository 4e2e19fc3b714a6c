"use strict";
// The picture of a graph that the explorer (/explore) and the ask page share. d3 (from npm at
// `make install`, static/vendor/d3) lays the nodes out with its force simulation, run to rest
// before anything is shown so the picture holds still; the SVG is drawn one pixel per unit, so
// labels keep their size however large the graph (its box scrolls), and it pans and zooms with
// the mouse. Every node and edge is a focusable button (Tab, then Enter or Space, or a click).
// Text goes in as text, never as markup.
const sparqlragDrawing = (() => {
  const SVG = "http://www.w3.org/2000/svg";
  const available = typeof window.d3 !== "undefined";
  const COLUMN = 330; // px between a trace's columns
  const ROW = 34; // px between a column's nodes
  const MIN_HEIGHT = 200; // px: a drawing's box is no lower
  // a label below its node in a force layout (its collision circle then covers it), to the right in a trace's rows
  const LABEL_BELOW = { x: 0, y: 27, "text-anchor": "middle" };
  const LABEL_RIGHT = { x: 14, y: 4.5 };
  const CHAR = 7.4; // px a label's character takes at the labels' 13px
  let drawn = 0; // each drawing's own marker ids
  const placed = new WeakMap(); // svg -> Map(node id -> [x, y]): a redrawing keeps what was placed

  const short = (text, most = 30) => (text.length > most ? `${text.slice(0, most - 1)}…` : text);

  function make(tag, attributes = {}, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function actionable(group, label, act) {
    group.setAttribute("tabindex", "0");
    group.setAttribute("role", "button");
    group.setAttribute("aria-label", label);
    group.addEventListener("click", (event) => {
      event.stopPropagation();
      act();
    });
    group.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        act();
      }
    });
  }

  const width = (node) => 24 + Math.min(node.label.length + (node.badge || "").length, 34) * CHAR;

  // Force layout: a redrawing keeps the nodes it drew where they were (held while new ones settle
  // beside the neighbour that brought them), so expanding a node does not move the rest.
  function forceLayout(svg, nodes, links) {
    const before = placed.get(svg) || new Map();
    const neighbour = new Map(links.flatMap((l) => [[l.target.id, l.source.id], [l.source.id, l.target.id]]));
    nodes.forEach((node, i) => {
      const at = before.get(node.id) || before.get(neighbour.get(node.id));
      if (before.has(node.id)) [node.fx, node.fy] = at;
      else if (at) [node.x, node.y] = [at[0] + 60 * Math.cos(i), at[1] + 60 * Math.sin(i)];
    });
    d3.forceSimulation(nodes)
      .force("link", d3.forceLink(links).distance(170).strength(0.5))
      .force("charge", d3.forceManyBody().strength(-600))
      .force("collide", d3.forceCollide((node) => width(node) / 2))
      .force("x", d3.forceX(0).strength(0.05))
      .force("y", d3.forceY(0).strength(0.08))
      .stop()
      .tick(nodes.every((node) => before.has(node.id)) ? 0 : 300);
    placed.set(svg, new Map(nodes.map((node) => [node.id, [node.x, node.y]])));
  }

  // Column layout (a trace): each node in its column, one row each; a column's nodes ordered by
  // where their neighbours in the columns before stand, so lines cross less.
  function columnLayout(nodes, links) {
    const columns = [...new Set(nodes.map((n) => n.column))].sort((a, b) => a - b);
    for (const column of columns) {
      const here = nodes.filter((n) => n.column === column);
      const at = (node) => {
        const rows = links.flatMap((l) => [[l.source, l.target], [l.target, l.source]])
          .filter(([a, b]) => a === node && b.column < column && b.y !== undefined).map(([, b]) => b.y);
        return rows.length ? rows.reduce((a, b) => a + b) / rows.length : Infinity;
      };
      const order = column === columns[0] ? here : here.map((n) => [n, at(n)]).sort((a, b) => a[1] - b[1]).map(([n]) => n);
      order.forEach((node, row) => Object.assign(node, { x: column * COLUMN, y: row * ROW }));
    }
  }

  // An edge's path and where its label goes: a line, its label at the middle (a trace's: near the
  // target, where rows are apart); between two nodes of one column, a curve out to the left.
  function geometry(link, columns) {
    const [x1, y1, x2, y2] = [link.source.x, link.source.y, link.target.x, link.target.y];
    if (columns && x1 === x2) {
      const bend = x1 - 40 - Math.abs(y2 - y1) / 4;
      return { d: `M ${x1} ${y1} Q ${bend} ${(y1 + y2) / 2} ${x2} ${y2}`, label: null };
    }
    const t = columns ? 0.7 : 0.5;
    return { d: `M ${x1} ${y1} L ${x2} ${y2}`, label: [x1 + t * (x2 - x1), y1 + t * (y2 - y1) - 5] };
  }

  // graph: {nodes: [{id, label, title?, kind?, column?, badge?}], edges: [{id, source, target, label, title?, width?, kind?}]}
  // (kind: space-separated classes: "centre", "hub", "seed", "source", "selected"; column: a trace's hop)
  // options: {onNode(id), onEdge(id), columns: whether nodes keep to their column}
  // Returns false, drawing nothing, when d3 is missing: the page says so.
  function draw(svg, graph, options = {}) {
    svg.replaceChildren();
    if (!available) return false;
    const nodes = graph.nodes.map((node) => ({ ...node }));
    const byId = new Map(nodes.map((node) => [node.id, node]));
    const links = graph.edges
      .filter((edge) => byId.has(edge.source) && byId.has(edge.target))
      .map((edge) => ({ ...edge, source: byId.get(edge.source), target: byId.get(edge.target) }));
    if (!nodes.length) return true; // nothing to draw (a walk that found no fact)
    if (options.columns) columnLayout(nodes, links);
    else forceLayout(svg, nodes, links);

    // one unit a pixel: a small drawing is centred in its box, never scaled up; a large one scrolls
    const reach = (n) => (options.columns ? [0, width(n)] : [width(n) / 2, width(n) / 2]); // a label's extent left and right
    let left = Math.min(...nodes.map((n) => n.x - reach(n)[0])) - (options.columns ? 140 : 10);
    let top = Math.min(...nodes.map((n) => n.y)) - 30;
    const [wide, high] = [Math.max(...nodes.map((n) => n.x + reach(n)[1])) + 10 - left, Math.max(...nodes.map((n) => n.y)) + 40 - top];
    const [shownWide, shownHigh] = [Math.max(wide, svg.parentElement.clientWidth), Math.max(high, MIN_HEIGHT)];
    [left, top] = [left - (shownWide - wide) / 2, top - (shownHigh - high) / 2];
    svg.setAttribute("width", Math.ceil(shownWide));
    svg.setAttribute("height", Math.ceil(shownHigh));
    svg.setAttribute("viewBox", `${left} ${top} ${Math.ceil(shownWide)} ${Math.ceil(shownHigh)}`);

    const arrow = `arrow-${++drawn}`;
    const marker = make("marker", { id: arrow, viewBox: "0 0 10 10", refX: 20, refY: 5, markerWidth: 9, markerHeight: 9, markerUnits: "userSpaceOnUse", orient: "auto" });
    marker.append(make("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrow-head" }));
    const defs = make("defs");
    defs.append(marker);
    const world = make("g", { class: "world" });
    svg.append(defs, world);

    for (const link of links) {
      const { d, label } = geometry(link, options.columns);
      const group = make("g", { class: `edge ${link.kind || ""}`, "data-id": link.id });
      group.append(
        make("path", { d, class: "hit", fill: "none" }),
        make("path", { d, class: "stroke", fill: "none", "stroke-width": link.width || 1.5, "marker-end": `url(#${arrow})` }),
        make("title", {}, link.title || link.label),
      );
      if (label) group.append(make("text", { x: label[0], y: label[1], class: "edge-label", "text-anchor": "middle" }, short(link.label, 34)));
      if (options.onEdge) actionable(group, link.title || link.label, () => options.onEdge(link.id));
      world.append(group);
    }
    for (const node of nodes) {
      const group = make("g", { class: `node ${node.kind || ""}`, "data-id": node.id, transform: `translate(${node.x},${node.y})` });
      group.append(
        make("circle", { r: /\b(hub|centre)\b/.test(node.kind || "") ? 11 : 8 }),
        make("text", { ...(options.columns ? LABEL_RIGHT : LABEL_BELOW), class: "node-label" }, short(node.label, 34) + (node.badge ? ` ${node.badge}` : "")),
        make("title", {}, node.title || node.label),
      );
      if (options.onNode) actionable(group, node.title || node.label, () => options.onNode(node.id));
      world.append(group);
    }
    const zoom = d3.zoom().scaleExtent([0.25, 4]).on("zoom", (event) => world.setAttribute("transform", event.transform));
    d3.select(svg).call(zoom).on("dblclick.zoom", null);
    return true;
  }

  // A trace (its JSON, as /api/v1/traces/{id} and the ask page's events give it) as a graph: the
  // best seeds in the first column with their scores, each kept fact's new end one column
  // further than the end it was reached from (line width: the fact's score; colour: its hop), and the sources last, each joined to the ends of the
  // fact it supports or the facts that bridged to it.
  const SEEDS_SHOWN = 5;
  const localName = (iri) => decodeURIComponent(iri.replace(/\/$/, "").split(/[/#]/).pop()).replace(/[-_]/g, " ");

  function traceGraph(seeds, edges, sources = []) {
    const column = new Map();
    const label = new Map();
    const kind = new Map();
    const used = new Set(edges.flatMap((e) => [e.subject, e.object]));
    for (const seed of seeds.filter((s, i) => i < SEEDS_SHOWN || used.has(s.entity))) {
      column.set(seed.entity, 0);
      label.set(seed.entity, `${seed.label || localName(seed.entity)} (${seed.score.toFixed(2)})`);
      kind.set(seed.entity, "seed");
    }
    for (const edge of [...edges].sort((a, b) => a.hop - b.hop)) {
      if (!label.has(edge.subject)) label.set(edge.subject, edge.labels[0]);
      if (!label.has(edge.object)) label.set(edge.object, edge.labels[2]);
      const [from, to] = column.has(edge.subject) || edge.object_is_literal ? [edge.subject, edge.object] : [edge.object, edge.subject];
      if (!column.has(from)) column.set(from, edge.hop - 1);
      if (!column.has(to)) column.set(to, column.get(from) + 1);
    }
    const last = Math.max(0, ...column.values()) + 1;
    const links = edges.map((edge) => ({
      id: `${edge.subject} ${edge.predicate} ${edge.object}`,
      source: edge.subject,
      target: edge.object,
      label: `${edge.labels[1]} (${edge.score.toFixed(2)})`,
      title: `${edge.text}: hop ${edge.hop}, score ${edge.score.toFixed(3)}${edge.via ? `, via ${edge.via.text}` : ""}`,
      width: 1 + 3 * Math.max(edge.score, 0),
      kind: `hop${edge.hop}`,
    }));
    const nodes = [...column].map(([id, col]) => ({ id, label: label.get(id) || localName(id), title: id, column: col, kind: kind.get(id) || "" }));
    for (const source of sources) {
      const id = source.chunk;
      nodes.push({ id, label: `[${source.rank ?? ""}] ${source.citation || source.title || "a passage"}`, title: source.headings || source.document || id, column: last, kind: "source" });
      const facts = source.supports ? [source.supports] : source.bridged_by || [];
      for (const fact of facts) {
        const end = column.has(fact.object) ? fact.object : fact.subject;
        if (column.has(end)) links.push({ id: `${id} ${end}`, source: end, target: id, label: source.bridge ? "bridge" : "stated in", kind: "sourced" });
      }
    }
    return { nodes, edges: links };
  }

  // a new picture, not a redrawing: nothing is kept where it was
  const forget = (svg) => placed.delete(svg);

  return { available, draw, forget, traceGraph, localName };
})();
