"use strict";
// What every page shares: the server's settings, the bearer token (typed once, kept in this
// browser's localStorage) and JSON calls that carry it and turn an error body into a message.
const sparqlrag = (() => {
  const config = JSON.parse(document.getElementById("sparqlrag-config").textContent);
  const TOKEN = "sparqlrag.token";

  function token() {
    return localStorage.getItem(TOKEN) || "";
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
    field.addEventListener("change", () => {
      const value = field.value.trim();
      localStorage.setItem(TOKEN, value);
      // links (entity pages, data) cannot carry a header: the server takes this cookie for reads only
      document.cookie = `${config.cookie}=${encodeURIComponent(value)}; path=/; SameSite=Strict`;
      location.reload();
    });
    document.querySelector("nav.top").append(field);
  }

  // a query with the project's prefixes declared before it
  const prologue = Object.entries(config.prefixes).map(([name, iri]) => `PREFIX ${name}: <${iri}>`).join("\n");
  const withPrefixes = (body) => `${prologue}\n\n${body}\n`;

  return { config, token, headers, api, element, withPrefixes };
})();
