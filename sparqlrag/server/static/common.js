"use strict";
// What every page shares: the server's settings, the bearer token (typed once, kept in this
// tab's sessionStorage, which is this origin's alone, port included) and JSON calls that carry it
// and turn an error body into a message. Links (entity pages, data) cannot carry a header, so a
// token that cannot write also goes in a cookie, which the server takes for reads by GET; a
// write token never does: cookies are shared by every port of the host.
const sparqlrag = (() => {
  const config = JSON.parse(document.getElementById("sparqlrag-config").textContent);
  const TOKEN = "sparqlrag.token";
  localStorage.removeItem(TOKEN); // (where earlier versions kept it, for every tab and for good)

  function token() {
    return sessionStorage.getItem(TOKEN) || "";
  }

  function headers(extra = {}) {
    const value = token();
    return value ? { ...extra, Authorization: `Bearer ${value}` } : { ...extra };
  }

  async function api(path, options = {}) {
    const response = await fetch(path, { ...options, headers: headers(options.headers || {}) });
    if (!response.ok) {
      let detail = response.statusText;
      try {
        detail = (await response.json()).detail || detail;
      } catch (ignored) {
        // not a JSON error body: the status text says it
      }
      throw new Error(`${response.status}: ${detail}`);
    }
    return response;
  }

  // only http(s) IRIs (and this site's own relative paths) become links: never javascript: or data:
  function linkable(href) {
    try {
      return ["http:", "https:"].includes(new URL(href, location.href).protocol);
    } catch (ignored) {
      return false;
    }
  }

  function element(tag, attributes = {}, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes)) {
      if (name !== "href" || linkable(value)) node.setAttribute(name, value);
    }
    for (const child of children) node.append(child);
    return node;
  }

  // a token field in the top bar when the server asks for tokens
  if (config.auth) {
    const field = element("input", { type: "password", placeholder: "bearer token", id: "token", value: token() });
    field.addEventListener("change", async () => {
      const value = field.value.trim();
      sessionStorage.setItem(TOKEN, value);
      await keepForLinks(value);
      location.reload();
    });
    document.querySelector("nav.top").append(field);
  }

  // the cookie for links: set for a token that can read but not write, cleared for any other
  async function keepForLinks(value) {
    let readOnly = false;
    if (value) {
      try {
        const reach = await (await api("/api/v1/access")).json();
        readOnly = reach.auth && Array.isArray(reach.writes) && reach.writes.length === 0;
      } catch (ignored) {
        // an unknown token: nothing to keep
      }
    }
    const kept = readOnly ? encodeURIComponent(value) : "";
    const expiry = readOnly ? "" : "; Max-Age=0";
    document.cookie = `${config.cookie}=${kept}; path=/; SameSite=Strict${expiry}`;
  }

  // a query with the project's prefixes declared before it
  const prologue = Object.entries(config.prefixes).map(([name, iri]) => `PREFIX ${name}: <${iri}>`).join("\n");
  const withPrefixes = (body) => `${prologue}\n\n${body}\n`;

  return { config, token, headers, api, element, withPrefixes };
})();
