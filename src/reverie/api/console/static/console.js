// The console's shell: sign-in, the key in session storage, navigation, and htmx's requests.
// Every page's content is an HTML fragment from /console/ui/<page>, loaded with the key in the
// Authorization header (never in a URL or a cookie) and the key's CSRF token on every request.
(function () {
  "use strict";
  var KEY = "reverie.key", AGENT = "reverie.agent";
  var state = { csrf: "", agents: [], admin: false };

  function $(id) { return document.getElementById(id); }

  function flash(message) {
    var box = $("flash");
    box.textContent = message || "";
    box.hidden = !message;
  }

  function fragmentUrl(path) {
    // /console/agents/a/memory?x=1 -> /console/ui/agents/a/memory?x=1
    return "/console/ui" + path.slice("/console".length);
  }

  function currentAgent() {
    var m = location.pathname.match(/^\/console\/agents\/([^/]+)/);
    if (m) { return decodeURIComponent(m[1]); }
    // The library's default agent first: where the tour's sample and an unscoped save land.
    var fallback = state.agents.indexOf("default") >= 0 ? "default" : state.agents[0];
    return sessionStorage.getItem(AGENT) || fallback || "";
  }

  function load(path) {
    flash("");
    var agent = currentAgent();
    if (path === "/console" || path === "/console/") {
      if (!agent) { $("view").textContent = "This key sees no agent yet."; return; }
      path = "/console/agents/" + encodeURIComponent(agent);
      history.replaceState(null, "", path);
    }
    sessionStorage.setItem(AGENT, currentAgent());
    syncChrome();
    htmx.ajax("GET", fragmentUrl(path), { target: "#view", swap: "innerHTML" });
  }

  function navigate(path) {
    history.pushState(null, "", path);
    load(path);
  }
  window.reverieNavigate = navigate;
  // For a page's own script (a chart's or a graph's data): fetch with the key and the CSRF token.
  window.reverieFetch = function (url, options) {
    options = options || {};
    var headers = options.headers || {};
    headers.Authorization = "Bearer " + (sessionStorage.getItem(KEY) || "");
    headers["X-CSRF-Token"] = state.csrf;
    options.headers = headers;
    return fetch(url, options);
  };

  function syncChrome() {
    var agent = currentAgent();
    var links = document.querySelectorAll("#nav a[data-page]");
    links.forEach(function (a) {
      var href = "/console/agents/" + encodeURIComponent(agent) + a.getAttribute("data-page");
      a.setAttribute("href", href);
      var here = location.pathname === href || (a.getAttribute("data-page") && location.pathname.indexOf(href) === 0);
      if (here) { a.setAttribute("aria-current", "page"); } else { a.removeAttribute("aria-current"); }
    });
    document.querySelectorAll("#nav a[data-admin]").forEach(function (a) { a.hidden = !state.admin; });
    var pick = $("agent-pick");
    if (pick.value !== agent) { pick.value = agent; }
  }

  function signedOut(message) {
    sessionStorage.removeItem(KEY);
    $("nav").hidden = true; $("who").hidden = true; $("view").innerHTML = "";
    $("sign-in").hidden = false;
    $("sign-in-error").textContent = message || "";
    $("api-key").focus();
  }

  function signIn(key) {
    return fetch("/console/ui/whoami", { headers: { Authorization: "Bearer " + key } }).then(function (r) {
      if (r.status === 401) { throw new Error("That key is not valid (or it was revoked)."); }
      if (!r.ok) { throw new Error("The server answered " + r.status + "."); }
      return r.json();
    }).then(function (who) {
      sessionStorage.setItem(KEY, key);
      state = { csrf: who.csrf, agents: who.agents, admin: who.admin };
      var pick = $("agent-pick");
      pick.innerHTML = "";
      who.agents.forEach(function (agent) {
        var option = document.createElement("option");
        option.value = agent; option.textContent = agent;
        pick.appendChild(option);
      });
      $("who-name").textContent = who.name;
      $("sign-in").hidden = true; $("nav").hidden = false; $("who").hidden = false;
      load(location.pathname + location.search);
    });
  }

  function onSubmitSignIn(event) {
    event.preventDefault();
    var key = $("api-key").value.trim();
    $("api-key").value = "";
    signIn(key).catch(function (error) { signedOut(error.message); });
  }

  function errorText(xhr) {
    try {
      // The API's errors: {"error": "<kind>", "message": "..."} (FastAPI's own: {"detail": ...}).
      var body = JSON.parse(xhr.responseText);
      var error = typeof body.error === "object" && body.error !== null ? body.error : body;
      var detail = typeof error.detail === "string" ? error.detail : "";
      return (error.message || detail || xhr.statusText) + " (" + xhr.status + ")";
    } catch (e) {
      return "The server answered " + xhr.status + ".";
    }
  }

  function isConsoleLink(a) {
    var href = a.getAttribute("href");
    return href && href.indexOf("/console") === 0 && href.indexOf("/console/static/") !== 0 &&
      href.indexOf("/console/ui/") !== 0 && !a.hasAttribute("download") && !a.target;
  }

  function onClick(event) {
    var a = event.target.closest && event.target.closest("a");
    if (!a || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) { return; }
    if (!isConsoleLink(a)) { return; }
    event.preventDefault();
    navigate(a.getAttribute("href"));
  }

  function onSubmit(event) {
    var form = event.target;
    if (form.id === "sign-in-form") { onSubmitSignIn(event); return; }
    var base = form.getAttribute("data-nav");
    if (!base) { return; }
    event.preventDefault();
    var params = new URLSearchParams();
    new FormData(form).forEach(function (value, name) { if (value !== "") { params.append(name, value); } });
    var query = params.toString();
    navigate(base + (query ? "?" + query : ""));
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.addEventListener("click", onClick);
    document.addEventListener("submit", onSubmit);
    window.addEventListener("popstate", function () { load(location.pathname + location.search); });
    $("sign-out").addEventListener("click", function () { sessionStorage.clear(); signedOut(""); });
    $("agent-pick").addEventListener("change", function () {
      var agent = encodeURIComponent($("agent-pick").value);
      var m = location.pathname.match(/^\/console\/agents\/[^/]+(\/[a-z-]*)?/);
      var page = m && m[1] ? m[1] : "";
      sessionStorage.setItem(AGENT, $("agent-pick").value);
      navigate("/console/agents/" + agent + page);
    });
    document.body.addEventListener("htmx:configRequest", function (event) {
      var key = sessionStorage.getItem(KEY);
      if (key) { event.detail.headers.Authorization = "Bearer " + key; }
      event.detail.headers["X-CSRF-Token"] = state.csrf;
    });
    document.body.addEventListener("htmx:responseError", function (event) {
      var xhr = event.detail.xhr;
      if (xhr.status === 401) { signedOut("Your key is no longer accepted: sign in again."); return; }
      flash(errorText(xhr));
    });
    // htmx's settling copies the old attributes of an element onto the new one with the same id, "style"
    // included (a library may have set it through the CSSOM): copying it back as an attribute is an inline
    // style, which the CSP refuses. Nothing of the old page's styling is wanted on the new one.
    document.body.addEventListener("htmx:beforeSwap", function (event) {
      var target = event.detail.target;
      if (!target) { return; }
      target.querySelectorAll("[id][style]").forEach(function (element) { element.removeAttribute("style"); });
    });
    document.body.addEventListener("htmx:sendError", function () { flash("The server cannot be reached."); });
    document.body.addEventListener("htmx:afterSettle", function (event) {
      if (event.detail.target && event.detail.target.id === "view") {
        var h1 = document.querySelector("#view h1");
        document.title = (h1 ? h1.textContent + " · " : "") + "Reverie console";
      }
    });
    var key = sessionStorage.getItem(KEY);
    if (key) { signIn(key).catch(function (error) { signedOut(error.message); }); } else { signedOut(""); }
  });
}());
