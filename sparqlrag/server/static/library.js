"use strict";
// The document library: a collection's documents with their status, chunks, facts and failures;
// upload (with progress), re-ingest and delete, all through /api/v1/documents and the page's token.
(() => {
  const { api, headers, element } = sparqlrag;
  const $ = (id) => document.getElementById(id);
  const KINDS = {
    "application/pdf": "PDF",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "DOCX",
    "text/html": "HTML",
    "text/markdown": "Markdown",
    "text/plain": "text",
  };
  const BUSY = ["queued", "processing"];
  let polling = null;

  const collection = () => $("collection").value;
  const documentsUrl = (id, action = "") =>
    `api/v1/documents/${encodeURIComponent(id)}${action}?collection=${encodeURIComponent(collection())}`;

  function say(text, failed = false) {
    $("status").textContent = text;
    $("status").classList.toggle("error", failed);
  }

  async function loadCollections() {
    const { collections } = await (await api("api/v1/collections")).json();
    const wanted = new URLSearchParams(location.search).get("collection") || "default";
    $("collection").replaceChildren(...collections.map((c) =>
      element("option", c.name === wanted ? { value: c.name, selected: "" } : { value: c.name }, c.name)));
  }

  function statusCell(doc) {
    const cell = element("td", { class: `state ${doc.status}` }, doc.status);
    if (doc.status === "processing") cell.append(` ${Math.round(doc.progress * 100)}%`);
    if (doc.error) cell.append(element("div", { class: "reason" }, doc.error));
    return cell;
  }

  function row(doc) {
    const actions = element("td", { class: "actions" });
    actions.append(element("a", { href: doc.file, class: "original" }, "file"));
    const only = `ask?collection=${encodeURIComponent(collection())}&document=${encodeURIComponent(doc.id)}`;
    actions.append(" ", element("a", { href: only, class: "ask-document" }, "ask"));
    const reingest = element("button", { type: "button", class: "reingest" }, "re-ingest");
    reingest.addEventListener("click", () => act(doc, "Re-ingesting", "Re-ingest started:", () =>
      api(documentsUrl(doc.id, "/reingest"), { method: "POST", headers: { Prefer: "respond-async" } })));
    const remove = element("button", { type: "button", class: "delete" }, "delete");
    remove.addEventListener("click", () => {
      if (confirm(`Delete "${doc.title}" and the facts only it supports?`)) {
        act(doc, "Deleting", "Deleted", () => api(documentsUrl(doc.id), { method: "DELETE" }));
      }
    });
    actions.append(" ", reingest, " ", remove);
    const title = element("td", {}, element("a", { href: doc.iri, class: "title" }, doc.title));
    title.append(element("div", { class: "hint" }, doc.id));
    const count = (value) => element("td", { class: "count" }, value === null || value === undefined ? "–" : String(value));
    return element("tr", { "data-id": doc.id }, title, element("td", {}, KINDS[doc.media_type] || doc.media_type),
      statusCell(doc), count(doc.pages), count(doc.chunks), count(doc.facts),
      element("td", {}, doc.created.slice(0, 16).replace("T", " ")), actions);
  }

  async function act(doc, doing, done, call) {
    say(`${doing} ${doc.title}…`);
    try {
      await call();
      say(`${done} ${doc.title}`);
    } catch (error) {
      say(`${doing} ${doc.title} failed: ${error.message}`, true);
    }
    await list();
  }

  async function list() {
    clearTimeout(polling);
    let documents;
    try {
      ({ documents } = await (await api(`api/v1/documents?collection=${encodeURIComponent(collection())}`)).json());
    } catch (error) {
      say(`Could not list the documents: ${error.message}`, true);
      return;
    }
    $("documents").replaceChildren(...(documents.length ? documents.map(row)
      : [element("tr", {}, element("td", { colspan: "8", class: "none" }, "No documents in this collection yet."))]));
    if (documents.some((d) => BUSY.includes(d.status))) polling = setTimeout(list, 1500);
  }

  // XMLHttpRequest rather than fetch: only it reports how much of a big upload has been sent
  function upload(files) {
    const form = new FormData();
    for (const file of files) form.append("file", file, file.name);
    const request = new XMLHttpRequest();
    request.open("POST", `api/v1/documents?collection=${encodeURIComponent(collection())}`);
    for (const [name, value] of Object.entries(headers({ Prefer: "respond-async" }))) request.setRequestHeader(name, value);
    const bar = $("upload-progress");
    bar.hidden = false;
    bar.value = 0;
    request.upload.addEventListener("progress", (event) => {
      if (event.lengthComputable) {
        bar.value = event.loaded / event.total;
        say(`Uploading: ${Math.round(100 * bar.value)}% of ${(event.total / 1048576).toFixed(1)} MB`);
      }
    });
    request.addEventListener("load", () => {
      bar.hidden = true;
      $("files").value = ""; // the next choice starts afresh
      let body = {};
      try {
        body = JSON.parse(request.responseText);
      } catch (ignored) {
        // not JSON: the status says it
      }
      if (request.status >= 400) {
        say(`Upload refused (${request.status}): ${body.detail || request.statusText}`, true);
      } else {
        const failed = (body.documents || []).filter((d) => d.status === "failed");
        say(failed.length ? `Failed: ${failed.map((d) => `${d.id}: ${d.error}`).join("; ")}`
          : `Accepted ${(body.documents || []).length} document(s); they are ingested in the background.`, failed.length > 0);
      }
      list();
    });
    request.addEventListener("error", () => {
      bar.hidden = true;
      say("The upload did not reach the server.", true);
    });
    request.send(form);
  }

  $("upload").addEventListener("submit", (event) => {
    event.preventDefault();
    if ($("files").files.length) upload($("files").files);
  });
  $("collection").addEventListener("change", () => {
    history.replaceState(null, "", `?collection=${encodeURIComponent(collection())}`);
    list();
  });
  loadCollections().then(list).catch((error) => say(`Could not load the collections: ${error.message}`, true));
})();
